#!/usr/bin/env python3
"""Noisy BBOB (issue 31): yamor's default optimizer against pycma with its
noise handling, Nevergrad's noisy optimizers and scipy's Powell, judged on
the true (noise-free) value of the point each method finally recommends.
Not part of CI.

Problems: COCO's noiseless BBOB functions under the BBOB-noisy noise models
(bench/bbob/noise.py: Gaussian, uniform and Cauchy, moderate and severe, on
f - f_opt with the testbed's 1.01e-8 offset rule). `--subset testbed` (the
default) pairs them as the testbed's f101-f130 do: moderate noise on f1
sphere and f8 Rosenbrock, severe noise on f1, f8, f7 step ellipsoid, f10
ellipsoid, f14 different powers, f17 Schaffer F7, f19 Griewank-Rosenbrock
and f21 Gallagher (30 function x noise pairs); `--subset all` puts all six
models on the eight functions (48). Instances 1-3, budget 200*d (--mult),
start uniform in [-5, 5]^d seeded per (function, instance, dimension) as
in bench/bbob/run.py.

  yamor-cmaes     `cmaes` with the binary's default settings (since commit
            6752cac: noise_handling = none; the averaged-means recommendation
            still joins the re-walk), the reference of the comparison
            (--reference);
  yamor-cmaes-uh  the same with noise_handling = uh (UH-CMA-ES, the default
            before 6752cac).
            Both run through a real `yamor organizer` and Python hosts
            (bench/bbob/noisy_host.py: the noise of an evaluation is drawn
            from the job's start seed), StartRun over a bare space with
            held_out_candidates=5, held_out_starts=10 (--held-out 5x10). The
            re-walk is not counted in max_evaluations, so max_evaluations =
            200*d - (5 + 1) * 10: the re-walk walks the 5 best points and the
            optimizer's recommendation when it is not among them, each from
            10 held-out starts; the jobs of every run are counted, and the
            report says if any run used more than 200*d. Recommended point:
            the run's best_parameters (GetRun) once it has finished and its
            held_out figure is set. Every setting (defaults filled in) is
            kept with each result.
  pycma     cma.fmin2(f, x0, 2.5, {bounds [-5, 5], maxfevals 200*d, seed 1},
            noise_handler=cma.NoiseHandler) (no restarts, fmin2's default);
            recommendation es.result.xfavorite (the mean); xbest is kept too.
  nevergrad-ngopt  NGOpt with parametrization.function.deterministic = False
            (NGOpt39's noisy branch: a DiagonalCMA/PSO/GeneticDE portfolio,
            then OptimisticNoisyOnePlusOne); recommendation
            provide_recommendation().
  nevergrad-tbpsa  TBPSA (Nevergrad's optimizer for noisy continuous
            problems), the same parametrization and recommendation.
  scipy-powell  minimize(method="Powell", bounds, maxfev=200*d): res.x; when
            the budget stops a line search first, the point with the best
            observed value (where Powell's iterate stands).

Every evaluation counts, re-evaluations included; peers evaluate their own
noisy function in this process (same noise models, noise from a per-problem
seed). The judge is the noise-free precision f(x_rec) - f_opt.

    cargo build --release -p yamor
    bench/bbob/.venv/bin/python bench/bbob/noisy.py --subset all --cache /tmp/noisy-bbob.json \
        --out bench/bbob/noisy_ecdf.png

prints the tables (also written beside --out as .md) and the goal's verdict,
writes the ECDF of final precisions as --out, and the precisions as
<out>-precision.json. `--report-only` reports what --cache holds, e.g. for
`--subset testbed` or `--models gauss-sev,unif-sev,cauchy-sev` alone.
"""
import argparse
import concurrent.futures
import json
import math
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
import zlib

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "examples" / "python"))
sys.path.insert(0, str(HERE))
import noise  # noqa: E402

