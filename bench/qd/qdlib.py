"""Shared pieces of the quality-diversity benchmark (bench/qd): a local
cluster (one `yamor organizer`, its hosts), the quadruped's parameter merge
in Python, yamor's candidate starts, batched evaluation over gRPC, and the
grid archive arithmetic (the same binning as yamor's `map::Grid` and
pyribs' `GridArchive`: clamped to the edge bins).

Everything listens on 127.0.0.1; every process started here is stopped by
`Cluster.close()` (also on SIGTERM/SIGINT through the caller's finally).
"""
import math
import os
import pathlib
import re
import signal
import subprocess
import sys
import time
import urllib.request
import xml.etree.ElementTree as ET

import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "examples" / "python"))
import yamor_grpc as api  # noqa: E402
import grpc  # noqa: E402

YAMOR = os.environ.get("YAMOR") or str(ROOT / "target" / "release" / "yamor")
OPTIMIZE_XML = ROOT / "examples" / "robots" / "quadruped" / "optimize.xml"
DEFAULT_GRID = "heading_deg:-180:180:12,height_m:0.02:0.08:6,front_duty:0:1:5,back_duty:0:1:5"
DONE = None  # filled below (job states that end a job)


# ---------------------------------------------------------------- cluster


def _exit_on_signal(signum, _frame):
    raise SystemExit(128 + signum)


class Cluster:
    """An organizer (gRPC + dashboard on free loopback ports) and hosts."""

    def __init__(self, workdir, http=True):
        # SIGTERM/SIGINT become SystemExit, so `with Cluster(...)` stops
        # every process it started.
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, _exit_on_signal)
        self.workdir = pathlib.Path(workdir)
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.procs = []
        err = open(self.workdir / "organizer.log", "w")
        cmd = [YAMOR, "organizer", "--listen", "127.0.0.1:0", "--db", str(self.workdir / "yamor.db")]
        cmd += ["--http", "127.0.0.1:0"] if http else ["--no-http"]
        self.procs.append(subprocess.Popen(cmd, stderr=err, stdout=subprocess.DEVNULL))
        self.url = self.http = None
        deadline = time.time() + 30
        while time.time() < deadline and (self.url is None or (http and self.http is None)):
            text = (self.workdir / "organizer.log").read_text()
            m = re.search(r"organizer listening on (http://[0-9.:]+)", text)
            self.url = m.group(1) if m else None
            m = re.search(r"dashboard and /metrics on (http://[0-9.:]+)", text)
            self.http = m.group(1) if m else None
            if self.procs[0].poll() is not None:
                raise RuntimeError(f"the organizer exited: {text}")
            time.sleep(0.1)
        if self.url is None:
            self.close()
            raise RuntimeError("the organizer printed no address")
        self.channel = grpc.insecure_channel(api.target(self.url))
        self.stub = api.organizer_pb2_grpc.OrganizerStub(self.channel)

    def start(self, cmd, name):
        log = open(self.workdir / f"{name}.log", "w")
        self.procs.append(subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT))

    def sim_hosts(self, n=2, robot="quadruped"):
        for k in range(n):
            self.start([YAMOR, "host", "--sim", robot, "--organizer", self.url, "--name", f"h{k}"],
                       f"host{k}")
        self.wait_hosts(n)

    def wait_hosts(self, n, timeout=60):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                hosts = self.stub.ListHosts(api.organizer_pb2.ListHostsRequest()).hosts
                if sum(h.state == api.organizer_pb2.HOST_STATE_FREE for h in hosts) >= n:
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.2)
        raise RuntimeError(f"{n} hosts never registered")

    def close(self):
        for p in reversed(self.procs):
            if p.poll() is None:
                p.terminate()
        for p in reversed(self.procs):
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        self.procs = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    # -- yamor's own runs ------------------------------------------------

    def yamor_optimize(self, args):
        """`yamor optimize start ARGS --json --organizer URL`: the run's id."""
        cmd = [YAMOR, "optimize", "start", *args, "--json", "--organizer", self.url]
        out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
        doc = __import__("json").loads(out)
        if isinstance(doc, list):
            doc = doc[0]
        run_id = doc.get("id") or doc.get("run", {}).get("id")
        if not run_id:
            raise RuntimeError(f"no run id in {out!r}")
        return int(run_id), cmd

    def wait_run(self, run_id):
        for event in self.stub.WatchRun(api.organizer_pb2.WatchRunRequest(run_id=run_id)):
            if event.run.state != api.organizer_pb2.RUN_STATE_RUNNING:
                if event.run.error:
                    raise RuntimeError(f"run {run_id}: {event.run.error}")
                return event.run

    def run_jobs(self, run_id):
        jobs, after = [], 0
        while True:
            page = self.stub.ListJobs(api.organizer_pb2.ListJobsRequest(
                run_id=run_id, after_id=after, limit=10000, brief=True)).jobs
            if not page:
                break
            jobs.extend(page)
            after = page[-1].id
        return jobs

    def map_json(self, run_id):
        with urllib.request.urlopen(f"{self.http}/runs/{run_id}/map.json", timeout=60) as r:
            return __import__("json").loads(r.read())


