#!/usr/bin/env python3
"""Checks that skopt_adapt.py walks the robot damaged as `yamor run
--damage` does: for each RUN_DIR=DAMAGE given, the first walk of that
run's evaluations.csv (its parameters and start seed) is walked again as a
job built by skopt_adapt.job() and the two velocities compared.

    python bench/adapt/validate_damage.py --out R.json --work DIR RUN_DIR=DAMAGE ...
"""
import argparse
import csv
import json
import pathlib
import sys

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import skopt_adapt  # noqa: E402
from skopt_adapt import qdlib  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--out", required=True)
    p.add_argument("--work", required=True)
    p.add_argument("runs", nargs="+")
    args = p.parse_args()
    problem = qdlib.Problem()
    checks = []
    with qdlib.Cluster(args.work, http=False) as cluster:
        cluster.sim_hosts(1)
        for item in args.runs:
            run_dir, damage = item.split("=", 1)
            with open(pathlib.Path(run_dir) / "evaluations.csv") as f:
                row = next(csv.DictReader(f))
            x = [float(row[n]) for n in problem.names]
            r = qdlib.evaluate(cluster.stub, [skopt_adapt.job(problem, x, int(row["start_seed"]), damage)],
                               "validate")[0]
            mine = None if r is None else r[0]
            want = float(row["velocity_m_s"])
            checks.append({"run": run_dir, "damage": damage, "yamor_m_s": want, "python_job_m_s": mine,
                           "identical": mine == want})
            print(f"{damage}: yamor run {want!r}, python job {mine!r}: "
                  f"{'identical' if mine == want else 'DIFFERENT'}", flush=True)
    pathlib.Path(args.out).write_text(json.dumps(checks, indent=1))


if __name__ == "__main__":
    main()
