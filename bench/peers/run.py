#!/usr/bin/env python3
"""Our Powell and PSO against scipy's Powell and pyswarms' PSO (issue 4).

Runs `yamor bench-peers` (our optimizers through the organizer and
expression hosts) and the peers on the same functions, dimensions, bounds,
start points and budgets, then prints a markdown table: the median number of
evaluations to reach f - f* <= tolerance (with how many runs reached it),
and the median best value within the budget.

    python3 -m venv bench/peers/.venv
    bench/peers/.venv/bin/pip install -r bench/peers/requirements.txt
    cargo build --release -p yamor
    bench/peers/.venv/bin/python bench/peers/run.py [--budget 2000 --seeds 5]

Not part of CI.
"""
import argparse
import csv
import io
import math
import statistics
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyswarms
import scipy
from scipy.optimize import Bounds, minimize

ROOT = Path(__file__).resolve().parents[2]
FUNCTIONS = ["sphere", "rosenbrock", "rastrigin"]
BOUND = {"sphere": 5.12, "rosenbrock": 2.048, "rastrigin": 5.12}


def value(name, x):
    x = np.asarray(x, dtype=float)
    if name == "sphere":
        return float(np.sum(x * x))
    if name == "rosenbrock":
        return float(np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2))
    return float(10.0 * len(x) + np.sum(x * x - 10.0 * np.cos(2.0 * math.pi * x)))


class Budget(Exception):
    pass


class Counted:
    """Counts evaluations, keeps the best so far, stops at the budget."""

    def __init__(self, name, budget, tolerance):
        self.name, self.budget, self.tolerance = name, budget, tolerance
        self.n, self.best, self.reached = 0, math.inf, None

    def one(self, x):
        if self.n >= self.budget:
            raise Budget()
        self.n += 1
        v = value(self.name, x)
        self.best = min(self.best, v)
        if self.reached is None and self.best <= self.tolerance:
            self.reached = self.n
        return v


def scipy_powell(name, d, budget, tolerance, seed):
    f = Counted(name, budget, tolerance)
    b = BOUND[name]
    x0 = np.full(d, -0.6 * b)
    try:
        minimize(f.one, x0, method="Powell", bounds=Bounds(-b, b),
                 options={"maxfev": budget, "xtol": 1e-10, "ftol": 1e-14})
    except Budget:
        pass
    return f


def pyswarms_pso(name, d, budget, tolerance, seed):
    f = Counted(name, budget, tolerance)
    b = BOUND[name]
    np.random.seed(seed)
    particles = 20
    optimizer = pyswarms.single.GlobalBestPSO(
        n_particles=particles, dimensions=d,
        options={"c1": 1.49618, "c2": 1.49618, "w": 0.7298},
        bounds=(np.full(d, -b), np.full(d, b)))

    def swarm(xs):
        out = []
        for x in xs:
            try:
                out.append(f.one(x))
            except Budget:
                out.append(math.inf)
        return np.array(out)

    optimizer.optimize(swarm, iters=max(1, budget // particles), verbose=False)
    return f


def ours(args):
    yamor = ROOT / "target" / "release" / "yamor"
    out = subprocess.run(
        [str(yamor), "bench-peers", "--budget", str(args.budget), "--seeds", str(args.seeds),
         "--tolerance", str(args.tolerance), "--dims", ",".join(map(str, args.dims))],
        check=True, capture_output=True, text=True).stdout
    rows = {}
    for r in csv.DictReader(io.StringIO(out)):
        key = (r["function"], int(r["dim"]), "yamor " + r["method"])
        reached = int(r["evals_to_tol"]) if r["evals_to_tol"] else None
        rows.setdefault(key, []).append((reached, float(r["best"])))
    return rows


def summary(runs):
    reached = [r for r, _ in runs if r is not None]
    best = statistics.median(b for _, b in runs)
    # The median counts runs that never reached the tolerance as infinite.
    ranked = sorted(r if r is not None else math.inf for r, _ in runs)
    med = ranked[len(ranked) // 2]
    return (f"{med:.0f}" if med != math.inf else "–"), f"{len(reached)}/{len(runs)}", best


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--budget", type=int, default=2000)
    p.add_argument("--seeds", type=int, default=5)
    p.add_argument("--tolerance", type=float, default=1e-3)
    p.add_argument("--dims", type=int, nargs="+", default=[2, 5, 10])
    args = p.parse_args()
    rows = ours(args)
    for name in FUNCTIONS:
        for d in args.dims:
            for label, run in [("scipy Powell", scipy_powell), ("pyswarms PSO", pyswarms_pso)]:
                rows[(name, d, label)] = [
                    (lambda f: (f.reached, f.best))(run(name, d, args.budget, args.tolerance, s))
                    for s in range(1, args.seeds + 1)]
    print(f"scipy {scipy.__version__}, pyswarms {pyswarms.__version__}, numpy {np.__version__}; "
          f"budget {args.budget}, {args.seeds} seeds, tolerance f - f* <= {args.tolerance}, "
          f"start -0.6 x bound in every coordinate (Powell; PSO starts at random)\n")
    print("| function | d | method | median evals to tolerance | runs reaching it | median best at budget |")
    print("|---|---|---|---|---|---|")
    methods = ["yamor powell-classic", "yamor powell-interval", "scipy Powell", "yamor pso", "pyswarms PSO"]
    for name in FUNCTIONS:
        for d in args.dims:
            for m in methods:
                if (name, d, m) not in rows:
                    continue
                med, count, best = summary(rows[(name, d, m)])
                print(f"| {name} | {d} | {m} | {med} | {count} | {best:.3g} |")


if __name__ == "__main__":
    sys.exit(main())