# ---------------------------------------------------------------- merge


class Problem:
    """optimize.xml read in Python: the free parameters (file order) with
    bounds and start values, and the rules yamor's OptimizationConfig::apply
    runs. The quadruped uses only amplitude_/offset_/phase_ parameters and
    constraints of the form `name()` (a copy of another parameter); other
    expressions are refused rather than guessed."""

    def __init__(self, path=OPTIMIZE_XML):
        text = pathlib.Path(path).read_text()
        self.root = ET.fromstring(text.encode())
        self.free, self.constraints = [], []
        for rule in self.root.findall("optimize"):
            param = rule.get("param")
            if rule.get("expr") is not None:
                m = re.fullmatch(r"\s*([a-z]+_[0-9_]+)\(\)\s*", rule.get("expr"))
                if not m:
                    raise ValueError(f"unsupported constraint {rule.get('expr')!r}")
                self.constraints.append((param, m.group(1)))
            else:
                lo, hi = float(rule.get("min")), float(rule.get("max"))
                self.free.append((param, lo, hi))
        self.names = [p for p, _, _ in self.free]
        self.lo = np.array([lo for _, lo, _ in self.free])
        self.hi = np.array([hi for _, _, hi in self.free])
        self.start = np.array([self.get(self.root, p) for p in self.names])
        # yamor's is_whole_turn: a phase spanning 2*pi wraps.
        self.periodic = [p.startswith("phase_") and abs((hi - lo) - 2 * math.pi) < 1e-6
                         for p, lo, hi in self.free]

    # -- parameters on the XML tree ---------------------------------------

    @staticmethod
    def _module(root, mid):
        for m in root.find("modulelist").findall("module"):
            if m.get("id") == str(mid):
                return m
        raise KeyError(mid)

    @classmethod
    def _link(cls, root, a, b):
        for link in cls._module(root, a).findall("cpglink"):
            if link.get("to") == str(b):
                return link
        return None

    @classmethod
    def get(cls, root, param):
        field, *ids = param.split("_")
        if field == "phase":
            return float(cls._link(root, *ids).get("phase"))
        attr = {"amplitude": "amplitude", "offset": "offset", "speed": "speed",
                "minangle": "minangle", "maxangle": "maxangle"}[field]
        return float(cls._module(root, ids[0]).get(attr))

    @classmethod
    def set(cls, root, param, value):
        field, *ids = param.split("_")
        if field == "phase":
            a, b = ids
            cls._link(root, a, b).set("phase", num(value))
            back = cls._link(root, b, a)
            if a != b and back is not None:
                back.set("phase", num(-value))
            return
        cls._module(root, ids[0]).set(field, num(value))

    def unit_to_x(self, u):
        """yamor's map-elites `point`: unit box to parameters, wrapped on a
        periodic bound, clamped on the others."""
        x = []
        for (name, lo, hi), periodic, v in zip(self.free, self.periodic, u):
            x.append(wrap(lo + float(v) * (hi - lo), lo, hi, periodic))
        return x

    def x_to_unit(self, x):
        return (np.asarray(x, dtype=float) - self.lo) / (self.hi - self.lo)

    def gait_xml(self, x):
        """The gait with free values x merged and the constraints applied
        (OptimizationConfig::apply), as the gait document a job carries."""
        root = ET.fromstring(ET.tostring(self.root))
        for opt in root.findall("optimize"):
            root.remove(opt)
        for (name, lo, hi), v in zip(self.free, x):
            if not (lo <= v <= hi):
                raise ValueError(f"{name}={v} outside [{lo}, {hi}]")
            self.set(root, name, v)
        for name, source in self.constraints:
            self.set(root, name, self.get(root, source))
        return serialise(root)


