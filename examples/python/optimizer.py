#!/usr/bin/env python3
"""An external optimizer driving a yamor cluster, written from proto/ alone.

    python3 examples/python/optimizer.py --organizer http://127.0.0.1:7070 \
        --objective demo/sphere --dims 3 --budget 200

A (1+λ) evolution strategy with a shrinking step in the box [-1, 1]^d:
each generation is submitted at once with SubmitJobs (so every host is
busy), its results are collected with WatchJobs in whatever order they
finish, and the best is kept. Values are MAXIMISED (docs/api.md). Prints
`best VALUE at [x...] after N evaluations`.
"""
import argparse
import random
import sys

import grpc

import yamor_grpc as api


def fitness(result):
    """The number an optimizer maximises, by the kind of result: a walk's
    velocity (m/s), a value, or a plan's fewer moves (an unfinished build
    10^6 lower)."""
    kind = result.WhichOneof("kind")
    if kind == "walk":
        return result.walk.velocity_m_s
    if kind == "value":
        return result.value.value
    if kind == "plan":
        return -result.plan.moves - (0 if result.plan.built else 1e6)
    raise ValueError("a result without a kind")


def evaluate_all(stub, objective, points, metadata):
    """Submits one job per point and waits for all of them; None if failed."""
    jobs = [
        api.organizer_pb2.JobRequest(
            job=api.common_pb2.EvaluationJob(
                objective=objective,
                parameters=[
                    api.common_pb2.Parameter(name=f"x{i}", value=v) for i, v in enumerate(x)
                ],
            )
        )
        for x in points
    ]
    ids = list(
        stub.SubmitJobs(
            api.organizer_pb2.SubmitJobsRequest(jobs=jobs, owner="optimizer.py"),
            metadata=metadata,
        ).job_ids
    )
    values = {}
    done = {api.organizer_pb2.JOB_STATE_DONE, api.organizer_pb2.JOB_STATE_FAILED,
            api.organizer_pb2.JOB_STATE_CANCELLED}
    watch = stub.WatchJobs(api.organizer_pb2.WatchJobsRequest(job_ids=ids, brief=True),
                           metadata=metadata)
    for job in watch:
        if job.state in done:
            ok = job.state == api.organizer_pb2.JOB_STATE_DONE and job.HasField("result")
            values[job.id] = fitness(job.result) if ok else None
            if len(values) == len(ids):
                watch.cancel()
                break
    return [values[i] for i in ids]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--organizer", default="http://127.0.0.1:7070")
    parser.add_argument("--objective", required=True)
    parser.add_argument("--dims", type=int, default=3)
    parser.add_argument("--budget", type=int, default=200)
    parser.add_argument("--population", type=int, default=8)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--token")
    args = parser.parse_args()
    metadata = [("authorization", f"Bearer {args.token}")] if args.token else []
    rng = random.Random(args.seed)
    stub = api.organizer_pb2_grpc.OrganizerStub(
        grpc.insecure_channel(api.target(args.organizer))
    )
    best_x = [rng.uniform(-1, 1) for _ in range(args.dims)]
    best = None
    step, used = 0.5, 0
    while used < args.budget:
        n = min(args.population, args.budget - used)
        points = [best_x] if best is None else []
        while len(points) < n:
            points.append([min(1.0, max(-1.0, v + rng.gauss(0, step))) for v in best_x])
        try:
            values = evaluate_all(stub, args.objective, points, metadata)
        except grpc.RpcError as error:
            sys.exit(f"the organizer at {args.organizer}: {error.code().name}: {error.details()}")
        used += len(points)
        improved = False
        for x, v in zip(points, values):
            if v is not None and (best is None or v > best):
                best, best_x, improved = v, x, True
        step = step * 1.2 if improved else step * 0.7
    if best is None:
        sys.exit("every evaluation failed")
    print(f"best {best:.6g} at {[round(v, 4) for v in best_x]} after {used} evaluations")


if __name__ == "__main__":
    main()