# yamor's variants: settings given to StartRun (none: the binary's defaults).
YAMOR_METHODS = {"yamor-cmaes": {}, "yamor-cmaes-uh": {"noise_handling": "uh"}}
YAMOR = "yamor-cmaes"  # the default reference; --reference chooses another
PEERS = ["pycma", "nevergrad-ngopt", "nevergrad-tbpsa", "scipy-powell"]
SHORT = {"yamor-cmaes": "yamor", "yamor-cmaes-uh": "yamor-uh", "pycma": "pycma", "nevergrad-ngopt": "ngopt",
         "nevergrad-tbpsa": "tbpsa", "scipy-powell": "powell"}
HELD_OUT_SEQ = 1 << 40  # organizer/src/model.rs: held-out walks' proposal numbers
FLOOR = 1e-8  # precisions below are reported as 1e-8 (the testbed's final target)


def start_point(f, i, d):
    """The same start as bench/bbob/run.py (whatever the noise model)."""
    rng = np.random.default_rng(zlib.crc32(f"{f}-{i}-{d}".encode()))
    return rng.uniform(-5, 5, d)


def key(method, f, model, i, d):
    return f"{method}|{f}|{model}|{i}|{d}"


# ------------------------------------------------------------------ peers


class Budget(Exception):
    pass


class Noisy:
    """A peer's noisy objective: counts evaluations, stops at the budget,
    remembers the point with the best observed value."""

    def __init__(self, method, f, model, i, d, budget):
        self.p, self.fopt = noise.problem(f, i, d), noise.f_opt(f, i, d)
        self.model, self.d, self.budget = model, d, budget
        self.rng = np.random.default_rng(zlib.crc32(key(method, f, model, i, d).encode()))
        self.n, self.best_value, self.best_x = 0, math.inf, None

    def __call__(self, x):
        if self.n >= self.budget:
            raise Budget()
        x = np.clip(np.asarray(x, float), -5, 5)
        v = noise.apply(self.model, max(0.0, float(self.p(x)) - self.fopt), self.d, self.rng)
        self.n += 1
        if v < self.best_value:
            self.best_value, self.best_x = v, x.copy()
        return v


def run_peer(method, f, model, i, d, budget):
    x0 = start_point(f, i, d)
    t = Noisy(method, f, model, i, d, budget)
    warnings.simplefilter("ignore")
    extra = {}
    started = time.time()
    if method == "scipy-powell":
        from scipy.optimize import minimize

        try:
            res = minimize(t, x0, method="Powell", bounds=[(-5, 5)] * d, options={"maxfev": budget})
            rec = res.x
        except Budget:
            rec, extra["cut"] = t.best_x, True
    elif method == "pycma":
        import cma

        holder = []
        opts = {"bounds": [-5, 5], "maxfevals": budget, "verbose": -9, "verb_log": 0, "seed": 1}
        try:
            _, es = cma.fmin2(t, x0, 2.5, opts, noise_handler=cma.NoiseHandler,
                              init_callback=holder.append)
            extra["stop"] = sorted(es.stop())
        except Budget:
            es = holder[-1]
            extra["cut"] = True
        rec = es.result.xfavorite
        if es.result.xbest is not None:
            extra["xbest"] = list(map(float, es.result.xbest))
    elif method.startswith("nevergrad"):
        import nevergrad as ng

        param = ng.p.Array(init=x0).set_bounds(-5, 5)
        param.function.deterministic = False
        param.random_state = np.random.RandomState(1)
        cls = ng.optimizers.NGOpt if method == "nevergrad-ngopt" else ng.optimizers.TBPSA
        opt = cls(parametrization=param, budget=budget)
        if method == "nevergrad-ngopt":
            extra["chosen"] = str(getattr(opt, "optim", opt))[:120]
        for _ in range(budget):
            cand = opt.ask()
            opt.tell(cand, t(cand.value))
        rec = opt.provide_recommendation().value
    else:
        raise ValueError(method)
    return {"x": list(map(float, np.clip(rec, -5, 5))), "evals": t.n,
            "seconds": time.time() - started, **extra}


