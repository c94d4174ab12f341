#!/usr/bin/env python3
"""Every elite of a map walked on every damaged robot: the table offline
replays of an adaptation are drawn from (plugins/ite/examples/replay.rs).

    python bench/adapt/truth.py --map MAP.json --damage stuck:5 --damage none \
        --starts 3 --out truth.json --work DIR

Each elite is walked from `--starts` starts (seeds 3·2^40 + k: neither a
run's proposals nor its held-out starts) with the job a `yamor run
--damage D` sends (skopt_adapt.py's apply_damage). One organizer and
`--hosts` simulation hosts, started here and stopped on exit.

The figures a bench reports come from real `yamor run`s with held-out
starts; this table is for choosing settings without spending a cluster
hour per choice, and for the map's ceiling on each damaged robot (its best
elite there), which bounds what any adaptation over the map can reach.
"""
import argparse
import json
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[0] / "qd"))
sys.path.insert(0, str(HERE))
import qdlib  # noqa: E402
from skopt_adapt import job  # noqa: E402

TRUTH_FIRST_SEED = 3 << 40


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--map", required=True, help="map.json of a map-elites run")
    p.add_argument("--damage", action="append", required=True)
    p.add_argument("--starts", type=int, default=3)
    p.add_argument("--hosts", type=int, default=2)
    p.add_argument("--out", required=True)
    p.add_argument("--work", required=True)
    args = p.parse_args()

    doc = json.loads(pathlib.Path(args.map).read_text())
    problem = qdlib.Problem()
    cells = doc["cells"]
    for c in cells:
        names = [q["name"] for q in c["parameters"]]
        if names != problem.names:
            raise SystemExit(f"cell {c['cell']} searched {names}, the quadruped's problem {problem.names}")
    out = {"map": str(args.map), "run": doc["run"], "starts": args.starts,
           "first_seed": TRUTH_FIRST_SEED, "damages": {}}
    with qdlib.Cluster(args.work, http=False) as cluster:
        cluster.sim_hosts(args.hosts)
        for damage in args.damage:
            started = time.time()
            requests = [job(problem, [q["value"] for q in c["parameters"]], TRUTH_FIRST_SEED + k, damage)
                        for c in cells for k in range(args.starts)]
            results = qdlib.evaluate(cluster.stub, requests, f"truth-{damage}")
            walks = {}
            for i, c in enumerate(cells):
                rs = results[i * args.starts:(i + 1) * args.starts]
                walks[str(c["cell"])] = [r[0] if r is not None else None for r in rs]
            out["damages"][damage] = walks
            best = max((sum(v for v in w if v is not None) / len(w), cell) for cell, w in walks.items())
            print(f"{damage}: {len(requests)} walks in {time.time() - started:.0f} s; "
                  f"best elite {best[1]} {best[0] * 100:.2f} cm/s", flush=True)
            pathlib.Path(args.out).write_text(json.dumps(out))


if __name__ == "__main__":
    main()
