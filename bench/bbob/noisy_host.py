#!/usr/bin/env python3
"""A yamor host serving COCO's BBOB functions under the BBOB-noisy noise models.

Serves every objective named `bbob-noisy/<model>/f<F>/i<I>/d<D>` (advertised
as `bbob-noisy/*`), <model> one of bench/bbob/noise.py's MODELS, returning
the NEGATED noisy precision (noise applied to f(x) - f_opt), since yamor
maximises. The noise of an evaluation is drawn from the job's start seed
(`EvaluationJob.spec.seed`: the organizer gives every proposal its own,
and the held-out re-walk the seeds 2^40 + i), the objective's name and the
point, so the same run gives the same values (noise.job_rng).

Built on examples/python/host.py like bench/bbob/host.py; the only addition
is that the evaluation sees the job's seed.

    python3 bench/bbob/noisy_host.py --organizer http://127.0.0.1:7070 --name noisy-1
"""
import argparse
import pathlib
import re
import signal
import sys
import threading

import numpy as np

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "examples" / "python"))
import host as example_host  # noqa: E402  examples/python/host.py

sys.path.insert(0, str(HERE))
import noise  # noqa: E402

NAME = re.compile(r"^bbob-noisy/([a-z]+-[a-z]+)/f(\d+)/i(\d+)/d(\d+)$")
_job = threading.local()  # the seed of the job this thread evaluates


class SeededServicer(example_host.Servicer):
    """examples/python/host.py's servicer, handing the job's start seed to
    the objective (through a thread-local: the example calls the objective
    in the same thread, with the parameters only)."""

    def Evaluate(self, request, context):
        _job.seed = request.job.spec.seed
        try:
            return super().Evaluate(request, context)
        finally:
            _job.seed = None


example_host.Servicer = SeededServicer  # Host.serve builds the servicer by this name


def resolve(name):
    match = NAME.match(name)
    if not match:
        return None
    model, f, i, d = match.group(1), *(int(g) for g in match.groups()[1:])
    if model not in noise.MODELS or not (1 <= f <= 24 and d in (2, 3, 5, 10, 20, 40)):
        return None
    p, fopt = noise.problem(f, i, d), noise.f_opt(f, i, d)

    def evaluate(params):
        # Parameters arrive in the run's order, x0 … x(d-1) (docs/api.md).
        x = np.fromiter(params.values(), float, count=d)
        true = max(0.0, float(p(x)) - fopt)
        return -noise.apply(model, true, d, noise.job_rng(_job.seed, name, x))

    return evaluate


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--organizer", required=True)
    parser.add_argument("--name")
    parser.add_argument("--listen", default="127.0.0.1:0")
    args = parser.parse_args()
    host = example_host.Host(["bbob-noisy/*"], resolve, args.name)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: host.stopped.set())
    host.serve(args.organizer, args.listen)


if __name__ == "__main__":
    main()
