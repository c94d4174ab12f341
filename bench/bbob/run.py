#!/usr/bin/env python3
"""yamor's optimizers against scipy, pycma, pyswarms and Nevergrad on the
COCO/BBOB noiseless suite (issue 14). Not part of CI.

yamor's optimizers run as they do for users: a real `yamor organizer`,
Python hosts serving the BBOB problems over gRPC (bench/bbob/host.py,
written against docs/api.md), one run per problem started with StartRun and
read back with ListJobs (every evaluation, in proposal order). The peers
run in this process on the same functions, instances, start points
(uniform in [-5, 5]^d, seeded per problem) and budget, with their own
defaults plus the box:
  scipy   minimize(method="Powell", bounds=[(-5, 5)]*d)
  pycma   cma.fmin2 with bounds [-5, 5], sigma0 = 2.5, IPOP restarts
          (restarts=9, incpopsize=2)
  pycma-lq cma.fmin_lq_surr2, the same with pycma's lq surrogate (the peer
          of yamor's cmaes with surrogate=lq)
  pyswarms GlobalBestPSO(20 particles, c1=c2=0.5, w=0.9, box bounds)
  nevergrad NGOpt (its default optimizer), box bounds

    python3 -m venv bench/bbob/.venv
    bench/bbob/.venv/bin/pip install -r bench/bbob/requirements.txt
    cargo build --release -p yamor
    bench/bbob/.venv/bin/python bench/bbob/run.py --mult 200

Prints a markdown table per dimension (problems solved to 1e-3 and 1e-8,
median evaluations to 1e-3 over the solved ones) and writes the empirical
cumulative distribution (the usual COCO view: fraction of (problem, target)
pairs reached, 51 targets 10^2 … 10^-8, against evaluations / dimension)
as a PNG.
"""
import argparse
import concurrent.futures
import json
import math
import os
import pathlib
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
import zlib

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "python"))
import yamor_grpc as api  # noqa: E402
import grpc  # noqa: E402

YAMOR_METHODS = {
    "yamor-powell-classic": ("powell", {"variant": "classic"}),
    "yamor-powell-stadium": ("powell", {"variant": "stadium"}),
    "yamor-powell-clamp": ("powell", {"variant": "clamp"}),
    "yamor-powell-interval": ("powell", {"variant": "interval"}),
    "yamor-cmaes": ("cmaes", {}),
    "yamor-cmaes-lq": ("cmaes", {"surrogate": "lq"}),
    "yamor-pso": ("pso", {}),
    "yamor-powell-cmaes": ("powell-cmaes", {}),
}
PEERS = ["scipy-powell", "pycma", "pycma-lq", "pyswarms", "nevergrad"]
TARGETS = [10 ** (2 - k / 5) for k in range(51)]  # 1e2 … 1e-8


def problem(f, i, d):
    import cocoex

    return cocoex.Suite("bbob", "", f"function_indices:{f} dimensions:{d} instance_indices:{i}")[0]


def f_opt(p):
    """The optimal value, from the optimum COCO writes for a problem."""
    with tempfile.TemporaryDirectory() as tmp:
        cwd = os.getcwd()
        os.chdir(tmp)
        try:
            p._best_parameter("print")
            x = np.atleast_1d(np.loadtxt("._bbob_problem_best_parameter.txt"))
        finally:
            os.chdir(cwd)
    return float(p(x))


def start_point(f, i, d):
    rng = np.random.default_rng(zlib.crc32(f"{f}-{i}-{d}".encode()))
    return rng.uniform(-5, 5, d)


# ------------------------------------------------------------------ peers


class Budget(Exception):
    pass


class Traced:
    """Counts evaluations, records every value, stops at the budget."""

    def __init__(self, p, budget):
        self.p, self.budget, self.values = p, budget, []

    def __call__(self, x):
        if len(self.values) >= self.budget:
            raise Budget()
        v = float(self.p(np.clip(np.asarray(x, float), -5, 5)))
        self.values.append(v)
        return v


def run_peer(name, f, i, d, budget):
    p = problem(f, i, d)
    x0 = start_point(f, i, d)
    t = Traced(p, budget)
    warnings.simplefilter("ignore")
    try:
        if name == "scipy-powell":
            from scipy.optimize import minimize

            minimize(t, x0, method="Powell", bounds=[(-5, 5)] * d, options={"maxfev": budget})
        elif name in ("pycma", "pycma-lq"):
            import cma

            fmin = cma.fmin2 if name == "pycma" else cma.fmin_lq_surr2
            opts = {"bounds": [-5, 5], "maxfevals": budget, "verbose": -9, "seed": 1}
            fmin(t, x0, 2.5, opts, restarts=9, incpopsize=2)
        elif name == "pyswarms":
            import pyswarms

            bounds = (np.full(d, -5.0), np.full(d, 5.0))
            opt = pyswarms.single.GlobalBestPSO(
                n_particles=20, dimensions=d, options={"c1": 0.5, "c2": 0.5, "w": 0.9},
                bounds=bounds, init_pos=None,
            )
            np.random.seed(1)
            opt.optimize(lambda xs: np.array([t(x) for x in xs]), iters=budget // 20 + 1,
                         verbose=False)
        elif name == "nevergrad":
            import nevergrad as ng

            param = ng.p.Array(init=x0).set_bounds(-5, 5)
            param.random_state = np.random.RandomState(1)
            opt = ng.optimizers.NGOpt(parametrization=param, budget=budget)
            opt.minimize(t)
    except Budget:
        pass
    return t.values


