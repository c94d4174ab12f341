#!/usr/bin/env python3
"""Shifted and rotated standard functions: yamor's Powell against scipy's.

Every problem is f(x) = F(R (x - x_opt)) + f_opt in the box [-5, 5]^d, with a
random rotation R, an optimum x_opt uniform in [-4, 4]^d and a start uniform
in [-4, 4]^d, all drawn from one seed per (function, dimension, instance).
Every method gets the same problems, starts and budget (default 1000*d, the
default `maxfev` of scipy's Powell): scipy runs in-process with
`minimize(method="Powell", bounds=...)` and its defaults; yamor's Powell runs
in the plugin's stdio example (plugins/powell/examples/stdio.rs), told the
same budget, its proposals evaluated here by the same Python functions. A
problem is solved at a target when the best value among the first `budget`
evaluations is within it of f_opt.

    python3 -m venv bench/shifted/.venv
    bench/shifted/.venv/bin/pip install -r bench/shifted/requirements.txt
    cargo build --release -p yamor-powell --example stdio
    bench/shifted/.venv/bin/python bench/shifted/run.py

A method is `scipy` or `powell` followed by the plugin's settings, e.g.
`powell:variant=classic,reevaluate=0`. Results are cached per method and
problem in --cache, so adding a method reruns only that method.
"""

import argparse
import json
import math
import os
import subprocess
import sys
import warnings

import numpy as np
import scipy
from scipy.optimize import Bounds, minimize

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LO, HI = -5.0, 5.0
TARGETS = (1e-3, 1e-8)


def _weights(d, base):
    return base ** (np.arange(d) / max(d - 1, 1))


def sphere(z, _):
    return float(z @ z)


def ellipsoid(z, _):
    return float(_weights(len(z), 1e6) @ (z * z))


def discus(z, _):
    return float(1e6 * z[0] ** 2 + z[1:] @ z[1:])


def bent_cigar(z, _):
    return float(z[0] ** 2 + 1e6 * (z[1:] @ z[1:]))


def different_powers(z, _):
    d = len(z)
    return float(math.sqrt(np.sum(np.abs(z) ** (2 + 4 * np.arange(d) / max(d - 1, 1)))))


def rosenbrock(z, _):
    y = z + 1.0
    return float(np.sum(100 * (y[:-1] ** 2 - y[1:]) ** 2 + (y[:-1] - 1) ** 2))


def rastrigin(z, _):
    return float(10 * len(z) + z @ z - 10 * np.sum(np.cos(2 * np.pi * z)))


def sharp_ridge(z, _):
    return float(z[0] ** 2 + 100 * math.sqrt(z[1:] @ z[1:]))


def attractive_sector(z, xopt):
    s = np.where(z * xopt > 0, 100.0, 1.0)
    return float(np.sum((s * z) ** 2))


def schwefel_1_2(z, _):
    c = np.cumsum(z)
    return float(c @ c)


def ackley(z, _):
    d = len(z)
    return float(
        -20 * math.exp(-0.2 * math.sqrt(z @ z / d))
        - math.exp(np.sum(np.cos(2 * np.pi * z)) / d)
        + 20
        + math.e
    )


def levy(z, _):
    w = 1 + z / 4
    return float(
        math.sin(math.pi * w[0]) ** 2
        + np.sum((w[:-1] - 1) ** 2 * (1 + 10 * np.sin(np.pi * w[:-1] + 1) ** 2))
        + (w[-1] - 1) ** 2 * (1 + math.sin(2 * math.pi * w[-1]) ** 2)
    )


def styblinski_tang(z, _):
    # The minimum of one term is at -2.903534; shifted there so z = 0 is the optimum.
    y = z - 2.903534
    return float(0.5 * np.sum(y**4 - 16 * y**2 + 5 * y) + 39.16616570377142 * len(z))


def griewank(z, _):
    y = 20 * z
    i = np.arange(1, len(z) + 1)
    return float(1 + y @ y / 4000 - np.prod(np.cos(y / np.sqrt(i))))


