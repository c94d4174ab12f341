#!/usr/bin/env python3
"""Validates the Python side of the quadruped benchmark against yamor itself.

1. `yamor run quadruped --optimizer map-elites --budget 24 --held-out 0`
   (all-in-one) records 24 walks: parameters, start seed, velocity.
2. For each job of that run: the gait XML qdlib.Problem.gait_xml merges for
   its parameters must equal, byte for byte, the gait_xml yamor sent; its
   seed must equal qdlib.candidate_seed(run seed, proposal index); its spec
   must be 8 s warm-up, 12 s measured, 0.5 s samples, nominal world.
3. Every one of the 24 rows is walked again through an organizer with two
   `yamor host --sim quadruped` hosts, as the pyribs driver submits jobs:
   velocity (and descriptors) must be bit-identical to yamor's.
Writes OUT/validation.json; exits 1 on any mismatch.
"""
import csv
import json
import pathlib
import sqlite3
import subprocess
import sys

import qdlib


def main():
    out = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "/tmp/qd/validate")
    out.mkdir(parents=True, exist_ok=True)
    run_dir = out / "run24"
    cmd = [qdlib.YAMOR, "run", "quadruped", "--optimizer", "map-elites", "--budget", "24",
           "--seed", "1", "--held-out", "0", "--hosts", "2", "--out", str(run_dir),
           "--db", str(out / "run24.db")]
    subprocess.run(cmd, check=True, capture_output=True)
    problem = qdlib.Problem()
    rows = list(csv.DictReader(open(run_dir / "evaluations.csv")))
    db = sqlite3.connect(out / "run24.db")
    jobs = db.execute("select seq, parameters, spec, gait_xml, outcome from jobs "
                      "where gait_xml is not null order by seq").fetchall()
    problems = []
    xml_ok = seed_ok = spec_ok = 0
    by_seed = {}
    for seq, params, spec, gait_xml, outcome in jobs:
        x = [v for _, v in json.loads(params)]
        spec = json.loads(spec)
        xml_ok += problem.gait_xml(x) == gait_xml
        seed_ok += spec["seed"] == qdlib.candidate_seed(1, seq)
        world = spec["world"]
        spec_ok += (spec["warmup"] == 8.0 and spec["measure"] == 12.0
                    and spec["sample_interval"] == 0.5 and spec["repeats"] == 1
                    and world["engine"] is None and world["mass_scale"] == 1.0
                    and spec["ground_friction"] is None and spec["early_stop"] is None)
        by_seed[spec["seed"]] = json.loads(outcome)
    if xml_ok != len(jobs) or seed_ok != len(jobs) or spec_ok != len(jobs):
        problems.append(f"xml {xml_ok}, seed {seed_ok}, spec {spec_ok} of {len(jobs)} jobs agree")

    walked = []
    with qdlib.Cluster(out / "cluster", http=False) as cluster:
        cluster.sim_hosts(2)
        requests = []
        for row in rows:
            x = [float(row[n]) for n in problem.names]
            requests.append(qdlib.walk_job(problem, x, int(row["start_seed"])))
        results = qdlib.evaluate(cluster.stub, requests, "validate")
    same = 0
    for row, res in zip(rows, results):
        theirs = float(row["velocity_m_s"])
        mine = None if res is None else res[0]
        desc_same = res is not None and res[1] == by_seed[int(row["start_seed"])]["descriptors"]
        ok = mine is not None and mine.hex() == theirs.hex() and desc_same
        same += ok
        walked.append({"evaluation": int(row["evaluation"]), "start_seed": int(row["start_seed"]),
                       "yamor_velocity": theirs, "python_velocity": mine,
                       "bit_identical": ok, "descriptors_identical": desc_same})
    if same != len(rows):
        problems.append(f"{len(rows) - same} of {len(rows)} re-walks differ")
    report = {"command": " ".join(["yamor"] + cmd[1:]), "yamor": qdlib.YAMOR, "jobs_checked": len(jobs), "xml_identical": xml_ok,
              "seed_identical": seed_ok, "spec_identical": spec_ok,
              "rewalked": len(rows), "velocity_bit_identical": same, "walks": walked,
              "problems": problems}
    (out / "validation.json").write_text(json.dumps(report, indent=1))
    print(f"merge validation: {xml_ok}/{len(jobs)} gait XML byte-identical, "
          f"{seed_ok}/{len(jobs)} seeds, {spec_ok}/{len(jobs)} specs; "
          f"{same}/{len(rows)} re-walks bit-identical in velocity and descriptors")
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