def num(value):
    """Rust's `{}` of an f64: shortest round-trip digits, never an exponent."""
    value = float(value)
    if not math.isfinite(value):
        raise ValueError(value)
    return np.format_float_positional(value, unique=True, trim="-")


def wrap(x, lo, hi, periodic):
    """yamor_optimizer_api::Bound::wrap."""
    rng = hi - lo
    if periodic and rng > 0 and not (lo <= x <= hi):
        r = math.fmod(x - lo, rng)
        if r < 0:
            r += abs(rng)
        return min(max(lo + r, lo), hi)
    return min(max(x, lo), hi)


def serialise(root):
    """The gait in the layout yamor writes (RobotConfig::to_xml_string)."""
    lines = ['<?xml version="1.0" encoding="UTF-8"?>', "<yamorconfig>", "  <modulelist>"]
    for m in root.find("modulelist").findall("module"):
        attrs = " ".join(f'{k}="{m.get(k)}"' for k in
                         ("id", "amplitude", "offset", "speed", "minangle", "maxangle"))
        lines.append(f"    <module {attrs}>")
        for child in m:
            if child.tag == "bluetooth":
                lines.append(f'      <bluetooth to="{child.get("to")}"/>')
            elif child.tag == "cpglink":
                lines.append(f'      <cpglink to="{child.get("to")}" phase="{child.get("phase")}"'
                             f' weight="{child.get("weight")}"/>')
            else:
                raise ValueError(f"unexpected element {child.tag}")
        lines.append("    </module>")
    lines += ["  </modulelist>", "</yamorconfig>", ""]
    return "\n".join(lines)


# ---------------------------------------------------------------- starts


M64 = (1 << 64) - 1
GOLDEN_GAMMA = 0x9E3779B97F4A7C15
HELD_OUT_FIRST_SEED = 1 << 40
MAX_HELD_OUT = 1 << 20


def mix64(z):
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)


def candidate_seed(run_seed, proposal):
    """core/src/starts.rs candidate_seed: the start of a run's proposal."""
    state = (mix64(run_seed) + ((proposal + 1) * GOLDEN_GAMMA)) & M64
    seed = mix64(state)
    while ((seed - HELD_OUT_FIRST_SEED) & M64) < MAX_HELD_OUT:
        seed = mix64(seed)
    return seed


# ---------------------------------------------------------------- evaluation

DONE = {api.organizer_pb2.JOB_STATE_DONE, api.organizer_pb2.JOB_STATE_FAILED,
        api.organizer_pb2.JOB_STATE_CANCELLED}


def walk_job(problem, x, seed, warmup=8.0, measure=12.0):
    """The job a yamor map run submits for x (same spec: 8 s warm-up, 12 s
    measured, 0.5 s samples, the proposal's fresh start, nominal world)."""
    return api.organizer_pb2.JobRequest(job=api.common_pb2.EvaluationJob(
        robot=api.common_pb2.Robot(example="quadruped"),
        gait_xml=problem.gait_xml(x),
        parameters=[api.common_pb2.Parameter(name=n, value=float(v))
                    for n, v in zip(problem.names, x)],
        spec=api.common_pb2.EvaluationSpec(warmup_s=warmup, measure_s=measure,
                                           sample_interval_s=0.5, seed=seed),
    ))


