#!/usr/bin/env python3
"""Do the default engine and MuJoCo rank good gaits alike? (issue 31)

`engines.py` ranks 100 random gaits, one walk each, against MuJoCo
(Spearman 0.91-0.95). This script asks the same of the gaits that matter,
the best ones of an optimization run, each valued over held-out starts:

1. runs `yamor run quadruped --seed S --out RUN` (unless RUN already holds
   evaluations.csv) and takes from RUN/evaluations.csv two sets of 20 gaits:
   * `top`: the 20 best distinct parameter vectors, by the mean velocity of
     their walks (each vector is usually walked once);
   * `spread`: greedily from the best down, a vector is taken only when it
     lies at least --min-distance from every one taken (parameters scaled
     to their optimize.xml box, phase differences wrapped to ±π), so that
     not all 20 come from the one basin the optimizer converged in;
2. runs `yamor bench-engines --params gaits.csv --config optimize.xml`,
   which writes each gait's XML the way bench-engines builds its random
   gaits (`OptimizationConfig::apply` on
   examples/robots/quadruped/optimize.xml), walks it on the default engine
   from the first --starts held-out starts (`core/src/starts.rs`, the starts
   `yamor sim --starts N` walks) and exports the servo controls of every
   walk and the MuJoCo model, as `yamor bench-engines` does for its own
   gaits;
3. walks every gait with `yamor sim quadruped --gait G.xml --starts N
   --seconds 20` (the default engine's figure; checked to equal
   bench-engines' own walks start by start);
4. walks the same control sequences in MuJoCo (engines.py's Walker:
   4.17-ms step, 4 steps per 1/60-s tick, from the model's rest pose),
   i.e. the same oscillator starts on both engines;
5. prints, per set, the table of means ± standard errors, Spearman and
   Kendall (tau-b) correlations of the 20 means with bootstrap 95 %
   intervals (gaits resampled; gaits and starts resampled), the split-half
   reliability of each engine's own ranking (what noise alone allows), and
   whether the default engine's best gait is MuJoCo's best or within its se.

    python3 -m venv bench/peers/.venv-engines
    bench/peers/.venv-engines/bin/pip install -r bench/peers/engines-requirements.txt
    cargo build --release -p yamor
    nice -n 10 bench/peers/.venv-engines/bin/python bench/peers/rank_good.py \\
        --run /tmp/corr1 --seed 1 --starts 20 --out target/rank-good

Writes OUT/report.md (the tables) and OUT/results.json. Not part of CI.
"""
import argparse
import csv
import json
import math
import os
import re
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
from scipy.stats import kendalltau, spearmanr

sys.path.insert(0, str(Path(__file__).resolve().parent))
from engines import Walker, load_controls  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OPTIMIZE_XML = ROOT / "examples/robots/quadruped/optimize.xml"
SUMMARY = re.compile(r"^velocity ([-\d.]+) ± ([-\d.]+) cm/s \((\d+) starts")
START = re.compile(r"^start (\d+): ([-\d.]+) cm/s")


def free_parameters():
    """(name, min, max, periodic) of optimize.xml's free parameters, in file order."""
    params = []
    for rule in ET.parse(OPTIMIZE_XML).getroot().iter("optimize"):
        if "min" in rule.attrib:
            lo, hi = float(rule.get("min")), float(rule.get("max"))
            periodic = rule.get("param").startswith("phase_") and abs(hi - lo - 2 * math.pi) < 1e-9
            params.append((rule.get("param"), lo, hi, periodic))
    return params


def read_candidates(evaluations):
    """Distinct parameter vectors of a run, with the velocities of their walks."""
    params = [p[0] for p in free_parameters()]
    walks = {}
    with open(evaluations) as f:
        for row in csv.DictReader(f):
            key = tuple(row[p] for p in params)
            entry = walks.setdefault(key, {"evaluations": [], "velocities": []})
            entry["evaluations"].append(int(row["evaluation"]))
            entry["velocities"].append(float(row["velocity_m_s"]))
    candidates = [
        {"values": [float(v) for v in key], "evaluations": e["evaluations"],
         "velocities": e["velocities"], "mean": float(np.mean(e["velocities"]))}
        for key, e in walks.items()
    ]
    candidates.sort(key=lambda c: -c["mean"])
    return params, candidates


def distance(a, b):
    """Euclidean distance in the unit box, phase differences wrapped."""
    total = 0.0
    for (name, lo, hi, periodic), x, y in zip(free_parameters(), a, b):
        d = x - y
        if periodic:
            d = (d + math.pi) % (2 * math.pi) - math.pi
        total += (d / (hi - lo)) ** 2
    return math.sqrt(total)


