#!/usr/bin/env python3
"""A yamor host serving Python objectives, written from proto/ alone.

    python3 examples/python/host.py --organizer http://127.0.0.1:7070 \
        --objective demo/sphere

It listens on 127.0.0.1 (a free port unless --listen says otherwise),
prints `host NAME listening on URL`, registers with the organizer and
heartbeats until Ctrl-C, then deregisters. It follows docs/api.md: it
advertises the objectives it serves in GetInfo, refuses any other objective
with FAILED_PRECONDITION, and returns values to be MAXIMISED.

Use it as a library: `Host(objectives, resolve).serve(...)` where
`resolve(name)` returns a function of the parameters (a dict, in the job's
order) or None; bench/bbob/host.py serves COCO's BBOB problems that way.
"""
import argparse
import concurrent.futures
import math
import signal
import sys
import threading
import time

import grpc

import yamor_grpc as api


def say(line, stream=None):
    """Print a status line; a reader that went away must not stop the host."""
    try:
        print(line, file=stream or sys.stdout, flush=True)
    except (BrokenPipeError, ValueError):
        pass


def log(line):
    say(line, sys.stderr)


DEMOS = {
    # -(sum (x - 0.3)^2): maximal (0) at 0.3 in every parameter.
    "demo/sphere": lambda p: -sum((v - 0.3) ** 2 for v in p.values()),
    # An objective whose code is broken: every call raises, which gRPC
    # reports as UNKNOWN. The organizer retries the job elsewhere and fails
    # it after its attempts; this host stays up.
    "demo/raises": lambda p: 1.0 / 0.0,
}


class Servicer(api.host_pb2_grpc.HostAgentServicer):
    def __init__(self, host):
        self.host = host

    def GetInfo(self, request, context):
        return api.host_pb2.HostInfo(
            name=self.host.name,
            backend=api.host_pb2.BACKEND_UNSPECIFIED,
            robot="python",
            simulation_mode=True,
            version="examples/python",
            evaluations=self.host.evaluations,
            objectives=self.host.objectives,
        )

    def Evaluate(self, request, context):
        job = request.job
        function = self.host.resolve(job.objective)
        if function is None:
            context.abort(
                grpc.StatusCode.FAILED_PRECONDITION,
                f"this host does not serve the objective {job.objective!r}",
            )
        parameters = {p.name: p.value for p in job.parameters}
        with self.host.lock:  # one evaluation at a time
            value = float(function(parameters))
            self.host.evaluations += 1
        if not math.isfinite(value):
            context.abort(grpc.StatusCode.INTERNAL, f"the objective returned {value}")
        return api.host_pb2.EvaluateResponse(
            result=api.common_pb2.EvaluationResult(value=api.common_pb2.ValueResult(value=value))
        )


class Host:
    def __init__(self, objectives, resolve, name=None):
        self.objectives = list(objectives)
        self.resolve = resolve
        self.name = name
        self.lock = threading.Lock()
        self.evaluations = 0
        self.stopped = threading.Event()

    def serve(self, organizer=None, listen="127.0.0.1:0", token=None):
        server = grpc.server(concurrent.futures.ThreadPoolExecutor(max_workers=4))
        api.host_pb2_grpc.add_HostAgentServicer_to_server(Servicer(self), server)
        port = server.add_insecure_port(listen)
        server.start()
        address = f"http://{listen.rsplit(':', 1)[0]}:{port}"
        self.name = self.name or address
        say(f"host {self.name} listening on {address}")
        registration = None
        if organizer:
            registration = threading.Thread(
                target=self.keep_registered, args=(organizer, address, token), daemon=True
            )
            registration.start()
        self.stopped.wait()
        if registration:
            registration.join(timeout=5)
        server.stop(grace=2)

    def keep_registered(self, organizer, address, token):
        """Register, heartbeat, re-register on NOT_FOUND or a lost organizer."""
        metadata = [("authorization", f"Bearer {token}")] if token else []
        channel = grpc.insecure_channel(api.target(organizer))
        stub = api.organizer_pb2_grpc.OrganizerStub(channel)
        host_id, interval, backoff = None, 1.0, 0.1
        while not self.stopped.is_set():
            try:
                if host_id is None:
                    # The organizer calls GetInfo back before it answers.
                    reply = stub.RegisterHost(
                        api.organizer_pb2.RegisterHostRequest(name=self.name, address=address),
                        metadata=metadata,
                        timeout=10,
                    )
                    host_id, interval = reply.host.id, reply.heartbeat_interval_s or 1.0
                    backoff = 0.1
                    say(f"registered as host {host_id}")
                else:
                    stub.Heartbeat(
                        api.organizer_pb2.HeartbeatRequest(host_id=host_id),
                        metadata=metadata,
                        timeout=10,
                    )
                self.stopped.wait(interval)
            except grpc.RpcError as error:
                if error.code() != grpc.StatusCode.NOT_FOUND:
                    log(f"organizer: {error.code().name}: {error.details()}")
                host_id = None  # NOT_FOUND or a lost organizer: register again
                self.stopped.wait(backoff)
                backoff = min(backoff * 2, 5.0)
            except Exception as error:  # keep heartbeating whatever else fails
                log(f"registration: {error!r}")
                self.stopped.wait(backoff)
        if host_id is not None:
            try:
                stub.DeregisterHost(
                    api.organizer_pb2.DeregisterHostRequest(host_id=host_id),
                    metadata=metadata,
                    timeout=2,
                )
            except grpc.RpcError:
                pass


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--organizer", help="register with this organizer (http://host:port)")
    parser.add_argument("--listen", default="127.0.0.1:0")
    parser.add_argument("--name")
    parser.add_argument(
        "--objective", action="append", choices=sorted(DEMOS), required=True,
        help="serve this demo objective (repeatable)",
    )
    parser.add_argument("--token", help="the cluster's shared token, beyond loopback")
    args = parser.parse_args()
    host = Host(args.objective, lambda name: DEMOS.get(name) if name in args.objective else None,
                args.name)
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: host.stopped.set())
    host.serve(args.organizer, args.listen, args.token)


if __name__ == "__main__":
    main()