def value_job(objective, x):
    return api.organizer_pb2.JobRequest(job=api.common_pb2.EvaluationJob(
        objective=objective,
        parameters=[api.common_pb2.Parameter(name=f"x{i}", value=float(v))
                    for i, v in enumerate(x)],
    ))


def evaluate(stub, requests, owner):
    """Submits all jobs, waits for all: per job (fitness, descriptors dict,
    result) or None when it failed."""
    ids = list(stub.SubmitJobs(api.organizer_pb2.SubmitJobsRequest(
        jobs=requests, owner=owner)).job_ids)
    out = {}
    watch = stub.WatchJobs(api.organizer_pb2.WatchJobsRequest(job_ids=ids, brief=False))
    for job in watch:
        if job.state in DONE and job.id not in out:
            if job.state == api.organizer_pb2.JOB_STATE_DONE and job.HasField("result"):
                r = job.result
                kind = r.WhichOneof("kind")
                if kind == "walk":
                    out[job.id] = (r.walk.velocity_m_s, dict(r.walk.descriptors), r)
                elif kind == "value":
                    out[job.id] = (r.value.value, dict(r.value.descriptors), r)
                else:
                    out[job.id] = None
            else:
                out[job.id] = None
            if len(out) == len(ids):
                watch.cancel()
                break
    return [out[i] for i in ids]


# ---------------------------------------------------------------- grid


class Grid:
    """name:min:max:bins,... as yamor's map::Grid (edge bins clamp)."""

    def __init__(self, text):
        self.axes = []
        for part in text.split(","):
            name, lo, hi, bins = part.split(":")
            self.axes.append((name, float(lo), float(hi), int(bins)))
        self.names = [a[0] for a in self.axes]
        self.cells = int(np.prod([a[3] for a in self.axes]))

    def cell(self, d):
        c = 0
        for (name, lo, hi, bins), v in zip(self.axes, d):
            b = math.floor((v - lo) / (hi - lo) * bins)
            b = 0 if (math.isnan(b) if isinstance(b, float) else False) or b < 0 else min(b, bins - 1)
            c = c * bins + b
        return c

    def archive(self, results):
        """results: (fitness, descriptor list) pairs -> {cell: best fitness};
        a tie keeps the earlier elite (an archive replaces on strictly better)."""
        best = {}
        for f, d in results:
            c = self.cell(d)
            if c not in best or f > best[c]:
                best[c] = f
        return best


def describe(d, names):
    return [float(d[n]) for n in names]


def pyribs_scheduler(method, dim, grid, x0, seed):
    """pyribs' archive and scheduler for `method` (pyribs-cma-me or
    pyribs-iso-line) over the unit box of `dim` parameters, on yamor's
    `grid`, with yamor's map-elites defaults: 5 emitters, batch 12, sigma
    0.1, line sigma 0.2, starting at `x0`."""
    from ribs.archives import GridArchive
    from ribs.emitters import EvolutionStrategyEmitter, IsoLineEmitter
    from ribs.schedulers import Scheduler

    archive = GridArchive(solution_dim=dim, dims=[a[3] for a in grid.axes],
                          ranges=[(a[1], a[2]) for a in grid.axes], seed=seed)
    bounds = [(0.0, 1.0)] * dim
    if method == "pyribs-cma-me":
        emitters = [EvolutionStrategyEmitter(
            archive, x0=x0, sigma0=0.1, ranker="2imp", selection_rule="filter",
            restart_rule="no_improvement", batch_size=12, bounds=bounds,
            seed=seed * 1000 + k) for k in range(5)]
    else:
        emitters = [IsoLineEmitter(archive, iso_sigma=0.1, line_sigma=0.2, x0=x0,
                                   bounds=bounds, batch_size=12, seed=seed * 1000 + k)
                    for k in range(5)]
    return archive, Scheduler(archive, emitters)
