#!/usr/bin/env python3
"""Plain Bayesian optimization from scratch on the damaged quadruped:
scikit-optimize's `gp_minimize` (default settings, n_calls 20) through the
external-optimizer contract (docs/api.md: SubmitJobs + WatchJobs against a
`yamor organizer`), then its best point re-walked from the 20 held-out
starts a `yamor run` uses (seeds 2^40 .. 2^40+19).

    python bench/adapt/skopt_adapt.py --damage stuck:5 --seed 1 --out R.json --work DIR

One organizer and one `yamor host --sim quadruped` (started here, stopped
on exit). Each call i walks one job: the gait of optimize.xml with the 7
free values merged (bench/qd/qdlib.py's merge, checked byte-identical
against yamor's own), 8 s warm-up + 12 s measured, from the start a yamor
run of that seed gives its proposal i (candidate_seed(seed, i)), with the
damage applied to the job's spec as `yamor run --damage` applies it
(core/src/damage.rs). Values are maximised; gp_minimize minimises
-velocity in m/s. random_state = seed.
"""
import argparse
import json
import math
import os
import pathlib
import sys
import time

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[0] / "qd"))
import qdlib  # noqa: E402
from qdlib import api  # noqa: E402

HELD_OUT_FIRST_SEED = 1 << 40


def apply_damage(spec, damage):
    """core/src/damage.rs Damage::apply on a protobuf EvaluationSpec."""
    kind, _, value = damage.partition(":")
    c = api.common_pb2
    modes = {"stuck": c.DEFECT_MODE_STUCK, "limp": c.DEFECT_MODE_LIMP, "weak": c.DEFECT_MODE_WEAK}
    if kind in modes:
        spec.defects.append(c.ModuleDefect(module_id=int(value), mode=modes[kind]))
    elif kind == "dead-cpg":
        spec.dead_cpg.append(int(value))
    elif kind == "upside-down":
        spec.upside_down = True
    elif kind == "friction":
        spec.ground_friction = float(value)
    elif kind == "engine":
        spec.world.engine = value
    elif kind == "lag":
        spec.world.servo_lag_s = float(value)
    elif kind == "emulated":
        # Hardware::EMULATED: 40 ms lag, 2 degrees of play, 80 % torque, sagging.
        spec.world.mass_scale = 1.0
        spec.world.torque_scale = 0.8
        spec.world.speed_scale = 1.0
        spec.world.servo_lag_s = 0.04
        spec.world.backlash_rad = 2.0 * math.pi / 180.0
        spec.world.torque_sags = True
    elif kind == "none":
        pass
    else:
        raise ValueError(f"unknown damage {damage!r}")


def job(problem, x, seed, damage):
    request = qdlib.walk_job(problem, x, seed)
    apply_damage(request.job.spec, damage)
    return request


def spread(values):
    n = len(values)
    mean = sum(values) / n
    se = math.sqrt(sum((v - mean) ** 2 for v in values) / (n - 1)) / math.sqrt(n) if n > 1 else 0.0
    import numpy as np
    return {"n": n, "mean": mean, "se": se, "p10": float(np.percentile(values, 10)),
            "min": min(values), "max": max(values)}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--damage", required=True)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--calls", type=int, default=20)
    p.add_argument("--held-out", type=int, default=20)
    p.add_argument("--out", required=True)
    p.add_argument("--work", required=True)
    args = p.parse_args()
    from skopt import gp_minimize

    problem = qdlib.Problem()
    space = [(float(lo), float(hi)) for _, lo, hi in problem.free]
    owner = f"skopt-{args.damage}-s{args.seed}"
    started = time.time()
    with qdlib.Cluster(args.work, http=False) as cluster:
        cluster.sim_hosts(1)
        ready = time.time()
        walks = []

        def f(x):
            i = len(walks)
            r = qdlib.evaluate(cluster.stub, [job(problem, x, qdlib.candidate_seed(args.seed, i),
                                                  args.damage)], owner)[0]
            v = r[0] if r is not None else 0.0
            walks.append({"call": i, "x": [float(t) for t in x], "velocity_m_s": v,
                          "failed": r is None})
            return -v

        res = gp_minimize(f, space, n_calls=args.calls, random_state=args.seed)
        learnt = time.time()
        best_i = int(min(range(len(res.func_vals)), key=lambda k: res.func_vals[k]))
        x_best = [float(t) for t in res.x]
        held = qdlib.evaluate(cluster.stub, [job(problem, x_best, HELD_OUT_FIRST_SEED + k, args.damage)
                                             for k in range(args.held_out)], owner + "-held-out")
        failed = sum(r is None for r in held)
        values = [r[0] for r in held if r is not None]
    done = time.time()
    out = {
        "method": "skopt", "damage": args.damage, "seed": args.seed,
        "command": f"python bench/adapt/skopt_adapt.py --damage {args.damage} --seed {args.seed}",
        "evaluations": len(walks), "held_out_failed": failed,
        "held_out": spread(values) if values else None,
        "answer_walk": best_i + 1, "answer_x": dict(zip(problem.names, x_best)),
        "best_walk_m_s": -float(res.fun),
        "wall_s": done - started, "learn_s": learnt - ready, "cluster_start_s": ready - started,
        "walks": walks,
    }
    pathlib.Path(args.out).write_text(json.dumps(out, indent=1))
    h = out["held_out"]
    print(f"skopt {args.damage} seed {args.seed}: {h['mean']*100:.2f} ± {h['se']*100:.2f} cm/s held out "
          f"({len(walks)} walks, answer from walk {best_i + 1}), {done - started:.0f} s", flush=True)


if __name__ == "__main__":
    main()