def select(candidates, count, min_distance):
    taken = []
    for c in candidates:
        if all(distance(c["values"], t["values"]) >= min_distance for t in taken):
            taken.append(c)
            if len(taken) == count:
                break
    return taken


def yamor_sim(yamor, gait, starts, seconds):
    command = [yamor, "sim", "quadruped", "--gait", str(gait), "--starts", str(starts),
               "--seconds", str(seconds), "--csv", os.devnull]
    text = subprocess.run(command, check=True, capture_output=True, text=True).stdout
    per_start, summary = [], None
    for line in text.splitlines():
        if m := START.match(line):
            per_start.append(float(m.group(2)) / 100)
        elif m := SUMMARY.match(line):
            summary = (float(m.group(1)) / 100, float(m.group(2)) / 100, int(m.group(3)))
    if summary is None or len(per_start) != starts:
        raise RuntimeError(f"unexpected output of {' '.join(command)}:\n{text}")
    return per_start, summary


def export_walks(yamor, out, starts, seconds):
    """Walks every gait of out/gaits.csv on the default engine and exports
    the quadruped for MuJoCo (`yamor bench-engines --params`): the export's
    summary and each gait's velocities by name."""
    exported = out / "export"
    command = [yamor, "bench-engines", "--config", str(OPTIMIZE_XML),
               "--params", str(out / "gaits.csv"), "--out", str(exported),
               "--starts", str(starts), "--seconds", str(seconds)]
    print("$", " ".join(command), flush=True)
    subprocess.run(command, check=True)
    summary = json.loads((exported / "summary.json").read_text())
    own = {}
    with open(exported / "velocities.csv") as f:
        for row in csv.DictReader(f):
            own.setdefault(row["gait"], []).append(float(row["velocity"]))
    return exported, summary, own


def mean_se(values):
    values = np.asarray(values)
    return float(values.mean()), float(values.std(ddof=1) / math.sqrt(len(values)))


def correlations(a, b):
    return float(spearmanr(a, b).statistic), float(kendalltau(a, b).statistic)


def bootstrap(ours, mj, reps, rng, starts_too):
    """95 % percentile intervals of Spearman and Kendall between the gait means.
    ours, mj: arrays (gaits, starts). Gaits are resampled; with starts_too the
    starts are resampled as well, one draw of start indices shared by every
    gait and both engines: every gait walks from the same held-out starts and
    both engines from the same oscillator start, and the luck of a start is
    shared (the design is paired), so drawing starts per gait would overstate
    the noise."""
    g, s = ours.shape
    rho, tau = [], []
    for _ in range(reps):
        gi = rng.integers(0, g, g)
        if starts_too:
            si = rng.integers(0, s, s)
            a = ours[gi][:, si].mean(axis=1)
            b = mj[gi][:, si].mean(axis=1)
        else:
            a, b = ours[gi].mean(axis=1), mj[gi].mean(axis=1)
        r, t = correlations(a, b)
        if not (math.isnan(r) or math.isnan(t)):
            rho.append(r)
            tau.append(t)
    return [float(x) for x in np.percentile(rho, [2.5, 97.5])], [float(x) for x in np.percentile(tau, [2.5, 97.5])]


def split_half(walks):
    """Spearman of the gait means over even against odd starts, and the
    Spearman-Brown figure for the full number of starts."""
    r = float(spearmanr(walks[:, 0::2].mean(axis=1), walks[:, 1::2].mean(axis=1)).statistic)
    return r, 2 * r / (1 + r) if r > -1 else float("nan")


