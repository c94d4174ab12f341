#!/usr/bin/env python3
"""Learnt gaits (best_gait.xml files) on articulated, rapier and MuJoCo.

For each NAME=PATH/best_gait.xml given:

1. reads the seven free parameters of examples/robots/quadruped/optimize.xml
   off the gait XML (module 0's amplitude, module 5's amplitude and offset,
   the cpglinks 0->5, 0->1, 1->2, 2->3) and writes them to OUT/gaits.csv;
2. runs `yamor bench-engines --params OUT/gaits.csv --config optimize.xml`
   (as rank_good.py does), which rebuilds each gait's XML, walks it on the
   default engine from the first --starts held-out starts and exports the
   servo controls of every walk and the MuJoCo model; checks the rebuilt
   XML's modules equal the given file's;
3. walks each given XML with `yamor sim quadruped --gait G --starts N
   --seconds S --engine E` for E = articulated, rapier (and checks
   articulated equals bench-engines' walks start by start);
4. walks the exported controls in MuJoCo (engines.py's Walker);
5. prints mean ± se per gait and engine, and each engine's figure as % of
   that engine's best gait.

    YAMOR=/tmp/qd/yamor63 python bench/peers/held_out_gaits.py --out DIR \\
        single-1=/tmp/yamor-transfer-quadruped/single-1/best_gait.xml ...

Writes OUT/report.md and OUT/results.json. Not part of CI.
"""
import argparse
import json
import math
import os
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engines import Walker, load_controls  # noqa: E402
from rank_good import export_walks, free_parameters  # noqa: E402


def modules(path):
    root = ET.parse(path).getroot()
    out = {}
    for m in root.iter("module"):
        links = {l.get("to"): float(l.get("phase")) for l in m.iter("cpglink")}
        out[m.get("id")] = (dict((k, float(v)) for k, v in m.attrib.items() if k != "id"), links)
    return out


def params_of(path):
    m = modules(path)
    values = {
        "amplitude_0": m["0"][0]["amplitude"],
        "amplitude_5": m["5"][0]["amplitude"],
        "offset_5": m["5"][0]["offset"],
        "phase_0_5": m["0"][1]["5"],
        "phase_0_1": m["0"][1]["1"],
        "phase_1_2": m["1"][1]["2"],
        "phase_2_3": m["2"][1]["3"],
    }
    return [values[p[0]] for p in free_parameters()]


def mean_se(v):
    v = np.asarray(v)
    return float(v.mean()), float(v.std(ddof=1) / math.sqrt(len(v)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("gaits", nargs="+", help="NAME=path/to/best_gait.xml")
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--out", required=True)
    parser.add_argument("--yamor", default=os.environ.get("YAMOR", "target/release/yamor"))
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    gaits = dict(g.split("=", 1) for g in args.gaits)
    names = [p[0] for p in free_parameters()]
    with open(out / "gaits.csv", "w") as f:
        f.write("name," + ",".join(names) + "\n")
        for name, path in gaits.items():
            f.write(name + "," + ",".join(repr(v) for v in params_of(path)) + "\n")
    exported, summary, own = export_walks(args.yamor, out, args.starts, args.seconds)
    walker = Walker(exported / "quadruped.xml", summary)

    walks = {}
    for name, path in gaits.items():
        same_xml = modules(exported / "gaits" / f"{name}.xml") == modules(path)
        w = {}
        for engine in ("articulated", "rapier"):
            cmd = [args.yamor, "sim", "quadruped", "--gait", path, "--starts", str(args.starts),
                   "--seconds", str(args.seconds), "--engine", engine, "--csv", os.devnull]
            print("$", " ".join(cmd[:-2]), flush=True)
            per_start, _ = yamor_sim_engine(cmd)
            w[engine] = per_start
        agree = all(abs(100 * a - round(100 * b, 2)) <= 0.0051 for a, b in zip(w["articulated"], own[name]))
        w["mujoco"] = [walker.walk(load_controls(exported / "controls" / name / f"{i}.csv"))
                       for i in range(args.starts)]
        w["checks"] = {"rebuilt_xml_equal": same_xml, "sim_equals_bench_engines": agree}
        walks[name] = w
        print(name, w["checks"], {e: mean_se(w[e]) for e in ("articulated", "rapier", "mujoco")}, flush=True)

    engines = ("articulated", "rapier", "mujoco")
    best = {e: max(mean_se(walks[n][e])[0] for n in gaits) for e in engines}
    lines = [f"{args.starts} held-out starts, {args.seconds:g} s walks (cm/s, mean ± se; % of the engine's best of these gaits)", "",
             "| gait | " + " | ".join(engines) + " | MuJoCo / articulated | checks |",
             "|---|" + "---|" * (len(engines) + 2)]
    for n in gaits:
        cells = []
        for e in engines:
            m, s = mean_se(walks[n][e])
            cells.append(f"{100 * m:.2f} ± {100 * s:.2f} ({100 * m / best[e]:.0f} %)")
        ratio = mean_se(walks[n]["mujoco"])[0] / mean_se(walks[n]["articulated"])[0]
        lines.append(f"| {n} | " + " | ".join(cells) + f" | {100 * ratio:.0f} % | {walks[n]['checks']} |")
    text = "\n".join(lines)
    print()
    print(text)
    (out / "report.md").write_text(text + "\n")
    (out / "results.json").write_text(json.dumps({"args": vars(args), "walks": walks}, indent=1))


def yamor_sim_engine(command):
    import re
    import subprocess
    start = re.compile(r"^start (\d+): ([-\d.]+) cm/s")
    text = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    per_start = [float(m.group(2)) / 100 for line in text.splitlines() if (m := start.match(line))]
    if not per_start:
        raise RuntimeError(f"unexpected output of {' '.join(command)}:\n{text}")
    return per_start, text


if __name__ == "__main__":
    sys.exit(main())
