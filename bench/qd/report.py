#!/usr/bin/env python3
"""Tables of bench/qd/results/*.json: per method, median and min-max over
seeds of QD score and coverage, and wall time per run; plus the checks
(yamor's map.json QD score recomputed from its cells and rebuilt from the
run's jobs; pyribs' archive rebuilt from its evaluations).

    python3 bench/qd/report.py [--results DIR]   (writes DIR/tables.md too)
"""
import argparse
import json
import math
import pathlib
import statistics

METHODS = ["yamor-cma-me", "yamor-iso-line", "pyribs-cma-me", "pyribs-iso-line"]


def spread(values, fmt):
    if not values:
        return "-"
    return f"{fmt(statistics.median(values))} ({fmt(min(values))}–{fmt(max(values))})"


def table(runs, part, qd_fmt, qd_label):
    lines = [f"| method | seeds | QD score{qd_label}: median (min–max) | coverage: median (min–max) "
             f"| wall s/run: median (min–max) | failed evals |",
             "|---|---|---|---|---|---|"]
    for m in METHODS:
        rs = sorted((r for r in runs if r["method"] == m), key=lambda r: r["seed"])
        if not rs:
            lines.append(f"| {m} | not run | | | | |")
            continue
        lines.append(
            f"| {m} | {','.join(str(r['seed']) for r in rs)} "
            f"| {spread([r['qd_score'] for r in rs], qd_fmt)} "
            f"| {spread([r['coverage'] for r in rs], lambda v: f'{100 * v:.2f} %')} "
            f"| {spread([r['wall_s'] for r in rs], lambda v: f'{v:.0f}')} "
            f"| {sum(r['failed'] for r in rs)} |")
    return lines


def checks(runs):
    out = []
    for r in sorted(runs, key=lambda r: (r["method"], r["seed"])):
        if r["method"].startswith("yamor"):
            if "qd_score_recomputed_from_map_cells" in r:  # quadruped, offset 0
                a, b, c = r["qd_score"], r["qd_score_recomputed_from_map_cells"], \
                    r["qd_score_rebuilt_from_jobs"]
                ok = math.isclose(a, b, rel_tol=1e-12) and math.isclose(a, c, rel_tol=1e-12) \
                    and r["cells"] == r["cells_rebuilt_from_jobs"]
                what = f"map.json {a:.6f}, sum of its cells {b:.6f}, rebuilt from jobs {c:.6f}"
            else:  # arm
                a, c = r["qd_score"], r["qd_score_rebuilt_from_jobs"]
                ok = math.isclose(a, c, rel_tol=1e-9) and r["cells"] == r["cells_rebuilt_from_jobs"]
                ok = ok and math.isclose(r["map_json_coverage"], r["coverage"])
                what = f"from map.json cells {a:.3f}, rebuilt from jobs {c:.3f}"
        else:
            key = "qd_score_rebuilt_from_walks" if "qd_score_rebuilt_from_walks" in r \
                else "qd_score_rebuilt_from_evaluations"
            ckey = key.replace("qd_score", "cells")
            ok = math.isclose(r["qd_score"], r[key], rel_tol=1e-9) and r["cells"] == r[ckey]
            what = f"pyribs archive {r['qd_score']:.6f} / {r['cells']} cells, " \
                   f"rebuilt {r[key]:.6f} / {r[ckey]} cells"
        out.append((ok, f"{r['method']} s{r['seed']}: {what}"))
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--results", default=str(pathlib.Path(__file__).parent / "results"))
    args = p.parse_args()
    d = pathlib.Path(args.results)
    quad = [json.loads(f.read_text()) for f in sorted(d.glob("quad-*.json"))]
    arm = [json.loads(f.read_text()) for f in sorted(d.glob("arm-*.json"))]
    md = ["## Quadruped (3,000 walks a run; grid heading_deg:-180:180:12,height_m:0.02:0.08:6,"
          "front_duty:0:1:5,back_duty:0:1:5 = 1,800 cells; QD = sum of elite velocity, m/s, "
          "offset 0)", ""]
    md += table(quad, "quad", lambda v: f"{v:.3f}", " (m/s)")
    md += ["", "## Planar arm, 10 joints (10,000 evaluations a run; grid x:-10:10:100,"
           "y:-10:10:100 = 10,000 cells; QD = sum of (objective + pi^2), offset -pi^2)", ""]
    md += table(arm, "arm", lambda v: f"{v:.0f}", "")
    md += ["", "## Checks", ""]
    cs = checks(quad + arm)
    bad = [c for ok, c in cs if not ok]
    md.append(f"{len(cs) - len(bad)} of {len(cs)} runs: the reported archive equals the one "
              "rebuilt independently from the run's evaluations"
              + (" (yamor: and map.json's qd_score equals the sum of its cells)." if cs else "."))
    md += [f"- MISMATCH {c}" for c in bad]
    v = d / "validation.json"
    if v.exists():
        val = json.loads(v.read_text())
        md += ["", f"Merge validation (`{val['command']}`): {val['xml_identical']}/"
               f"{val['jobs_checked']} gait XML byte-identical, {val['seed_identical']} seeds and "
               f"{val['spec_identical']} specs identical, {val['velocity_bit_identical']}/"
               f"{val['rewalked']} re-walks bit-identical in velocity and descriptors."]
    text = "\n".join(md) + "\n"
    (d / "tables.md").write_text(text)
    print(text)
    for ok, c in cs:
        print(("ok   " if ok else "BAD  ") + c)


if __name__ == "__main__":
    main()