def analyse(name, gaits, ours, mj, reps, rng):
    mo, mm = ours.mean(axis=1), mj.mean(axis=1)
    n = ours.shape[1]
    so, sm = ours.std(axis=1, ddof=1) / math.sqrt(n), mj.std(axis=1, ddof=1) / math.sqrt(n)
    rho, tau = correlations(mo, mm)
    rho_g, tau_g = bootstrap(ours, mj, reps, rng, starts_too=False)
    rho_gs, tau_gs = bootstrap(ours, mj, reps, rng, starts_too=True)
    best_ours, best_mj = int(np.argmax(mo)), int(np.argmax(mm))
    pairs = np.triu_indices(len(gaits), 1)

    def shared_luck(walks):
        """Mean correlation, over starts, of two gaits' walks, and the median
        standard error of the difference of two gaits' means (paired by start)."""
        c = np.corrcoef(walks)[pairs]
        d = [np.std(walks[i] - walks[j], ddof=1) / math.sqrt(n) for i, j in zip(*pairs)]
        return float(np.mean(c)), float(np.median(d))
    mj_rank = [int(i) for i in np.argsort(-mm)]
    ours_rank = [int(i) for i in np.argsort(-mo)]
    return {
        "set": name,
        "gaits": [g["name"] for g in gaits],
        "ours_mean": mo.tolist(), "ours_se": so.tolist(),
        "mujoco_mean": mm.tolist(), "mujoco_se": sm.tolist(),
        "spearman": rho, "kendall": tau,
        "spearman_ci_gaits": rho_g, "kendall_ci_gaits": tau_g,
        "spearman_ci_gaits_starts": rho_gs, "kendall_ci_gaits_starts": tau_gs,
        "split_half_ours": split_half(ours), "split_half_mujoco": split_half(mj),
        "pearson": float(np.corrcoef(mo, mm)[0, 1]),
        "best_ours": best_ours, "best_mujoco": best_mj,
        "best_ours_rank_on_mujoco": mj_rank.index(best_ours) + 1,
        "best_mujoco_rank_on_ours": ours_rank.index(best_mj) + 1,
        "best_ours_gap_on_mujoco": float(mm[best_mj] - mm[best_ours]),
        # se of the gap paired by start (both gaits walk the same starts)
        "best_ours_gap_se": float(np.std(mj[best_mj] - mj[best_ours], ddof=1) / math.sqrt(n)),
        "best_ours_within_se": bool(mm[best_mj] - mm[best_ours] <= sm[best_mj]),
        "ours_range": [float(mo.min()), float(mo.max())],
        "mujoco_range": [float(mm.min()), float(mm.max())],
        "ours_median_se": float(np.median(so)), "mujoco_median_se": float(np.median(sm)),
        "shared_luck_ours": shared_luck(ours), "shared_luck_mujoco": shared_luck(mj),
        "start_corr_between_engines": float(np.mean([np.corrcoef(ours[i], mj[i])[0, 1] for i in range(len(gaits))])),
        "mujoco_over_ours": float(mm.mean() / mo.mean()),
    }


