#!/usr/bin/env python3
"""rank_good.py's gaits on rapier too: rapier and the slower engine against MuJoCo.

Reads OUT/results.json and OUT/export/gaits/*.xml of a finished
`rank_good.py --out OUT`, walks every gait with `yamor sim quadruped --gait G
--starts N --seconds S --engine rapier`, and prints per set the Spearman and
Kendall tau-b correlations of the gait means: rapier vs MuJoCo, default
engine vs rapier, and min(default, rapier) (the slower engine, what
`--worlds paired-slowest` values a candidate by) vs MuJoCo.

    YAMOR=/tmp/qd/yamor63 python bench/peers/rank_good_rapier.py --out OUT

Writes OUT/rapier.json. Not part of CI.
"""
import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau, spearmanr

START = re.compile(r"^start (\d+): ([-\d.]+) cm/s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--yamor", default=os.environ.get("YAMOR", "target/release/yamor"))
    args = parser.parse_args()
    out = Path(args.out)
    res = json.loads((out / "results.json").read_text())
    starts, seconds = res["args"]["starts"], res["args"]["seconds"]
    rapier = {}
    for name in res["walks"]:
        cmd = [args.yamor, "sim", "quadruped", "--gait", str(out / "export/gaits" / f"{name}.xml"),
               "--starts", str(starts), "--seconds", str(seconds), "--engine", "rapier", "--csv", os.devnull]
        text = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        v = [float(m.group(2)) / 100 for line in text.splitlines() if (m := START.match(line))]
        assert len(v) == starts, text
        rapier[name] = v
    summary = {}
    for r in res["results"]:
        names = r["gaits"]
        ours = np.array(r["ours_mean"])
        mj = np.array(r["mujoco_mean"])
        rap = np.array([np.mean(rapier[n]) for n in names])
        slow = np.minimum(ours, rap)
        pairs = {"default_vs_mujoco": (ours, mj), "rapier_vs_mujoco": (rap, mj),
                 "default_vs_rapier": (ours, rap), "slower_vs_mujoco": (slow, mj)}
        s = {k: {"spearman": float(spearmanr(a, b).statistic), "kendall": float(kendalltau(a, b).statistic)}
             for k, (a, b) in pairs.items()}
        s["rapier_range_cm_s"] = [100 * float(rap.min()), 100 * float(rap.max())]
        s["rapier_mean"] = rap.tolist()
        summary[r["set"]] = s
        print(r["set"], {k: (round(v["spearman"], 3), round(v["kendall"], 3)) for k, v in s.items()
                         if isinstance(v, dict)}, "rapier range", [round(x, 2) for x in s["rapier_range_cm_s"]])
    (out / "rapier.json").write_text(json.dumps({"rapier_walks": rapier, "summary": summary}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