def weierstrass(z, _):
    k = np.arange(21)
    a, b = 0.5**k, 3.0**k
    y = 0.1 * z
    terms = np.sum(a[None, :] * np.cos(2 * np.pi * b[None, :] * (y[:, None] + 0.5)), axis=1)
    return float(np.sum(terms) - len(z) * np.sum(a * np.cos(np.pi * b)))


def step_ellipsoid(z, _):
    y = np.floor(z + 0.5)
    return float(_weights(len(z), 1e2) @ (y * y) + 1e-4 * (z @ z))


FUNCTIONS = {
    f.__name__: f
    for f in (
        sphere,
        ellipsoid,
        discus,
        bent_cigar,
        different_powers,
        rosenbrock,
        rastrigin,
        sharp_ridge,
        attractive_sector,
        schwefel_1_2,
        ackley,
        levy,
        styblinski_tang,
        griewank,
        weierstrass,
        step_ellipsoid,
    )
}


class Problem:
    def __init__(self, name, d, instance, fopt_scale, start="uniform", rotate=True):
        index = list(FUNCTIONS).index(name)
        rng = np.random.default_rng([index, d, instance])
        q, r = np.linalg.qr(rng.standard_normal((d, d)))
        self.rotation = q * np.sign(np.diag(r)) if rotate else np.eye(d)
        self.xopt = rng.uniform(-4, 4, d)
        self.start = rng.uniform(-4, 4, d)
        if start == "centre":
            self.start = np.zeros(d)
        elif start == "corner":
            self.start = np.full(d, LO)
        self.fopt = round(float(rng.uniform(-fopt_scale, fopt_scale)), 2)
        self.name, self.d, self.instance = name, d, instance
        self.base = FUNCTIONS[name]

    def __call__(self, x):
        z = self.rotation @ (np.asarray(x, dtype=float) - self.xopt)
        return self.base(z, self.xopt) + self.fopt

    def key(self):
        return f"{self.name}/d{self.d}/i{self.instance}"


class Record:
    """The best value among the first `budget` evaluations, and the
    evaluation at which each target was first reached."""

    def __init__(self, problem, budget):
        self.problem, self.budget = problem, budget
        self.best, self.used = math.inf, 0
        self.hits = [None] * len(TARGETS)

    def __call__(self, x):
        value = self.problem(x)
        self.used += 1
        if self.used <= self.budget:
            self.best = min(self.best, value)
            for i, target in enumerate(TARGETS):
                if self.hits[i] is None and self.best - self.problem.fopt <= target:
                    self.hits[i] = self.used
        return value

    def result(self):
        return [self.best - self.problem.fopt, min(self.used, self.budget), *self.hits]


def run_scipy(problem, budget):
    f = Record(problem, budget)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        minimize(
            f,
            problem.start,
            method="Powell",
            bounds=Bounds([LO] * problem.d, [HI] * problem.d),
            options={"maxfev": budget},
        )
    return f.result()


class Plugin:
    def __init__(self, binary):
        self.proc = subprocess.Popen(
            [binary], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1
        )

    def run(self, problem, budget, settings):
        triples = " ".join(f"{LO!r} {HI!r} {float(s)!r}" for s in problem.start)
        pairs = " ".join(settings)
        self.proc.stdin.write(f"RUN {budget} {problem.instance} {triples} ; {pairs}\n")
        self.proc.stdin.flush()
        f = Record(problem, budget)
        out = self.proc.stdout
        while True:
            line = out.readline()
            if not line:
                raise RuntimeError("the stdio example ended early")
            if line.startswith("END"):
                return f.result()
            k = int(line.split()[1])
            values = []
            for _ in range(k):
                x = np.array([float(t) for t in out.readline().split()])
                value = f(x)
                values.append(repr(-value))
            self.proc.stdin.write(" ".join(values) + "\n")
            self.proc.stdin.flush()


