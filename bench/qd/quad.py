#!/usr/bin/env python3
"""Part 1: MAP-Elites on the simulated quadruped, yamor against pyribs.

    python3 bench/qd/quad.py --seeds 1-5 --budget 3000 --work /tmp/qd/work

One organizer (gRPC and dashboard on free loopback ports) and two
`yamor host --sim quadruped` hosts serve every run, one run at a time:
  yamor-cma-me    yamor optimize start --optimizer map-elites (defaults:
                  cma-me, 5 emitters, batch 12, sigma 0.1 in the unit box)
  yamor-iso-line  the same with --set emitter=iso-line (sigma 0.1, line 0.2)
  pyribs-cma-me   5 EvolutionStrategyEmitter(ranker="2imp", selection_rule=
                  "filter", restart_rule="no_improvement", sigma0=0.1,
                  batch_size=12, bounds=[(0,1)]*7), x0 = the gait's values
  pyribs-iso-line 5 IsoLineEmitter(iso_sigma=0.1, line_sigma=0.2,
                  batch_size=12, x0 = the gait), bounds [(0,1)]*7
pyribs searches the unit box; a solution u is walked at yamor's
`point(u)` (phases wrapped, others clamped), with the job yamor's run would
send (qdlib.walk_job: merged gait, 8 s + 12 s, the proposal's fresh start
candidate_seed(seed, proposal index)). Every archive is over the budget's
walks only (yamor's held-out re-walks are switched off: --held-out 0).
Each run writes RESULTS/quad-METHOD-sSEED.json; existing files are kept.
"""
import argparse
import json
import pathlib
import time

import numpy as np

import qdlib

METHODS = ["yamor-cma-me", "yamor-iso-line", "pyribs-cma-me", "pyribs-iso-line"]


def run_yamor(cluster, method, seed, budget, grid):
    args = ["--robot", "quadruped", "--optimizer", "map-elites", "--budget", str(budget),
            "--seed", str(seed), "--held-out", "0", "--name", f"{method}-s{seed}"]
    if method == "yamor-iso-line":
        args += ["--set", "emitter=iso-line"]
    started = time.time()
    run_id, cmd = cluster.yamor_optimize(args)
    run = cluster.wait_run(run_id)
    wall = time.time() - started
    m = cluster.map_json(run_id)
    jobs = cluster.run_jobs(run_id)
    walks = [j for j in jobs if j.proposal_index < budget]
    ok = [j for j in walks if j.state == qdlib.api.organizer_pb2.JOB_STATE_DONE
          and j.HasField("result") and j.result.WhichOneof("kind") == "walk"]
    rebuilt = grid.archive([(j.result.walk.velocity_m_s,
                             qdlib.describe(j.result.walk.descriptors, grid.names)) for j in ok])
    cells_sum = sum(c["fitness"] for c in m["cells"])
    return {
        "method": method, "seed": seed, "budget": budget,
        "command": " ".join(["yamor", "optimize", "start"] + args + ["--organizer", "URL"]),
        "run_id": run_id, "evaluations": run.evaluations, "jobs_in_budget": len(walks),
        "failed": len(walks) - len(ok), "wall_s": wall,
        "qd_score": m["qd_score"], "coverage": m["coverage"], "cells": len(m["cells"]),
        "map_json_results": m.get("results"),
        "qd_score_recomputed_from_map_cells": cells_sum,
        "qd_score_rebuilt_from_jobs": sum(rebuilt.values()),
        "cells_rebuilt_from_jobs": len(rebuilt),
    }


def run_pyribs(cluster, method, seed, budget, grid, problem):
    dim = len(problem.names)
    x0 = problem.x_to_unit(problem.start)
    archive, scheduler = qdlib.pyribs_scheduler(method, dim, grid, x0, seed)
    used, failed, walks = 0, 0, []
    started = time.time()
    while used < budget:
        sols = scheduler.ask()
        sols = sols[: budget - used]  # 3000 = 50 batches of 60: never cut
        xs = [problem.unit_to_x(u) for u in sols]
        requests = [qdlib.walk_job(problem, x, qdlib.candidate_seed(seed, used + i))
                    for i, x in enumerate(xs)]
        results = qdlib.evaluate(cluster.stub, requests, f"{method}-s{seed}")
        obj, meas = [], []
        for r in results:
            if r is None or any(n not in r[1] for n in grid.names):
                # A failed walk: the lowest objective at the grid's corner;
                # dropped from the scores below (velocities are >= 0).
                failed += 1
                obj.append(-1.0)
                meas.append([a[1] for a in grid.axes])
            else:
                obj.append(r[0])
                meas.append(qdlib.describe(r[1], grid.names))
                walks.append((r[0], meas[-1]))
        scheduler.tell(np.array(obj), np.array(meas))
        used += len(sols)
    wall = time.time() - started
    data = archive.data()
    fit = np.asarray(data["objective"])
    fit = fit[fit >= 0]
    rebuilt = grid.archive(walks)
    return {
        "method": method, "seed": seed, "budget": budget, "evaluations": used,
        "failed": failed, "wall_s": wall,
        "qd_score": float(fit.sum()), "coverage": len(fit) / grid.cells, "cells": int(len(fit)),
        "qd_score_rebuilt_from_walks": sum(rebuilt.values()),
        "cells_rebuilt_from_walks": len(rebuilt),
        "command": f"python3 bench/qd/quad.py --methods {method} --seeds {seed} --budget {budget}",
    }


def seeds_of(text):
    if "-" in text:
        a, b = text.split("-")
        return list(range(int(a), int(b) + 1))
    return [int(v) for v in text.split(",")]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--seeds", default="1-5")
    p.add_argument("--budget", type=int, default=3000)
    p.add_argument("--methods", default=",".join(METHODS))
    p.add_argument("--work", default="/tmp/qd/work")
    p.add_argument("--results", default=str(pathlib.Path(__file__).parent / "results"))
    args = p.parse_args()
    results = pathlib.Path(args.results)
    results.mkdir(parents=True, exist_ok=True)
    grid = qdlib.Grid(qdlib.DEFAULT_GRID)
    problem = qdlib.Problem()
    todo = [(m, s) for s in seeds_of(args.seeds) for m in args.methods.split(",")
            if not (results / f"quad-{m}-s{s}.json").exists()]
    if not todo:
        return
    with qdlib.Cluster(pathlib.Path(args.work) / "quad") as cluster:
        cluster.sim_hosts(2)
        for method, seed in todo:
            if method.startswith("yamor"):
                r = run_yamor(cluster, method, seed, args.budget, grid)
            else:
                r = run_pyribs(cluster, method, seed, args.budget, grid, problem)
            (results / f"quad-{method}-s{seed}.json").write_text(json.dumps(r, indent=1))
            print(f"{method} seed {seed}: QD {r['qd_score']:.4f} m/s, coverage "
                  f"{r['coverage']:.4f}, {r['wall_s']:.0f} s", flush=True)


if __name__ == "__main__":
    main()
