#!/usr/bin/env python3
"""A yamor host serving pyribs' planar-arm QD benchmark as `qd/arm10`.

    python3 bench/qd/arm_host.py --organizer http://127.0.0.1:7070 --name arm-0

The arm of pyribs' tutorial "Learning a repertoire of arm configurations"
(arm repertoire): 10 joints, every link 1 long, the parameters are the
joint angles in the job's order (radians, the run's box is [-pi, pi]).
  value        = -variance of the joint angles (numpy's np.var, ddof 0)
  descriptors  = {"x": hand x, "y": hand y}, the end of the chain, where
                 joint i's absolute angle is the sum of angles 0..i.
The host is examples/python/host.py (registration, heartbeats, refusing
other objectives with FAILED_PRECONDITION) with an Evaluate that answers a
ValueResult carrying the descriptors.
"""
import argparse
import math
import pathlib
import signal
import sys

import grpc
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "examples" / "python"))
import host as base  # noqa: E402
import yamor_grpc as api  # noqa: E402

OBJECTIVE = "qd/arm10"
JOINTS = 10


def arm(angles):
    """(objective, (x, y)) of pyribs' arm tutorial, link lengths 1."""
    theta = np.asarray(angles, dtype=float)
    cum = np.cumsum(theta)
    return -float(np.var(theta)), (float(np.sum(np.cos(cum))), float(np.sum(np.sin(cum))))


class ArmServicer(base.Servicer):
    def Evaluate(self, request, context):
        job = request.job
        if job.objective != OBJECTIVE:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION,
                          f"this host does not serve the objective {job.objective!r}")
        angles = [p.value for p in job.parameters]
        if len(angles) != JOINTS:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT,
                          f"{OBJECTIVE} takes {JOINTS} joint angles, got {len(angles)}")
        value, (x, y) = arm(angles)
        with self.host.lock:
            self.host.evaluations += 1
        if not all(math.isfinite(v) for v in (value, x, y)):
            context.abort(grpc.StatusCode.INTERNAL, "a non-finite arm")
        return api.host_pb2.EvaluateResponse(result=api.common_pb2.EvaluationResult(
            value=api.common_pb2.ValueResult(value=value, descriptors={"x": x, "y": y})))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--organizer", required=True)
    parser.add_argument("--listen", default="127.0.0.1:0")
    parser.add_argument("--name")
    args = parser.parse_args()
    base.Servicer = ArmServicer  # Host.serve builds the module's Servicer
    host = base.Host([OBJECTIVE], lambda name: None, args.name)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: host.stopped.set())
    host.serve(args.organizer, args.listen)


if __name__ == "__main__":
    main()
