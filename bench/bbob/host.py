#!/usr/bin/env python3
"""A yamor host serving COCO's BBOB noiseless problems (`cocoex`).

Serves every objective named `bbob/f<F>/i<I>/d<D>` (advertised as
`bbob/*`), returning the NEGATED function value, since yamor maximises.
Built on examples/python/host.py, so it follows docs/api.md exactly as a
user's host would.

    python3 bench/bbob/host.py --organizer http://127.0.0.1:7070 --name bbob-1
"""
import argparse
import functools
import pathlib
import re
import signal
import sys

import cocoex
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"))
from host import Host  # noqa: E402

NAME = re.compile(r"^bbob/f(\d+)/i(\d+)/d(\d+)$")


@functools.lru_cache(maxsize=512)
def problem(f, i, d):
    suite = cocoex.Suite("bbob", "", f"function_indices:{f} dimensions:{d} instance_indices:{i}")
    return suite[0]


def resolve(name):
    match = NAME.match(name)
    if not match:
        return None
    f, i, d = (int(g) for g in match.groups())
    if not (1 <= f <= 24 and d in (2, 3, 5, 10, 20, 40)):
        return None
    p = problem(f, i, d)
    # Parameters arrive in the run's order, x0 … x(d-1) (docs/api.md).
    return lambda params: -float(p(np.fromiter(params.values(), float, count=d)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--organizer", required=True)
    parser.add_argument("--name")
    parser.add_argument("--listen", default="127.0.0.1:0")
    args = parser.parse_args()
    host = Host(["bbob/*"], resolve, args.name)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: host.stopped.set())
    host.serve(args.organizer, args.listen)


if __name__ == "__main__":
    main()
