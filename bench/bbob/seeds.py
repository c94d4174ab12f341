#!/usr/bin/env python3
"""The seed spread of yamor's CMA-ES and pycma on BBOB (issue 14): one
optimizer seed moves the solved counts of bench/bbob/run.py by several
problems, so this runs both over many seeds. A development tool beside
run.py: yamor's cmaes is driven through experiments/examples/ask_tell_stdio
(no cluster, same plugin code), pycma as run.py runs it; same functions
f1-f24, start points (uniform in [-5, 5]^d, seeded per problem) and budget
(mult*d). Each run writes RESULTS/<label>_s<seed>.json,
{"f|i|d": [best f - fopt, evals to 1e-3, evals to 1e-8]}.

    cargo build --release -p yamor-experiments --example ask_tell_stdio
    for s in $(seq 1 10); do
      bench/bbob/.venv/bin/python bench/bbob/seeds.py --method yamor --label yamor_46 --instances 4,5,6 --seed $s
      bench/bbob/.venv/bin/python bench/bbob/seeds.py --method pycma --label pycma_46 --instances 4,5,6 --seed $s
    done
    bench/bbob/.venv/bin/python bench/bbob/seeds.py --summary yamor_46 pycma_46 --seeds 1-10
"""
import argparse
import json
import math
import multiprocessing as mp
import os
import subprocess
import sys
import warnings

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import Budget, Traced, f_opt, problem, start_point  # noqa: E402  (run.py's problems and starts)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.environ.get("YAMOR_STDIO", os.path.join(ROOT, "target/release/examples/ask_tell_stdio"))
RESULTS = os.environ.get("YAMOR_SEEDS_RESULTS", "/tmp/yamor-bbob-seeds")
FOPT_CACHE = os.path.join(RESULTS, "fopt.json")


def summarize(values, fopt):
    best, e3, e8 = math.inf, None, None
    for n, v in enumerate(values, 1):
        best = min(best, v)
        if e3 is None and best <= fopt + 1e-3:
            e3 = n
        if e8 is None and best <= fopt + 1e-8:
            e8 = n
    return [best - fopt, e3, e8]


def run_one(job):
    method, settings, f, i, d, mult, fopt, seed = job
    p = problem(f, i, d)
    x0 = start_point(f, i, d)
    budget = mult * d
    t = Traced(p, budget)
    warnings.simplefilter("ignore")
    if method == "pycma":
        import cma

        opts = {"bounds": [-5, 5], "maxfevals": budget, "verbose": -9, "seed": seed}
        try:
            cma.fmin2(t, x0, float(os.environ.get("PSIG", "2.5")), opts, restarts=9, incpopsize=2)
        except Budget:
            pass
    elif method == "pycma-lq":
        import cma

        opts = {"bounds": [-5, 5], "maxfevals": budget, "verbose": -9, "seed": seed}
        try:
            cma.fmin_lq_surr2(t, x0, 2.5, opts, restarts=9, incpopsize=2)
        except Budget:
            pass
    else:
        proc = subprocess.Popen([BIN], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        header = {"optimizer": "cmaes", "settings": settings, "bounds": [[-5, 5]] * d,
                  "start": list(map(float, x0)), "seed": seed, "budget": budget}
        proc.stdin.write(json.dumps(header) + "\n")
        proc.stdin.flush()
        while True:
            line = proc.stdout.readline()
            if not line:
                raise RuntimeError(f"driver died f{f} i{i} d{d}")
            msg = json.loads(line)
            if "ask" in msg:
                vals = [-t(np.array(x)) for x in msg["ask"]]
                proc.stdin.write(json.dumps(vals) + "\n")
                proc.stdin.flush()
            else:
                break
        proc.wait()
    return (f"{f}|{i}|{d}", summarize(t.values, fopt))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--summary", nargs="+", metavar="LABEL",
                    help="print mean solved counts over --seeds for these labels, run nothing")
    ap.add_argument("--seeds", default="1-10")
    ap.add_argument("--method", default="yamor")
    ap.add_argument("--label")
    ap.add_argument("--instances", default="4,5,6")
    ap.add_argument("--dims", default="2,5,10,20")
    ap.add_argument("--functions", default="1-24")
    ap.add_argument("--mult", type=int, default=200)
    ap.add_argument("--settings", default="{}")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    a = ap.parse_args()
    os.makedirs(RESULTS, exist_ok=True)
    if a.summary:
        summary(a.summary, a.seeds)
        return
    lo, hi = map(int, a.functions.split("-"))
    probs = [(f, i, d) for d in map(int, a.dims.split(",")) for f in range(lo, hi + 1)
             for i in map(int, a.instances.split(","))]
    fo = json.load(open(FOPT_CACHE)) if os.path.exists(FOPT_CACHE) else {}
    for f, i, d in probs:
        k = f"{f}|{i}|{d}"
        if k not in fo:
            fo[k] = f_opt(problem(f, i, d))
    tmp = f"{FOPT_CACHE}.{os.getpid()}"
    json.dump(fo, open(tmp, "w"))
    os.replace(tmp, FOPT_CACHE)  # atomic: drivers may run side by side
    settings = json.loads(a.settings)
    jobs = [(a.method, settings, f, i, d, a.mult, fo[f"{f}|{i}|{d}"], a.seed) for f, i, d in probs]
    with mp.Pool(a.jobs) as pool:
        res = dict(pool.imap_unordered(run_one, jobs))
    out = os.path.join(RESULTS, f"{a.label}_s{a.seed}.json")
    json.dump(res, open(out, "w"))
    dims = sorted({d for _, _, d in probs})
    line = []
    for d in dims:
        s3 = sum(1 for k, v in res.items() if int(k.split("|")[2]) == d and v[1] is not None)
        s8 = sum(1 for k, v in res.items() if int(k.split("|")[2]) == d and v[2] is not None)
        line.append(f"{d}D {s3}/{s8}")
    print(a.label, " ".join(line))


def summary(labels, seeds):
    """Mean (and range of) problems solved to 1e-3 and 1e-8 per dimension."""
    lo, hi = map(int, seeds.split("-"))
    for label in labels:
        runs = []
        for s in range(lo, hi + 1):
            path = os.path.join(RESULTS, f"{label}_s{s}.json")
            if os.path.exists(path):
                runs.append(json.load(open(path)))
        if not runs:
            print(f"{label}: no results in {RESULTS}")
            continue
        dims = sorted({int(k.split("|")[2]) for k in runs[0]})
        cells = []
        for d in dims:
            c3 = [sum(v[1] is not None for k, v in r.items() if int(k.split("|")[2]) == d) for r in runs]
            c8 = [sum(v[2] is not None for k, v in r.items() if int(k.split("|")[2]) == d) for r in runs]
            cells.append(f"{d}-D {sum(c3) / len(c3):.1f} ({min(c3)}-{max(c3)}) / {sum(c8) / len(c8):.1f}")
        print(f"{label} ({len(runs)} seeds): " + ", ".join(cells))


if __name__ == "__main__":
    main()