# ------------------------------------------------------------------ yamor


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_hosts(api, grpc, stub, n, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            hosts = stub.ListHosts(api.organizer_pb2.ListHostsRequest()).hosts
            if sum(h.state == api.organizer_pb2.HOST_STATE_FREE for h in hosts) >= n:
                return
        except grpc.RpcError:
            pass
        time.sleep(0.2)
    sys.exit("the noisy BBOB hosts never registered")


def run_yamor(api, stub, method, f, model, i, d, budget, candidates, starts):
    pb = api.organizer_pb2
    x0 = start_point(f, i, d)
    max_evaluations = budget - (candidates + 1) * starts
    started = time.time()
    run = stub.StartRun(pb.StartRunRequest(
        name=f"{method}-{model}-f{f}-i{i}-d{d}", optimizer="cmaes", seed=1,
        settings=YAMOR_METHODS[method],
        space=pb.ParameterSpace(bounds=[
            pb.ParameterBound(name=f"x{k}", min=-5, max=5, start=float(x0[k])) for k in range(d)
        ]),
        max_evaluations=max_evaluations, objective=f"bbob-noisy/{model}/f{f}/i{i}/d{d}",
        held_out_candidates=candidates, held_out_starts=starts,
    ))
    for event in stub.WatchRun(pb.WatchRunRequest(run_id=run.id)):
        if event.run.state != pb.RUN_STATE_RUNNING:
            break
    r = stub.GetRun(pb.GetRunRequest(run_id=run.id))
    if r.state != pb.RUN_STATE_FINISHED or r.error:
        raise RuntimeError(f"run {run.id} f{f} {model} i{i} d{d}: state {r.state} {r.error}")
    if not r.HasField("held_out"):
        raise RuntimeError(f"run {run.id} f{f} {model} i{i} d{d}: finished without a held-out figure")
    by_name = {p.name: p.value for p in r.best_parameters}
    x = [by_name[f"x{k}"] for k in range(d)]
    jobs, after = [], 0
    while True:
        page = stub.ListJobs(pb.ListJobsRequest(run_id=run.id, after_id=after, limit=10000,
                                                brief=True)).jobs
        if not page:
            break
        jobs.extend(page)
        after = page[-1].id
    held = [j for j in jobs if j.proposal_index >= HELD_OUT_SEQ]
    finalists = {}
    for j in held:
        k = (j.proposal_index - HELD_OUT_SEQ) // starts
        finalists.setdefault(k, [p.value for p in j.request.job.parameters])
    return {
        "x": x, "evals": len(jobs), "optimizer_evals": len(jobs) - len(held),
        "held_out_evals": len(held), "held_out_mean": -r.held_out.mean,
        "finalists": [finalists[k] for k in sorted(finalists)],
        "failed": sum(j.state != api.organizer_pb2.JOB_STATE_DONE for j in jobs),
        "seconds": time.time() - started,
        "settings": dict(r.settings),  # every setting, defaults filled in
    }


def run_all_yamor(args, methods, problems, results, save):
    import grpc
    import yamor_grpc as api

    todo = [(m, p) for m in methods for p in problems if key(m, *p) not in results]
    if not todo:
        return
    candidates, starts = (int(v) for v in args.held_out.split("x"))
    tmp = tempfile.mkdtemp(prefix="yamor-noisy-bbob-")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    procs = [subprocess.Popen(
        [args.yamor, "organizer", "--listen", f"127.0.0.1:{port}", "--db", f"{tmp}/yamor.db",
         "--no-http"], stderr=open(f"{tmp}/organizer.log", "w"))]
    started = time.time()
    try:
        procs += [subprocess.Popen(
            [sys.executable, str(HERE / "noisy_host.py"), "--organizer", url,
             "--name", f"noisy-{k}"], stdout=subprocess.DEVNULL,
            stderr=open(f"{tmp}/host-{k}.log", "w"))
            for k in range(args.hosts)]
        stub = api.organizer_pb2_grpc.OrganizerStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
        wait_hosts(api, grpc, stub, args.hosts)
        with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
            futures = {pool.submit(run_yamor, api, stub, m, *p, args.mult * p[3], candidates,
                                   starts): (m, p) for m, p in todo}
            for n, fut in enumerate(concurrent.futures.as_completed(futures), 1):
                m, p = futures[fut]
                results[key(m, *p)] = fut.result()
                if n % 24 == 0:
                    save()
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            p.wait()
    save()
    print(f"{', '.join(methods)}: {time.time() - started:.0f} s ({len(todo)} runs; logs in {tmp})",
          file=sys.stderr)


# ------------------------------------------------------------------ report


def log_precision(v):
    return math.log10(max(v, FLOOR))


def report(args, methods, dims, problems, results):
    prec = {}
    for k, r in results.items():
        m, f, model, i, d = k.split("|")
        f, i, d = int(f), int(i), int(d)
        if (f, model, i, d) in problems and m in methods:
            prec[k] = noise.precision(f, i, d, r["x"])
    lines = []

    def out(s=""):
        lines.append(s)
        print(s)

    out(f"\nNoisy BBOB ({args.subset}: {len(noise.testbed_pairs(args.subset))} function x noise "
        f"pairs), instances {args.instances}, budget {args.mult}·d; precision = noise-free "
        f"f(x_rec) - f_opt, floored at 1e-8\n")
    ref = args.reference
    out(f"Reference (bold): {ref}, settings {reference_settings(results, ref, problems)}\n")
    verdict = {}
    for d in dims:
        ps = [p for p in problems if p[3] == d]
        ran = [m for m in methods if all(key(m, *p) in prec for p in ps)]
        out(f"### {d}-D ({len(ps)} problems)\n")
        out(f"| method | median log10 precision | ≤ 1e-8 | best (ties count) | better than {ref} "
            f"| worse than {ref} | max evaluations |")
        out("|---|---|---|---|---|---|---|")
        floored = {m: [max(prec[key(m, *p)], FLOOR) for p in ps] for m in ran}
        best = [min(floored[m][n] for m in ran) for n in range(len(ps))]
        for m in ran:
            logs = [math.log10(v) for v in floored[m]]
            med = statistics.median(logs)
            solved = sum(v <= FLOOR for v in floored[m])
            nbest = sum(floored[m][n] <= best[n] for n in range(len(ps)))
            evals = max(results[key(m, *p)]["evals"] for p in ps)
            if m == ref or ref not in ran:
                better = worse = "–"
            else:
                better = sum(floored[m][n] < floored[ref][n] for n in range(len(ps)))
                worse = sum(floored[m][n] > floored[ref][n] for n in range(len(ps)))
                ymed = statistics.median(math.log10(v) for v in floored[ref])
                if m in PEERS:
                    verdict[(d, m)] = (better, worse, med, ymed)
            name = f"**{m}**" if m == ref else m
            out(f"| {name} | {med:.2f} | {solved} | {nbest} | {better} | {worse} | {evals} |")
        for m in [m for m in methods if m not in ran]:
            n = sum(key(m, *p) in prec for p in ps)
            out(f"| {m} | – | – | – | – | – | not run ({n} of {len(ps)}) |")
        out()
    if verdict:
        out(f"Goal ({ref} recommends better points than every peer in every dimension; here: "
            "better on more problems than worse, and a lower median):\n")
        for (d, m), (better, worse, med, ymed) in sorted(verdict.items()):
            ok = worse > better and ymed < med
            out(f"- {d}-D vs {m}: {ref} better on {worse}, worse on {better}; median log10 "
                f"{ymed:.2f} vs {med:.2f}: {'met' if ok else 'NOT met'}")
        out()
    extras(args, methods, dims, problems, results, prec, out)
    summary = {"args": vars(args), "precision": prec}
    base = pathlib.Path(args.out)
    base.with_name(base.stem + "-precision.json").write_text(json.dumps(summary, indent=0))
    base.with_suffix(".md").write_text("\n".join(lines) + "\n")
    ecdf(args, methods, dims, problems, prec)


def reference_settings(results, ref, problems):
    seen = {json.dumps(results[key(ref, *p)].get("settings"), sort_keys=True)
            for p in problems if key(ref, *p) in results}
    return " / ".join(sorted(seen)) if seen else "–"


def extras(args, methods, dims, problems, results, prec, out):
    """Diagnostics: evaluations used, yamor's finalists, pycma's xbest, by noise model."""
    for ym in [m for m in methods if m in YAMOR_METHODS]:
        ys = [results[key(ym, *p)] for p in problems if key(ym, *p) in results]
        if not ys:
            continue
        over = [p for p in problems
                if key(ym, *p) in results and results[key(ym, *p)]["evals"] > args.mult * p[3]]
        out(f"{ym}: {len(ys)} runs, evaluations per run incl. the re-walk at most "
            f"{max(r['evals'] for r in ys)}; runs over {args.mult}·d: {len(over)}; held-out walks "
            f"{min(r['held_out_evals'] for r in ys)}–{max(r['held_out_evals'] for r in ys)}; "
            f"failed jobs {sum(r['failed'] for r in ys)}")
        # Would the re-walk have chosen better with the noise-free values?
        lost, with_rec, rec_best = 0, 0, 0
        for p in problems:
            r = results.get(key(ym, *p))
            if not r:
                continue
            vals = [max(noise.precision(p[0], p[2], p[3], x), FLOOR) for x in r["finalists"]]
            lost += max(prec[key(ym, *p)], FLOOR) > min(vals)
            if len(vals) > args_candidates(args):
                with_rec += 1
                rec_best += vals[-1] <= min(vals[:-1])
        out(f"{ym}: the re-walk's winner is not the truly best finalist in {lost} of {len(ys)} "
            f"runs; the optimizer's recommendation was an extra finalist in {with_rec} runs and "
            f"truly best of the finalists in {rec_best}")
    pyc = [(p, results[key("pycma", *p)]) for p in problems if key("pycma", *p) in results]
    if pyc and "pycma" in methods:
        xb = [max(noise.precision(p[0], p[2], p[3], r["xbest"]), FLOOR) for p, r in pyc if "xbest" in r]
        cut = sum(bool(r.get("cut")) for _, r in pyc)
        out(f"pycma: median log10 precision of xbest (not the recommendation) "
            f"{statistics.median(math.log10(v) for v in xb):.2f}; stopped by the budget in {cut} of "
            f"{len(pyc)} runs, by its own criteria in the rest")
    for d in dims:
        row = []
        for model in noise.MODELS:
            ps = [p for p in problems if p[3] == d and p[1] == model]
            if not ps:
                continue
            cells = []
            for m in methods:
                if all(key(m, *p) in prec for p in ps):
                    med = statistics.median(log_precision(prec[key(m, *p)]) for p in ps)
                    cells.append(f"{SHORT[m]} {med:.1f}")
            row.append(f"{model} ({len(ps)}): " + ", ".join(cells))
        out(f"{d}-D median log10 precision by noise model: " + "; ".join(row))


def args_candidates(args):
    return int(args.held_out.split("x")[0])


def ecdf(args, methods, dims, problems, prec):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(dims), figsize=(4.4 * len(dims), 3.9), sharey=True)
    axes = np.atleast_1d(axes)
    grid = np.logspace(-8, 6, 200)
    for ax, d in zip(axes, dims):
        ps = [p for p in problems if p[3] == d]
        for m in methods:
            if not all(key(m, *p) in prec for p in ps):
                continue
            v = np.array([max(prec[key(m, *p)], FLOOR) for p in ps])
            ax.step(grid, [(v <= g).mean() for g in grid], where="post",
                    lw=2.2 if m == args.reference else 1.3,
                    ls="-" if m in YAMOR_METHODS else "--", label=m)
        ax.set_xscale("log")
        ax.invert_xaxis()
        ax.set_title(f"{d}-D, {len(ps)} problems")
        ax.set_xlabel("noise-free precision f(x_rec) − f_opt")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("fraction of problems at least this precise")
    axes[0].legend(fontsize=7, loc="upper left")
    fig.suptitle(f"Noisy BBOB ({args.subset} pairs), instances {args.instances}, budget "
                 f"{args.mult}·d: recommended points")
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}", file=sys.stderr)