def solved(record, target, budget):
    """Whether a run reached TARGETS[target] within `budget` evaluations."""
    hit = record[2 + target]
    return hit is not None and hit <= budget


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--dims", default="2,5,10,20")
    ap.add_argument("--instances", type=int, default=5)
    ap.add_argument("--mult", type=int, default=1000, help="budget = mult * d")
    ap.add_argument("--functions", default=",".join(FUNCTIONS))
    ap.add_argument("--fopt", type=float, default=0.0, help="f_opt uniform in +-this (0: f_opt = 0)")
    ap.add_argument(
        "--methods",
        default="scipy,powell:variant=classic",
        help="comma-free list separated by spaces or '+': scipy, powell:<k=v,...>",
    )
    ap.add_argument("--at", default="", help="budget multipliers (<= --mult) to count solved problems at; default --mult")
    ap.add_argument("--start", default="uniform", choices=["uniform", "centre", "corner"])
    ap.add_argument("--rotate", default="yes", choices=["yes", "no"], help="no: shifted only")
    ap.add_argument("--cache", default="/tmp/shifted-powell.json")
    ap.add_argument("--binary", default=os.path.join(ROOT, "target/release/examples/stdio"))
    ap.add_argument("--per-function", action="store_true", help="also print solved counts per function")
    args = ap.parse_args()

    dims = [int(d) for d in args.dims.split(",")]
    methods = args.methods.replace("+", " ").split()
    names = args.functions.split(",")
    cache = {}
    if os.path.exists(args.cache):
        with open(args.cache) as fh:
            cache = json.load(fh)
    plugin = None
    problems = [Problem(n, d, i, args.fopt, args.start, args.rotate == "yes") for d in dims for n in names for i in range(1, args.instances + 1)]
    tag = f"fopt{args.fopt:g}/mult{args.mult}/{args.start}" + ("" if args.rotate == "yes" else "/unrotated")
    for method in methods:
        for problem in problems:
            key = f"{tag}/{method}/{problem.key()}"
            if key in cache:
                continue
            budget = args.mult * problem.d
            if method == "scipy":
                cache[key] = run_scipy(problem, budget)
            else:
                if plugin is None:
                    plugin = Plugin(args.binary)
                settings = method.split(":", 1)[1].split(",") if ":" in method else []
                cache[key] = plugin.run(problem, budget, settings)
        with open(args.cache, "w") as fh:
            json.dump(cache, fh)
        print(f"done: {method}", file=sys.stderr)

    print(
        f"scipy {scipy.__version__}, numpy {np.__version__}; {len(names)} functions x "
        f"{args.instances} instances per dimension, box [{LO:g}, {HI:g}]^d, budget {args.mult}*d, "
        + ("f_opt = 0" if args.fopt == 0 else f"f_opt uniform in +-{args.fopt:g}")
    )
    print()
    header = "| method | " + " | ".join(f"{d}-D" for d in dims) + " | all |"
    ats = [int(m) for m in args.at.split(",")] if args.at else [args.mult]
    for t, target in enumerate(TARGETS):
        for at in ats:
            print(
                f"solved at f - f* <= {target:g} within {at}*d evaluations "
                f"(of {len(names) * args.instances} per dimension)"
            )
            print()
            print(header)
            print("|" + "---|" * (len(dims) + 2))
            reference = None
            for method in methods:
                counts = [
                    sum(solved(cache[f"{tag}/{method}/{p.key()}"], t, at * d) for p in problems if p.d == d)
                    for d in dims
                ]
                if reference is None:
                    reference = counts
                ratio = sum(counts) / max(sum(reference), 1)
                cells = " | ".join(str(c) for c in counts)
                print(f"| {method} | {cells} | {sum(counts)} ({ratio:.2f}x {methods[0]}) |")
            print()
    if args.per_function:
        print("solved at 1e-3 per function, dimensions " + ",".join(map(str, dims)))
        print()
        print("| function | " + " | ".join(methods) + " |")
        print("|" + "---|" * (len(methods) + 1))
        for n in names:
            row = []
            for method in methods:
                row.append(
                    "/".join(
                        str(
                            sum(
                                solved(cache[f"{tag}/{method}/{p.key()}"], 0, args.mult * d)
                                for p in problems
                                if p.d == d and p.name == n
                            )
                        )
                        for d in dims
                    )
                )
            print(f"| {n} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
