#!/usr/bin/env python3
"""Adaptation to damage from a map of gaits (issue 53): the driver behind
bench/adapt/run.sh. Steps (each skips what results/runs/ already holds):

  map     yamor run quadruped --optimizer map-elites --budget 20000 --seed 1
  check   per case, a 1-walk ite run (the map's best elite, damaged) and the
          same undamaged: how much the damage hurts the map's best gait
  ite     per case x seed: --optimizer ite --prior MAP --budget 20 --finalists 1
  best    per case: the default CMA-ES run on the damaged robot (2,400 walks)
  powell  per case x seed: --optimizer powell --set variant=interval, 20 walks,
          from the pre-damage gait (learnt.xml as the start of optimize.xml)
  cmaes   per case x seed: --optimizer cmaes --set population=5, 20 walks,
          from the pre-damage gait
  skopt   per case x seed: skopt_adapt.py (gp_minimize, 20 calls, from scratch)
  report  results/*.csv and the table in results/table.md

At most two runs at once (`--jobs`), each with its own copy of the map's
database (ite needs the map run in the database it records into, and one
`yamor run` holds a database at a time) and `--hosts 1`; the map alone
with two hosts. Every run is `nice -n 5`.
"""
import argparse
import json
import os
import pathlib
import queue
import re
import shutil
import subprocess
import sys
import threading
import time
import xml.etree.ElementTree as ET

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parents[1]
YAMOR = os.environ.get("YAMOR", "/tmp/yamor-adapt")
PYTHON = os.environ.get("PYTHON", sys.executable)
WORK = pathlib.Path(os.environ.get("ADAPT_WORK", "/tmp/adapt-work"))
RESULTS = HERE / "results"
RUNS = RESULTS / "runs"
MAP_BUDGET = os.environ.get("MAP_BUDGET", "20000")
BEST_BUDGET = os.environ.get("BEST_BUDGET", "2400")
CASES = ["stuck:5", "limp:2", "weak:0", "upside-down", "friction:0.3", "engine:rapier", "emulated"]
LEARNT_CONFIG = HERE / "learnt_optimize.xml"


def log(msg):
    print(time.strftime("%H:%M:%S", time.gmtime()), msg, flush=True)


def slug(text):
    return re.sub(r"[^A-Za-z0-9]+", "-", text).strip("-")


# ------------------------------------------------------------ yamor run

BEST = re.compile(r"best gait: (\S+) \(([-\d.]+) ± ([\d.]+) cm/s \((\d+) starts, p10 ([-\d.]+), ([-\d.]+)–([-\d.]+)\)")
ROW = re.compile(r"^\s*(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\S+)\s+(\d+)\s+(\S+ cm/s|-)\s+([\d.]+)s")
MAP = re.compile(r"map: (\d+) of (\d+) cells \(([\d.]+) %\), QD score ([\d.]+) m/s over (\d+) results; (\d+) elites")


