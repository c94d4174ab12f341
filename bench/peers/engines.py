#!/usr/bin/env python3
"""Our physics engines against MuJoCo on the quadruped (issue 15).

Runs `yamor bench-engines`, which times every engine of ours on one core,
measures its standing drift and step-halving figures, walks a set of gaits
(the reference gait, the learnt one and seeded random ones) and exports the
quadruped as a MuJoCo model (quadruped.xml) with the servo controls of every
walk. This script then walks the same model with the same controls in
MuJoCo, on the same core, and prints:

* real-time factor of each engine and of MuJoCo, and their ratio;
* standing drift (motors holding 0 rad) and the reference gait's velocity
  at the step and at half the step;
* Spearman rank correlation of the random gaits' velocities, each engine
  against MuJoCo and against each other;
* transfer: how much velocity the best gaits of one simulator keep on the
  other.

    python3 -m venv bench/peers/.venv-engines
    bench/peers/.venv-engines/bin/pip install -r bench/peers/engines-requirements.txt
    cargo build --release -p yamor
    bench/peers/.venv-engines/bin/python bench/peers/engines.py [--gaits 100]

Not part of CI.
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import mujoco
import numpy as np
from scipy.stats import spearmanr

ROOT = Path(__file__).resolve().parents[2]
CORE = 0


def load_controls(path):
    return np.loadtxt(path, delimiter=",", ndmin=2)


class Walker:
    """The exported quadruped in MuJoCo, driven tick by tick."""

    def __init__(self, xml_path, summary, timestep_factor=1.0):
        self.model = mujoco.MjModel.from_xml_path(str(xml_path))
        self.model.opt.timestep *= timestep_factor
        self.data = mujoco.MjData(self.model)
        self.substeps = int(round(summary["substeps"] / timestep_factor))
        self.dt = summary["dt"]
        self.warmup = summary["warmup"]
        self.geom = mujoco.mj_name2id(self.model, mujoco.mjtObj.mjOBJ_GEOM, summary["robot_geom"])

    def walk(self, controls, ticks=None):
        """Velocity (m/s) as thesis 6.2.1 measures it: planar distance of the
        central module from the end of the warm-up to the end, over time."""
        m, d = self.model, self.data
        mujoco.mj_resetData(m, d)
        mujoco.mj_forward(m, d)
        ticks = len(controls) if ticks is None else ticks
        start = None
        start_t = None
        for k in range(ticks):
            d.ctrl[:] = controls[k % len(controls)]
            mujoco.mj_step(m, d, nstep=self.substeps)
            t = (k + 1) * self.dt
            if start is None and t + self.dt / 2 >= self.warmup:
                start, start_t = d.geom_xpos[self.geom][:2].copy(), t
        end = d.geom_xpos[self.geom][:2].copy()
        t = ticks * self.dt
        return float(np.linalg.norm(end - start) / (t - start_t))

    def drift(self, seconds, settle=2.0):
        m, d = self.model, self.data
        mujoco.mj_resetData(m, d)
        mujoco.mj_forward(m, d)
        start = None
        ticks = int(round(seconds / self.dt))
        for k in range(ticks):
            d.ctrl[:] = 0.0
            mujoco.mj_step(m, d, nstep=self.substeps)
            if start is None and (k + 1) * self.dt + self.dt / 2 >= settle:
                start = d.geom_xpos[self.geom][:2].copy()
        end = d.geom_xpos[self.geom][:2].copy()
        return float(np.linalg.norm(end - start) / (seconds - settle))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gaits", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--reference-seeds", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--out", default=str(ROOT / "target/bench-engines"))
    parser.add_argument("--yamor", default=str(ROOT / "target/release/yamor"))
    parser.add_argument("--engines", default="", help="comma-separated; all by default")
    args = parser.parse_args()

    os.sched_setaffinity(0, {CORE})
    command = [
        "taskset", "-c", str(CORE), args.yamor, "bench-engines",
        "--out", args.out, "--gaits", str(args.gaits), "--seed", str(args.seed),
        "--runs", str(args.runs), "--seconds", str(args.seconds),
        "--reference-seeds", str(args.reference_seeds),
    ]
    if args.engines:
        command += ["--engines", args.engines]
    print("$", " ".join(command), flush=True)
    subprocess.run(command, check=True)

    out = Path(args.out)
    summary = json.loads((out / "summary.json").read_text())
    walker = Walker(out / "quadruped.xml", summary)
    controls = {g: load_controls(out / "controls" / f"{g}.csv") for g in summary["gaits"]}

    # Speed: the same 20-s walk of the reference gait, best and median of runs.
    reference = controls["reference"]
    times = []
    for _ in range(args.runs):
        started = time.perf_counter()
        mj_reference = walker.walk(reference)
        times.append(time.perf_counter() - started)
    times.sort()
    mj_best, mj_median = times[0], times[len(times) // 2]
    seconds = summary["seconds"]
    # MuJoCo at twice its step too, so that a faster engine's longer step
    # can be weighed against what the same step would buy MuJoCo.
    coarse_walker = Walker(out / "quadruped.xml", summary, timestep_factor=2.0)
    times = []
    for _ in range(args.runs):
        started = time.perf_counter()
        coarse_walker.walk(reference)
        times.append(time.perf_counter() - started)
    times.sort()
    coarse_best, coarse_median = times[0], times[len(times) // 2]


    # Fidelity: every gait on every simulator, at its step and at half of it.
    velocity = {}
    with open(out / "velocities.csv") as f:
        for row in csv.DictReader(f):
            velocity.setdefault((row["engine"], row["step"]), {})[row["gait"]] = float(row["velocity"])
    half = Walker(out / "quadruped.xml", summary, timestep_factor=0.5)
    velocity[("mujoco", "h")] = {g: walker.walk(c) for g, c in controls.items()}
    velocity[("mujoco", "h/2")] = {g: half.walk(c) for g, c in controls.items()}
    coarse_name = f"mujoco at {2000 * walker.model.opt.timestep:.2f} ms"
    velocity[(coarse_name, "h")] = {g: coarse_walker.walk(c) for g, c in controls.items()}
    velocity[(coarse_name, "h/2")] = velocity[("mujoco", "h")]
    starts = ["reference"] + [g for g in summary["gaits"] if g.startswith("reference-seed")]
    gaits = [g for g in summary["gaits"] if not g.startswith("reference-seed")]
    random_gaits = [g for g in gaits if g.startswith("random")]
    simulators = list(summary["engines"]) + ["mujoco"]
    timed = simulators + [coarse_name]
    mj_drift = walker.drift(summary["stand_seconds"])

    print()
    print(f"mujoco {mujoco.__version__}, timestep {walker.model.opt.timestep:.5f} s, "
          f"{walker.substeps} steps per {summary['dt']:.5f}-s tick, one core (cpu {CORE}); "
          f"{len(gaits)} gaits of {seconds:.0f} s")
    print()
    print("| simulator | physics step | real time (best) | real time (median) | ratio to MuJoCo (best) "
          "| standing drift (mm/s) | mean velocity (cm/s) | at half step | change | rank correlation h vs h/2 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    mj_rtf = seconds / mj_best
    for name in timed:
        if name == "mujoco":
            best, median, drift = mj_rtf, seconds / mj_median, mj_drift
            step = walker.model.opt.timestep
        elif name == coarse_name:
            best, median = seconds / coarse_best, seconds / coarse_median
            drift = coarse_walker.drift(summary["stand_seconds"])
            step = coarse_walker.model.opt.timestep
        else:
            e = summary["engines"][name]
            best, median = seconds / e["best_wall_s"], seconds / e["median_wall_s"]
            drift, step = e["standing_drift_m_per_s"], summary["dt"] / e["substeps"]
        coarse = [velocity[(name, "h")][g] for g in gaits]
        fine = [velocity[(name, "h/2")][g] for g in gaits]
        mean, mean_half = statistics.mean(coarse), statistics.mean(fine)
        rho = spearmanr(coarse, fine).statistic
        print(f"| {name} | {1000 * step:.2f} ms | {best:.0f}x | {median:.0f}x | {best / mj_rtf:.2f} | "
              f"{1000 * drift:.4f} | {100 * mean:.2f} | {100 * mean_half:.2f} | "
              f"{100 * (mean_half - mean) / mean:+.1f}% | {rho:.3f} |")

    print()
    print(f"Halving the step, the reference gait from {len(starts)} oscillator starts (evaluation seeds): "
          "one walk is chaotic in the step, so the mean over starts is the gait's velocity; "
          "± is the standard error of the mean change.")
    print()
    print("| simulator | seed 0: h → h/2 (cm/s) | change | mean over starts: h → h/2 (cm/s) | change |")
    print("|---|---|---|---|---|")
    for name in timed:
        coarse = [velocity[(name, "h")][g] for g in starts]
        fine = [velocity[(name, "h/2")][g] for g in starts]
        mean, mean_half = statistics.mean(coarse), statistics.mean(fine)
        changes = [f - c for c, f in zip(coarse, fine)]
        error = statistics.stdev(changes) / len(changes) ** 0.5 if len(changes) > 1 else float("nan")
        print(f"| {name} | {100 * coarse[0]:.2f} → {100 * fine[0]:.2f} | "
              f"{100 * (fine[0] - coarse[0]) / coarse[0]:+.1f}% | "
              f"{100 * mean:.2f} → {100 * mean_half:.2f} | "
              f"{100 * (mean_half - mean) / mean:+.1f}% ± {100 * error / mean:.1f}% |")

    print()
    print(f"Spearman rank correlation of {len(random_gaits)} random gaits' velocities (seed {args.seed}):")
    print()
    print("| | " + " | ".join(simulators) + " |")
    print("|---|" + "---|" * len(simulators))
    for a in simulators:
        cells = []
        for b in simulators:
            rho = spearmanr([velocity[(a, "h")][g] for g in random_gaits],
                            [velocity[(b, "h")][g] for g in random_gaits]).statistic
            cells.append(f"{rho:.3f}")
        print(f"| {a} | " + " | ".join(cells) + " |")

    print()
    print("Transfer: the 5 fastest random gaits of one simulator, their mean velocity there and elsewhere (cm/s); "
          "the reference and learnt gaits:")
    print()
    print("| gaits | " + " | ".join(simulators) + " |")
    print("|---|" + "---|" * len(simulators))
    for a in simulators:
        top = sorted(random_gaits, key=lambda g: -velocity[(a, "h")][g])[:5]
        cells = [f"{100 * statistics.mean(velocity[(b, 'h')][g] for g in top):.2f}" for b in simulators]
        print(f"| best 5 on {a} | " + " | ".join(cells) + " |")
    for g in ("reference", "learnt"):
        print(f"| {g} | " + " | ".join(f"{100 * velocity[(b, 'h')][g]:.2f}" for b in simulators) + " |")


if __name__ == "__main__":
    sys.exit(main())
