"""The noise models of the BBOB-noisy testbed on COCO's noiseless BBOB functions.

Hansen, Finck, Ros, Auger, "Real-Parameter Black-Box Optimization
Benchmarking 2009: Noisy Functions Definitions", INRIA RR-6869, section 0.2:

  Gaussian  f_GN(f, beta)     = f * exp(beta * N(0,1))
  uniform   f_UN(f, alpha, b) = f * U^b * max(1, (1e9 / (f + 1e-99))^(alpha * U'))
  Cauchy    f_CN(f, alpha, p) = f + alpha * max(0, 1000 + [U < p] * N / (|N'| + 1e-199))

applied to the noise-free precision f = f_true(x) - f_opt (so the noise-free
optimum is 0), with the testbed's offset rule: where f >= 1e-8 the value is
f_XX(f) + 1.01e-8, below 1e-8 it is f itself (the optimum stays noise-free
and reachable). U, U' are uniform on (0, 1), N, N' standard normal, all
independent. Moderate: beta = 0.01; alpha = 0.01 (0.49 + 1/D), b = 0.01;
alpha = 0.01, p = 0.05. Severe: beta = 1; alpha = 0.49 + 1/D, b = 1;
alpha = 1, p = 0.2.

Shared by the noisy host (bench/bbob/noisy_host.py, noise drawn from the
job's start seed) and the in-process peers (bench/bbob/noisy.py).
"""
import functools
import math
import os
import tempfile
import threading
import zlib

import numpy as np

MODELS = ["gauss-mod", "unif-mod", "cauchy-mod", "gauss-sev", "unif-sev", "cauchy-sev"]
MODERATE = [m for m in MODELS if m.endswith("-mod")]
SEVERE = [m for m in MODELS if m.endswith("-sev")]

# The testbed's pairing (f101-f130): moderate noise on sphere and
# Rosenbrock, severe noise on these eight functions.
TESTBED_MODERATE = [1, 8]
TESTBED_SEVERE = [1, 8, 7, 10, 14, 17, 19, 21]
FUNCTION_NAMES = {
    1: "sphere", 7: "step ellipsoid", 8: "Rosenbrock", 10: "ellipsoid",
    14: "different powers", 17: "Schaffer F7", 19: "Griewank-Rosenbrock",
    21: "Gallagher 101 peaks",
}


def testbed_pairs(subset="testbed"):
    """(function, model) pairs: the testbed's 30 (f101-f130) or all 8 x 6."""
    if subset == "testbed":
        return [(f, m) for f in TESTBED_MODERATE for m in MODERATE] + \
               [(f, m) for f in TESTBED_SEVERE for m in SEVERE]
    if subset == "all":
        return [(f, m) for f in TESTBED_SEVERE for m in MODELS]
    raise ValueError(f"unknown subset {subset!r}")


def apply(model, f, d, rng):
    """The noisy value of the noise-free precision f >= 0 under `model`."""
    if f < 1e-8:
        return f
    if model.startswith("gauss"):
        beta = 0.01 if model == "gauss-mod" else 1.0
        v = f * math.exp(beta * rng.standard_normal())
    elif model.startswith("unif"):
        alpha, beta = (0.01 * (0.49 + 1 / d), 0.01) if model == "unif-mod" else (0.49 + 1 / d, 1.0)
        u1, u2 = rng.random(2)
        v = f * u1 ** beta * max(1.0, (1e9 / (f + 1e-99)) ** (alpha * u2))
    elif model.startswith("cauchy"):
        alpha, p = (0.01, 0.05) if model == "cauchy-mod" else (1.0, 0.2)
        u = rng.random()
        n1, n2 = rng.standard_normal(2)
        v = f + alpha * max(0.0, 1000.0 + (n1 / (abs(n2) + 1e-199) if u < p else 0.0))
    else:
        raise ValueError(f"unknown noise model {model!r}")
    return v + 1.01e-8


def job_rng(seed, objective, x):
    """The noise of one evaluation: a function of the job's start seed, the
    objective's name and the point's exact bits, so a run is reproducible,
    a re-evaluation (a new proposal, a new seed) draws fresh noise, and two
    points walked from the same held-out start draw independent noise, as in
    the testbed, where every evaluation's noise is independent."""
    bits = np.ascontiguousarray(x, dtype=np.float64).view(np.uint64)
    return np.random.default_rng(
        np.random.SeedSequence([int(seed), zlib.crc32(objective.encode()), *map(int, bits)]))


@functools.lru_cache(maxsize=1024)
def problem(f, i, d):
    import cocoex

    return cocoex.Suite("bbob", "", f"function_indices:{f} dimensions:{d} instance_indices:{i}")[0]


_fopt_lock = threading.Lock()


@functools.lru_cache(maxsize=1024)
def f_opt(f, i, d):
    """The optimal value, from the optimum COCO writes for a problem (as
    bench/bbob/run.py does); the working directory is changed meanwhile, so
    one thread at a time."""
    p = problem(f, i, d)
    with _fopt_lock, tempfile.TemporaryDirectory() as tmp:
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            p._best_parameter("print")
            x = np.atleast_1d(np.loadtxt("._bbob_problem_best_parameter.txt"))
        finally:
            os.chdir(cwd)
    return float(p(x))


def precision(f, i, d, x):
    """The noise-free precision f(x) - f_opt of a point, clipped into the box."""
    x = np.clip(np.asarray(x, float), -5, 5)
    return max(0.0, float(problem(f, i, d)(x)) - f_opt(f, i, d))