def yamor_run(key, args, db, hosts):
    out = WORK / "runs" / key
    if out.exists():
        shutil.rmtree(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    cmd = ["nice", "-n", "5", YAMOR, "run", "quadruped", *args, "--db", str(db),
           "--out", str(out), "--hosts", str(hosts)]
    t0 = time.time()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.time() - t0
    (WORK / "runs" / f"{key}.log").write_text(p.stdout + "\n--- stderr\n" + p.stderr)
    if p.returncode != 0:
        raise RuntimeError(f"{key}: exit {p.returncode}: {p.stderr[-2000:]}")
    r = {"key": key, "command": "yamor run quadruped " + " ".join(args), "wall_s": wall,
         "out": str(out), "db": str(db)}
    for line in p.stdout.splitlines():
        m = ROW.match(line)
        if m:
            r.update(run_id=int(m.group(1)), state=m.group(5), evaluations=int(m.group(6)),
                     elapsed_s=float(m.group(8)))
    m = BEST.search(p.stderr)
    if m:
        r["held_out"] = {"mean": float(m.group(2)) / 100, "se": float(m.group(3)) / 100,
                         "n": int(m.group(4)), "p10": float(m.group(5)) / 100,
                         "min": float(m.group(6)) / 100, "max": float(m.group(7)) / 100}
    m = MAP.search(p.stderr)
    if m:
        r["map"] = {"cells": int(m.group(1)), "cells_total": int(m.group(2)),
                    "coverage_pct": float(m.group(3)), "qd_score_m_s": float(m.group(4)),
                    "results": int(m.group(5)), "elites_re_walked": int(m.group(6))}
    r["answer_walk"] = answer_walk(out)
    return r


def answer_walk(out):
    """The 1-based index (in proposal order) of the first learning walk
    whose parameters are the answer's (best_gait.xml's free values), or
    None when evaluations.csv does not say."""
    csv_path, gait = out / "evaluations.csv", out / "best_gait.xml"
    if not (csv_path.exists() and gait.exists()):
        return None
    import csv
    root = ET.fromstring(re.sub(r"<!--.*?-->", "", gait.read_text(), flags=re.S).encode())
    sys.path.insert(0, str(HERE.parent / "qd"))
    import qdlib
    names = qdlib.Problem().names
    want = [qdlib.Problem.get(root, n) for n in names]
    with open(csv_path) as f:
        rows = list(csv.DictReader(f))
    if not rows or any(n not in rows[0] for n in names):
        return None
    rows.sort(key=lambda row: int(row.get("evaluation") or 0))
    for i, row in enumerate(rows):
        if all(abs(float(row[n]) - w) < 1e-9 for n, w in zip(names, want)):
            return i + 1
    return None


# ------------------------------------------------------------ tasks


def learnt_config():
    """optimize.xml's rules with learnt.xml's gait as the start point."""
    learnt = ET.parse(ROOT / "examples/robots/quadruped/learnt.xml").getroot()
    opt = ET.parse(ROOT / "examples/robots/quadruped/optimize.xml").getroot()
    out = ET.Element("yamorconfig")
    out.append(learnt.find("modulelist"))
    for rule in opt.findall("optimize"):
        out.append(rule)
    ET.indent(out)
    text = ('<?xml version="1.0" encoding="UTF-8"?>\n<!-- bench/adapt: examples/robots/quadruped/'
            'optimize.xml with the pre-damage gait (learnt.xml) as its start point; written by run.py -->\n'
            + ET.tostring(out, encoding="unicode") + "\n")
    LEARNT_CONFIG.write_text(text)
    return LEARNT_CONFIG


def map_run_id():
    return json.loads((RUNS / "map.json").read_text())["run_id"]


def tasks(step, cases, seeds):
    """(key, kind, payload) for a step."""
    out = []
    if step == "check":
        for case in ["none", *cases]:
            dmg = [] if case == "none" else ["--damage", case]
            out.append((f"check-{slug(case)}", "yamor",
                        ["--optimizer", "ite", "--prior", str(map_run_id()), *dmg, "--budget", "1",
                         "--finalists", "1", "--seed", "1"]))
    for case in cases:
        dmg = ["--damage", case]
        if step == "best":
            out.append((f"best-{slug(case)}", "yamor", [*dmg, "--seed", "1", "--budget", BEST_BUDGET]))
        for s in seeds:
            if step == "ite":
                out.append((f"ite-{slug(case)}-s{s}", "yamor",
                            ["--optimizer", "ite", "--prior", str(map_run_id()), *dmg, "--budget", "20",
                             "--finalists", "1", "--seed", str(s)]))
            elif step == "itefull":
                # A diagnostic: IT&E without its stop rule, the whole 20 walks.
                out.append((f"itefull-{slug(case)}-s{s}", "yamor",
                            ["--optimizer", "ite", "--prior", str(map_run_id()), *dmg, "--budget", "20",
                             "--finalists", "1", "--seed", str(s), "--set", "stop=0"]))
            elif step == "powell":
                out.append((f"powell-{slug(case)}-s{s}", "yamor",
                            ["--optimizer", "powell", "--set", "variant=interval", "--config",
                             str(LEARNT_CONFIG), *dmg, "--budget", "20", "--finalists", "1", "--seed", str(s)]))
            elif step == "cmaes":
                out.append((f"cmaes-{slug(case)}-s{s}", "yamor",
                            ["--optimizer", "cmaes", "--set", "population=5", "--config",
                             str(LEARNT_CONFIG), *dmg, "--budget", "20", "--finalists", "1", "--seed", str(s)]))
            elif step == "skopt":
                out.append((f"skopt-{slug(case)}-s{s}", "skopt", (case, s)))
    return out


def meta(key):
    parts = key.split("-")
    method = parts[0]
    seed = int(parts[-1][1:]) if re.fullmatch(r"s\d+", parts[-1]) else None
    return method, seed


def run_task(task, db):
    key, kind, payload = task
    if kind == "yamor":
        r = yamor_run(key, payload, db, 1)
        r["case"] = payload[payload.index("--damage") + 1] if "--damage" in payload else "none"
    else:
        case, s = payload
        work = WORK / "skopt" / key
        if work.exists():
            shutil.rmtree(work)
        res = WORK / "skopt" / f"{key}.json"
        t0 = time.time()
        p = subprocess.run(["nice", "-n", "5", PYTHON, str(HERE / "skopt_adapt.py"), "--damage", case,
                            "--seed", str(s), "--out", str(res), "--work", str(work)],
                           capture_output=True, text=True, env={**os.environ, "YAMOR": YAMOR})
        if p.returncode != 0:
            raise RuntimeError(f"{key}: {p.stdout[-1000:]} {p.stderr[-2000:]}")
        r = json.loads(res.read_text())
        r["key"] = key
        r["case"] = case
        r["wall_s"] = time.time() - t0
    method, seed = meta(key)
    r.setdefault("method", method)
    r["seed"] = seed
    return r


def run_all(todo, jobs, dbs):
    q = queue.Queue()
    for t in todo:
        q.put(t)
    errors = []

    def worker(db):
        while True:
            try:
                t = q.get_nowait()
            except queue.Empty:
                return
            try:
                r = run_task(t, db)
                (RUNS / f"{t[0]}.json").write_text(json.dumps(r, indent=1))
                h = r.get("held_out") or {}
                log(f"{t[0]}: {h.get('mean', float('nan')) * 100:.2f} ± {h.get('se', 0) * 100:.2f} cm/s held out, "
                    f"{r.get('evaluations')} walks, {r['wall_s']:.0f} s")
            except Exception as e:  # noqa: BLE001 - reported, the others go on
                errors.append((t[0], str(e)))
                log(f"{t[0]} FAILED: {e}")

    threads = [threading.Thread(target=worker, args=(dbs[k % len(dbs)],)) for k in range(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def seeds_of(text):
    if "-" in text:
        a, b = text.split("-")
        return list(range(int(a), int(b) + 1))
    return [int(v) for v in text.split(",")]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("steps", nargs="?", default="map,check,ite,best,powell,cmaes,skopt,report")
    p.add_argument("--cases", default=",".join(CASES))
    p.add_argument("--seeds", default="1-5")
    p.add_argument("--jobs", type=int, default=2)
    args = p.parse_args()
    RUNS.mkdir(parents=True, exist_ok=True)
    WORK.mkdir(parents=True, exist_ok=True)
    cases = args.cases.split(",")
    seeds = seeds_of(args.seeds)
    learnt_config()
    for step in args.steps.split(","):
        if step == "map":
            if not (RUNS / "map.json").exists():
                log(f"map: {MAP_BUDGET} walks, seed 1, two hosts")
                r = yamor_run("map", ["--optimizer", "map-elites", "--budget", MAP_BUDGET, "--seed", "1"],
                              WORK / "map.db", 2)
                r.update(method="map", seed=1)
                (RUNS / "map.json").write_text(json.dumps(r, indent=1))
                log(f"map: run {r['run_id']}, {r.get('map')}, {r['wall_s']:.0f} s")
            for k in range(args.jobs):
                lane = WORK / f"lane{k}.db"
                if not lane.exists():
                    for suffix in ("", "-wal", "-shm"):
                        src = pathlib.Path(str(WORK / "map.db") + suffix)
                        if src.exists():
                            shutil.copy(src, str(lane) + suffix)
            continue
        if step == "ref":
            # The pre-damage gait (learnt.xml, learnt on rapier: its long run is
            # `yamor experiment gait-time`'s PSO seed 4) walked on rapier from the
            # 20 held-out starts: a candidate best known for engine:rapier.
            key = "ref-engine-rapier-learnt"
            if not (RUNS / f"{key}.json").exists():
                cmd = ["nice", "-n", "5", YAMOR, "sim", "quadruped", "--gait",
                       str(ROOT / "examples/robots/quadruped/learnt.xml"), "--starts", "20", "--engine", "rapier"]
                t0 = time.time()
                p = subprocess.run(cmd, capture_output=True, text=True, check=True)
                m = re.findall(r"([-\d.]+) ± ([\d.]+) cm/s", p.stdout + p.stderr)
                r = {"key": key, "case": "engine:rapier", "method": "ref",
                     "command": "yamor sim quadruped --gait examples/robots/quadruped/learnt.xml --starts 20 --engine rapier",
                     "wall_s": time.time() - t0, "output": p.stdout[-3000:],
                     "held_out": {"mean": float(m[-1][0]) / 100, "se": float(m[-1][1]) / 100, "n": 20}}
                (RUNS / f"{key}.json").write_text(json.dumps(r, indent=1))
                log(f"{key}: {m[-1]} cm/s")
            continue
        if step == "report":
            subprocess.run([PYTHON, str(HERE / "report.py")], check=True)
            continue
        todo = [t for t in tasks(step, cases, seeds) if not (RUNS / f"{t[0]}.json").exists()]
        if not todo:
            continue
        log(f"{step}: {len(todo)} runs")
        dbs = [WORK / f"lane{k}.db" for k in range(args.jobs)]
        errors = run_all(todo, args.jobs, dbs)
        if errors:
            log(f"{step}: {len(errors)} failed: {errors}")


if __name__ == "__main__":
    main()