# ------------------------------------------------------------------ main


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", default="2,5,10")
    parser.add_argument("--instances", default="1,2,3")
    parser.add_argument("--subset", default="testbed", choices=["testbed", "all"])
    parser.add_argument("--models", help="only these noise models (comma-separated)")
    parser.add_argument("--functions", help="only these functions (comma-separated)")
    parser.add_argument("--mult", type=int, default=200, help="budget = mult * dimension")
    parser.add_argument("--held-out", default="5x10",
                        help="yamor's re-walk: finalists x starts (max_evaluations = "
                        "mult*d - (finalists + 1) * starts)")
    parser.add_argument("--hosts", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=12, help="yamor runs at once")
    parser.add_argument("--workers", type=int, default=2, help="peer processes")
    parser.add_argument("--methods", default=",".join([*YAMOR_METHODS, *PEERS]))
    parser.add_argument("--reference", default=YAMOR,
                        help="the yamor variant the others are compared with")
    parser.add_argument("--yamor", default=str(ROOT / "target" / "release" / "yamor"))
    parser.add_argument("--out", default=str(HERE / "noisy_ecdf.png"),
                        help="the ECDF PNG; the table goes beside it as .md, the precisions as "
                        "-precision.json")
    parser.add_argument("--cache", help="keep every result in this JSON file and reuse it")
    parser.add_argument("--report-only", action="store_true")
    args = parser.parse_args()
    base = pathlib.Path(args.out)
    if args.cache and pathlib.Path(args.cache).resolve() in (
            base.with_suffix(".md").resolve(), base.with_name(base.stem + "-precision.json").resolve()):
        sys.exit("--cache is a file the report writes: choose another")
    dims = [int(v) for v in args.dims.split(",")]
    instances = [int(v) for v in args.instances.split(",")]
    methods = args.methods.split(",")
    pairs = noise.testbed_pairs(args.subset)
    if args.models:
        pairs = [(f, m) for f, m in pairs if m in args.models.split(",")]
    if args.functions:
        pairs = [(f, m) for f, m in pairs if str(f) in args.functions.split(",")]
    problems = [(f, model, i, d) for d in dims for f, model in pairs for i in instances]
    results = {}
    if args.cache and os.path.exists(args.cache):
        results = json.load(open(args.cache))

    def save():
        if args.cache:
            tmp = args.cache + ".tmp"
            with open(tmp, "w") as fh:
                json.dump(results, fh)
            os.replace(tmp, args.cache)

    if not args.report_only:
        run_all_yamor(args, [m for m in methods if m in YAMOR_METHODS], problems, results, save)
        for method in [m for m in methods if m in PEERS]:
            todo = [p for p in problems if key(method, *p) not in results]
            if not todo:
                continue
            started = time.time()
            with concurrent.futures.ProcessPoolExecutor(args.workers) as pool:
                futures = {pool.submit(run_peer, method, *p, args.mult * p[3]): p for p in todo}
                for n, fut in enumerate(concurrent.futures.as_completed(futures), 1):
                    results[key(method, *futures[fut])] = fut.result()
                    if n % 24 == 0:
                        save()
            save()
            print(f"{method}: {time.time() - started:.0f} s ({len(todo)} problems)", file=sys.stderr)
    report(args, methods, dims, problems, results)


if __name__ == "__main__":
    main()