# ------------------------------------------------------------------ yamor


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_hosts(stub, n, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        try:
            hosts = stub.ListHosts(api.organizer_pb2.ListHostsRequest()).hosts
            if sum(h.state == api.organizer_pb2.HOST_STATE_FREE for h in hosts) >= n:
                return
        except grpc.RpcError:
            pass
        time.sleep(0.2)
    sys.exit("the BBOB hosts never registered")


def run_yamor(stub, method, f, i, d, budget):
    optimizer, settings = YAMOR_METHODS[method]
    x0 = start_point(f, i, d)
    run = stub.StartRun(api.organizer_pb2.StartRunRequest(
        name=f"{method}-f{f}-i{i}-d{d}", optimizer=optimizer, settings=settings, seed=1,
        space=api.organizer_pb2.ParameterSpace(bounds=[
            api.organizer_pb2.ParameterBound(name=f"x{k}", min=-5, max=5, start=float(x0[k]))
            for k in range(d)
        ]),
        max_evaluations=budget, objective=f"bbob/f{f}/i{i}/d{d}",
    ))
    for event in stub.WatchRun(api.organizer_pb2.WatchRunRequest(run_id=run.id)):
        if event.run.state != api.organizer_pb2.RUN_STATE_RUNNING:
            if event.run.error:
                raise RuntimeError(f"{method} f{f} i{i} d{d}: {event.run.error}")
            break
    jobs, after = [], 0
    while True:
        page = stub.ListJobs(api.organizer_pb2.ListJobsRequest(
            run_id=run.id, after_id=after, limit=10000, brief=True)).jobs
        if not page:
            break
        jobs.extend(page)
        after = page[-1].id
    jobs.sort(key=lambda j: j.proposal_index)
    return [-j.result.value.value if j.HasField("result") else math.inf for j in jobs]


# ------------------------------------------------------------------ report


def evals_to(values, target):
    best = math.inf
    for n, v in enumerate(values, 1):
        best = min(best, v)
        if best <= target:
            return n
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dims", default="2,5,10,20")
    parser.add_argument("--instances", default="1,2,3")
    parser.add_argument("--functions", default="1-24")
    parser.add_argument("--mult", type=int, default=200, help="budget = mult * dimension")
    parser.add_argument("--hosts", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=12, help="yamor runs at once")
    parser.add_argument("--methods", default=",".join([*YAMOR_METHODS, *PEERS]))
    parser.add_argument("--yamor", default=str(ROOT / "target" / "release" / "yamor"))
    parser.add_argument("--out", default=str(ROOT / "docs" / "img" / "bbob"))
    parser.add_argument("--cache", help="keep every trace in this JSON file and reuse it, "
                        "so methods can be run (and re-run) separately; saved as results "
                        "come in, so an interrupted method resumes where it stopped")
    parser.add_argument("--report-only", action="store_true",
                        help="run nothing: report what --cache holds; a method missing some "
                        "problems of a dimension is reported as not run there")
    args = parser.parse_args()
    if args.cache and pathlib.Path(args.cache).resolve() == \
            pathlib.Path(args.out).with_suffix(".json").resolve():
        sys.exit("--cache is the file the report writes (--out with .json): choose another")
    lo, hi = (int(v) for v in args.functions.split("-"))
    dims = [int(v) for v in args.dims.split(",")]
    instances = [int(v) for v in args.instances.split(",")]
    methods = args.methods.split(",")
    problems = [(f, i, d) for d in dims for f in range(lo, hi + 1) for i in instances]
    fopt = {(f, i, d): f_opt(problem(f, i, d)) for f, i, d in problems}
    traces = {}  # (method, f, i, d) -> values
    if args.cache and os.path.exists(args.cache):
        for key, values in json.load(open(args.cache)).items():
            m, f, i, d = key.split("|")
            traces[(m, int(f), int(i), int(d))] = values
    budget_of = {p: args.mult * p[2] for p in problems}

    def missing(method):
        return [p for p in problems if (method, *p) not in traces]

    def save():
        if args.cache:
            tmp = args.cache + ".tmp"
            with open(tmp, "w") as out:
                json.dump({"|".join(map(str, k)): v for k, v in traces.items()}, out)
            os.replace(tmp, args.cache)  # an interrupted save leaves the old cache whole

    def gather(method, futures):
        """Collects one method's traces as they finish, saving every 24, so a
        long method (NGOpt in 20-D took over an hour) keeps what it has done."""
        for n, fut in enumerate(concurrent.futures.as_completed(futures), 1):
            traces[(method, *futures[fut])] = fut.result()
            if n % 24 == 0:
                save()

    if args.report_only:
        report(methods, dims, problems, fopt, traces, args)
        return
    yamor = [m for m in methods if m in YAMOR_METHODS and missing(m)]
    if yamor:
        tmp = tempfile.mkdtemp(prefix="yamor-bbob-")
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        procs = [subprocess.Popen(
            [args.yamor, "organizer", "--listen", f"127.0.0.1:{port}", "--db", f"{tmp}/yamor.db", "--no-http"],
            stderr=subprocess.DEVNULL)]
        try:
            procs += [subprocess.Popen(
                [sys.executable, str(ROOT / "bench" / "bbob" / "host.py"), "--organizer", url,
                 "--name", f"bbob-{k}"], stdout=subprocess.DEVNULL)
                for k in range(args.hosts)]
            stub = api.organizer_pb2_grpc.OrganizerStub(grpc.insecure_channel(f"127.0.0.1:{port}"))
            wait_hosts(stub, args.hosts)
            for method in yamor:
                started = time.time()
                with concurrent.futures.ThreadPoolExecutor(args.concurrency) as pool:
                    futures = {pool.submit(run_yamor, stub, method, f, i, d, budget_of[(f, i, d)]):
                               (f, i, d) for f, i, d in missing(method)}
                    gather(method, futures)
                print(f"{method}: {time.time() - started:.0f} s", file=sys.stderr)
                save()
        finally:
            for p in procs:
                p.terminate()
            for p in procs:
                p.wait()
    for method in [m for m in methods if m in PEERS and missing(m)]:
        started = time.time()
        with concurrent.futures.ProcessPoolExecutor(2) as pool:
            futures = {pool.submit(run_peer, method, f, i, d, budget_of[(f, i, d)]): (f, i, d)
                       for f, i, d in missing(method)}
            gather(method, futures)
        print(f"{method}: {time.time() - started:.0f} s", file=sys.stderr)
        save()

    report(methods, dims, problems, fopt, traces, args)


def ran_all(traces, method, ps):
    """Whether the cache holds a trace of `method` for every problem in `ps`."""
    return all((method, *p) in traces for p in ps)


def report(methods, dims, problems, fopt, traces, args):
    out = pathlib.Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    summary = {}
    print(f"\nBBOB f{args.functions}, instances {args.instances}, budget {args.mult}·d, "
          "start uniform in [-5,5]^d (seeded per problem)\n")
    for d in dims:
        ps = [p for p in problems if p[2] == d]
        print(f"### {d}-D ({len(ps)} problems)\n")
        print("| method | solved 1e-3 | solved 1e-8 | median evals to 1e-3 |")
        print("|---|---|---|---|")
        for m in methods:
            if not ran_all(traces, m, ps):
                run = sum((m, *p) in traces for p in ps)
                print(f"| {m} | – | – | not run ({run} of {len(ps)} problems) |")
                continue
            hits3 = [evals_to(traces[(m, *p)], fopt[p] + 1e-3) for p in ps]
            hits8 = [evals_to(traces[(m, *p)], fopt[p] + 1e-8) for p in ps]
            solved3 = [h for h in hits3 if h is not None]
            solved8 = sum(h is not None for h in hits8)
            median = statistics.median(solved3) if solved3 else float("nan")
            summary[f"{m}/{d}"] = [len(solved3), solved8, median]
            print(f"| {m} | {len(solved3)} | {solved8} | {median:.0f} |")
        print()
    json.dump({"summary": summary, "args": vars(args)},
              open(out.with_suffix(".json"), "w"), indent=1)
    ecdf(methods, dims, problems, fopt, traces, out.with_suffix(".png"), args)


def ecdf(methods, dims, problems, fopt, traces, path, args):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(dims), figsize=(4.2 * len(dims), 3.8), sharey=True)
    axes = np.atleast_1d(axes)
    for ax, d in zip(axes, dims):
        ps = [p for p in problems if p[2] == d]
        grid = np.logspace(0, math.log10(args.mult), 60)
        for m in [m for m in methods if ran_all(traces, m, ps)]:
            reached = []
            for p in ps:
                values = traces[(m, *p)]
                for t in TARGETS:
                    n = evals_to(values, fopt[p] + t)
                    reached.append(math.inf if n is None else n / d)
            reached = np.array(reached)
            frac = [(reached <= g).mean() for g in grid]
            style = "-" if m.startswith("yamor") else "--"
            ax.plot(grid, frac, style, label=m)
        ax.set_xscale("log")
        ax.set_title(f"{d}-D, {len(ps)} problems")
        ax.set_xlabel("evaluations / dimension")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("fraction of (problem, target) pairs")
    axes[0].legend(fontsize=7, loc="upper left")
    fig.suptitle(f"BBOB f{args.functions}, instances {args.instances}, 51 targets 1e2…1e-8")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
