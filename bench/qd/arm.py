#!/usr/bin/env python3
"""Part 2: MAP-Elites on pyribs' planar arm (10 joints), yamor against pyribs.

    python3 bench/qd/arm.py --seeds 1-5 --budget 10000 --work /tmp/qd/work

One organizer and two Python hosts (bench/qd/arm_host.py, objective
`qd/arm10`) serve every run, one run at a time. The space is 10 angles
x0..x9 in [-pi, pi], start 0 (the arm stretched out); the map is
x:-10:10:100,y:-10:10:100 (100 x 100 cells over the hand's reach).
  yamor-cma-me    yamor optimize start --param xK=-pi:pi:0 (K = 0..9)
                  --objective qd/arm10 --optimizer map-elites
                  --set descriptors=x:-10:10:100,y:-10:10:100 (defaults:
                  cma-me, 5 emitters, batch 12, sigma 0.1 in the unit box)
  yamor-iso-line  the same with --set emitter=iso-line
  pyribs-cma-me   5 EvolutionStrategyEmitter(2imp, filter, no_improvement,
                  sigma0=0.1, batch 12) in the unit box [0,1]^10, x0 = 0.5
  pyribs-iso-line 5 IsoLineEmitter(iso_sigma=0.1, line_sigma=0.2, batch 12)
pyribs' solutions u are sent as angles -pi + 2 pi u. The last partial
batch (10,000 = 166 x 60 + 40) is evaluated and added to pyribs' archive
with archive.add, not told to the scheduler (it needs whole batches).
QD score offset: -pi^2 (the largest variance of angles in [-pi, pi]), so
QD = sum over elites of (objective + pi^2).
"""
import argparse
import json
import math
import pathlib
import sys
import time

import numpy as np

import qdlib
from quad import seeds_of

METHODS = ["yamor-cma-me", "yamor-iso-line", "pyribs-cma-me", "pyribs-iso-line"]
GRID = "x:-10:10:100,y:-10:10:100"
OBJECTIVE = "qd/arm10"
DOF = 10
OFFSET = -math.pi ** 2


def qd(fits):
    return float(sum(f - OFFSET for f in fits))


def run_yamor(cluster, method, seed, budget, grid):
    args = []
    for k in range(DOF):
        args += ["--param", f"x{k}={-math.pi!r}:{math.pi!r}:0"]
    args += ["--objective", OBJECTIVE, "--optimizer", "map-elites", "--budget", str(budget),
             "--seed", str(seed), "--set", f"descriptors={GRID}", "--name", f"arm-{method}-s{seed}"]
    if method == "yamor-iso-line":
        args += ["--set", "emitter=iso-line"]
    started = time.time()
    run_id, cmd = cluster.yamor_optimize(args)
    run = cluster.wait_run(run_id)
    wall = time.time() - started
    m = cluster.map_json(run_id)
    jobs = [j for j in cluster.run_jobs(run_id) if j.proposal_index < budget]
    ok = [j for j in jobs if j.state == qdlib.api.organizer_pb2.JOB_STATE_DONE
          and j.HasField("result") and j.result.WhichOneof("kind") == "value"]
    rebuilt = grid.archive([(j.result.value.value,
                             qdlib.describe(j.result.value.descriptors, grid.names)) for j in ok])
    fits = [c["fitness"] for c in m["cells"]]
    return {
        "method": method, "seed": seed, "budget": budget,
        "command": " ".join(["yamor", "optimize", "start"] + args + ["--organizer", "URL"]),
        "run_id": run_id, "evaluations": run.evaluations, "jobs_in_budget": len(jobs),
        "failed": len(jobs) - len(ok), "wall_s": wall,
        "qd_score": qd(fits), "qd_offset": OFFSET, "coverage": len(fits) / grid.cells,
        "cells": len(fits), "map_json_qd_score_offset0": m["qd_score"],
        "map_json_coverage": m["coverage"],
        "qd_score_rebuilt_from_jobs": qd(rebuilt.values()),
        "cells_rebuilt_from_jobs": len(rebuilt),
    }


def run_pyribs(cluster, method, seed, budget, grid):
    x0 = np.full(DOF, 0.5)  # angle 0
    archive, scheduler = qdlib.pyribs_scheduler(method, DOF, grid, x0, seed)
    used, failed, walks = 0, 0, []
    started = time.time()
    while used < budget:
        sols = scheduler.ask()
        last = len(sols) > budget - used
        sols = sols[: budget - used]
        angles = [[-math.pi + 2 * math.pi * min(max(float(v), 0.0), 1.0) for v in u] for u in sols]
        results = qdlib.evaluate(cluster.stub, [qdlib.value_job(OBJECTIVE, a) for a in angles],
                                 f"{method}-s{seed}")
        obj, meas = [], []
        for r in results:
            if r is None:
                failed += 1  # lowest objective at the corner; dropped from scores
                obj.append(-1e9)
                meas.append([a[1] for a in grid.axes])
            else:
                obj.append(r[0])
                meas.append(qdlib.describe(r[1], grid.names))
                walks.append((r[0], meas[-1]))
        if last:
            archive.add(np.asarray(sols), np.array(obj), np.array(meas))
        else:
            scheduler.tell(np.array(obj), np.array(meas))
        used += len(sols)
    wall = time.time() - started
    fit = np.asarray(archive.data()["objective"])
    fit = fit[fit > -1e8]
    rebuilt = grid.archive(walks)
    return {
        "method": method, "seed": seed, "budget": budget, "evaluations": used,
        "failed": failed, "wall_s": wall,
        "qd_score": qd(fit), "qd_offset": OFFSET, "coverage": len(fit) / grid.cells,
        "cells": int(len(fit)),
        "qd_score_rebuilt_from_evaluations": qd(rebuilt.values()),
        "cells_rebuilt_from_evaluations": len(rebuilt),
        "command": f"python3 bench/qd/arm.py --methods {method} --seeds {seed} --budget {budget}",
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="1-5")
    p.add_argument("--budget", type=int, default=10000)
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--hosts", type=int, default=2)
    p.add_argument("--work", default="/tmp/qd/work")
    p.add_argument("--results", default=str(pathlib.Path(__file__).parent / "results"))
    args = p.parse_args()
    results = pathlib.Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    grid = qdlib.Grid(GRID)
    todo = [(m, s) for s in seeds_of(args.seeds) for m in args.methods.split(",")
            if not (results / f"arm-{m}-s{s}.json").exists()]
    if not todo:
        return
    with qdlib.Cluster(pathlib.Path(args.work) / "arm") as cluster:
        for k in range(args.hosts):
            cluster.start([sys.executable, str(pathlib.Path(__file__).parent / "arm_host.py"),
                           "--organizer", cluster.url, "--name", f"arm-{k}"], f"arm-host{k}")
        cluster.wait_hosts(args.hosts)
        for method, seed in todo:
            if method.startswith("yamor"):
                r = run_yamor(cluster, method, seed, args.budget, grid)
            else:
                r = run_pyribs(cluster, method, seed, args.budget, grid)
            (results / f"arm-{method}-s{seed}.json").write_text(json.dumps(r, indent=1))
            print(f"{method} seed {seed}: QD {r['qd_score']:.1f} (offset -pi^2), coverage "
                  f"{r['coverage']:.4f}, {r['wall_s']:.0f} s", flush=True)


if __name__ == "__main__":
    main()