def report(r, gaits, params, starts):
    cm = lambda v: f"{100 * v:.2f}"  # noqa: E731
    lines = [f"### Set `{r['set']}` ({len(gaits)} gaits, {starts} held-out starts each)", ""]
    lines.append("| gait | evaluation | run's walk (cm/s) | " + " | ".join(params)
                 + " | default engine (cm/s) | rank | MuJoCo (cm/s) | rank |")
    lines.append("|---|---|---|" + "---|" * len(params) + "---|---|---|---|")
    mo, mm = np.array(r["ours_mean"]), np.array(r["mujoco_mean"])
    ro = {int(i): k + 1 for k, i in enumerate(np.argsort(-mo))}
    rm = {int(i): k + 1 for k, i in enumerate(np.argsort(-mm))}
    for i, g in enumerate(gaits):
        lines.append(
            f"| {g['name']} | {','.join(map(str, g['evaluations']))} | {cm(g['mean'])} | "
            + " | ".join(f"{v:.3f}" for v in g["values"])
            + f" | {cm(r['ours_mean'][i])} ± {cm(r['ours_se'][i])} | {ro[i]}"
            + f" | {cm(r['mujoco_mean'][i])} ± {cm(r['mujoco_se'][i])} | {rm[i]} |")
    lines.append("")
    f3 = lambda ci: f"[{ci[0]:.2f}, {ci[1]:.2f}]"  # noqa: E731
    lines += [
        f"- Spearman {r['spearman']:.3f} (95 % bootstrap: gaits resampled {f3(r['spearman_ci_gaits'])}, "
        f"gaits and starts resampled {f3(r['spearman_ci_gaits_starts'])}); "
        f"Kendall tau-b {r['kendall']:.3f} ({f3(r['kendall_ci_gaits'])}, {f3(r['kendall_ci_gaits_starts'])}); "
        f"Pearson {r['pearson']:.3f}.",
        f"- Range of the means: default engine {cm(r['ours_range'][0])}–{cm(r['ours_range'][1])} cm/s "
        f"(median se {cm(r['ours_median_se'])}), MuJoCo {cm(r['mujoco_range'][0])}–{cm(r['mujoco_range'][1])} "
        f"(median se {cm(r['mujoco_median_se'])}).",
        f"- Split-half reliability (even against odd starts, Spearman; Spearman-Brown for {starts}): "
        f"default engine {r['split_half_ours'][0]:.3f} → {r['split_half_ours'][1]:.3f}, "
        f"MuJoCo {r['split_half_mujoco'][0]:.3f} → {r['split_half_mujoco'][1]:.3f}.",
        f"- Starts: two gaits' walks from the same start correlate {r['shared_luck_ours'][0]:.2f} on the "
        f"default engine, {r['shared_luck_mujoco'][0]:.2f} on MuJoCo (mean over pairs), so the difference of two "
        f"means is known to ± {cm(r['shared_luck_ours'][1])} and ± {cm(r['shared_luck_mujoco'][1])} cm/s (median se, "
        f"paired by start); one gait's walks on the two engines from the same start correlate "
        f"{r['start_corr_between_engines']:.2f} (mean over gaits). MuJoCo's means are "
        f"{100 * r['mujoco_over_ours']:.0f} % of the default engine's.",
        f"- Top 1: the default engine's best, {gaits[r['best_ours']]['name']}, is MuJoCo's "
        f"#{r['best_ours_rank_on_mujoco']}, {cm(r['best_ours_gap_on_mujoco'])} ± {cm(r['best_ours_gap_se'])} cm/s (paired se) "
        f"below MuJoCo's best ({gaits[r['best_mujoco']]['name']}, the default engine's "
        f"#{r['best_mujoco_rank_on_ours']}); within MuJoCo's best's se: "
        f"{'yes' if r['best_ours_within_se'] else 'no'}.",
        "",
    ]
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", default="/tmp/corr1", help="run directory (made with yamor run if it has no evaluations.csv)")
    parser.add_argument("--seed", type=int, default=1, help="seed of that yamor run")
    parser.add_argument("--count", type=int, default=20)
    parser.add_argument("--starts", type=int, default=20)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--min-distance", type=float, default=0.1)
    parser.add_argument("--bootstrap", type=int, default=10000)
    parser.add_argument("--out", default=str(ROOT / "target/rank-good"))
    parser.add_argument("--yamor", default=str(ROOT / "target/release/yamor"))
    args = parser.parse_args()
    started = time.time()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    run = Path(args.run)
    if not (run / "evaluations.csv").exists():
        command = [args.yamor, "run", "quadruped", "--seed", str(args.seed), "--out", str(run)]
        print("$", " ".join(command), flush=True)
        subprocess.run(command, check=True)
    params, candidates = read_candidates(run / "evaluations.csv")
    sets = {
        "top": candidates[: args.count],
        "spread": select(candidates, args.count, args.min_distance),
    }
    rows, gaits_of = {}, {}
    for set_name, chosen in sets.items():
        gaits_of[set_name] = []
        for k, c in enumerate(chosen):
            name = f"{set_name}{k + 1:02d}-e{c['evaluations'][0]}"
            c = dict(c, name=name)
            gaits_of[set_name].append(c)
            rows[name] = c
    with open(out / "gaits.csv", "w") as f:
        f.write("name," + ",".join(params) + "\n")
        for name, c in rows.items():
            f.write(name + "," + ",".join(repr(v) for v in c["values"]) + "\n")

    exported, summary, own = export_walks(args.yamor, out, args.starts, args.seconds)

    print(f"yamor sim and MuJoCo: {len(rows)} gaits x {args.starts} starts", flush=True)
    walker = Walker(exported / "quadruped.xml", summary)
    ours, mj, sim_summary = {}, {}, {}
    mismatches = 0
    for name in rows:
        per_start, s = yamor_sim(args.yamor, exported / "gaits" / f"{name}.xml", args.starts, args.seconds)
        # yamor sim prints cm/s to 2 decimals: compare at that precision.
        if any(abs(100 * a - round(100 * b, 2)) > 0.0051 for a, b in zip(per_start, own[name])):
            mismatches += 1
            print(f"warning: {name}: yamor sim and bench-engines walk differently", flush=True)
        ours[name] = own[name]  # full precision; equal to yamor sim's per-start figures
        sim_summary[name] = s
        mj[name] = [walker.walk(load_controls(exported / "controls" / name / f"{i}.csv"))
                    for i in range(args.starts)]

    rng = np.random.default_rng(31)
    results, text = [], []
    text.append(f"{len(rows)} gaits from {run / 'evaluations.csv'}; yamor sim and bench-engines "
                f"{'agree on every start' if mismatches == 0 else f'differ on {mismatches} gaits'}.\n")
    for set_name, gaits in gaits_of.items():
        names = [g["name"] for g in gaits]
        r = analyse(set_name, gaits, np.array([ours[n] for n in names]),
                    np.array([mj[n] for n in names]), args.bootstrap, rng)
        r["yamor_sim_summary"] = [sim_summary[n] for n in names]
        results.append(r)
        text.append(report(r, gaits, params, args.starts))
    elapsed = time.time() - started
    text.append(f"(wall time {elapsed:.0f} s)")
    report_text = "\n".join(text)
    print()
    print(report_text)
    (out / "report.md").write_text(report_text + "\n")
    (out / "results.json").write_text(json.dumps(
        {"args": vars(args), "results": results,
         "walks": {n: {"ours": ours[n], "mujoco": mj[n]} for n in rows}}, indent=1))


if __name__ == "__main__":
    sys.exit(main())
