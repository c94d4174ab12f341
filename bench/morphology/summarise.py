"""The bench of morphologies' table from raw.csv (run.sh): per robot and
optimizer, the median over seeds of the held-out mean, its worst seed and
spread, walks and wall time; per robot, how far each optimizer's median is
from the best median, and the worst seed from the best gait any run found.

    python3 bench/morphology/summarise.py bench/morphology/results/raw.csv
    python3 bench/morphology/summarise.py --default cmaes [raw.csv]

With `--default NAME`, one row per robot and direction instead: the
default's median (worst seed) and spread over its seeds, the best median of
another optimizer run on at least two seeds, and the goal's two figures
(median within 5 % of the best median, worst seed within 10 % of the best
known gait: the best held-out mean any run of any optimizer reached).
"""

import csv
import statistics
import sys
from collections import defaultdict


def known_median(rows, column, spec):
    """The median of a column over the rows that recorded it (seed 1's
    rows, taken back from the committed table, have no walks or wall time)."""
    values = [float(r[column]) for r in rows if r[column]]
    return format(statistics.median(values), spec) if values else "–"


NAMES = {"cmaes": "CMA-ES", "pso": "PSO", "powell": "Powell",
         "powell-cmaes": "Powell → CMA-ES", "portfolio": "portfolio",
         "cmaes@surrogate=lq": "lq-CMA-ES"}


def read(path):
    runs = defaultdict(list)
    with open(path) as f:
        for row in csv.DictReader(f):
            runs[(row["robot"], row["optimizer"], row["budget"],
                  row.get("direction") or "any")].append(row)
    return runs


def in_file_order(runs):
    """The robots of `runs` in the order raw.csv first names them."""
    return sorted({k[0] for k in runs}, key=lambda r: min(
        i for i, k in enumerate(runs) if k[0] == r))


def default_table(path, default):
    runs = read(path)
    robots = in_file_order(runs)
    print("| robot | direction | seeds of the default | median (worst seed), cm/s | spread over seeds | "
          "best median of another (seeds) | median vs best median | worst vs best known |")
    print("|---|---|---|---|---|---|---|---|")
    held = {"median": 0, "worst": 0, "robots": 0}
    for robot in robots:
        for direction in ("any", "axis"):
            mine = {k: [float(r["held_out_cm_s"]) for r in v] for k, v in runs.items()
                    if k[0] == robot and k[3] == direction}
            own = [v for k, v in mine.items() if k[1] == default]
            if not own:
                continue
            values = own[0]
            med = statistics.median(values)
            worst = min(values)
            others = {k: statistics.median(v) for k, v in mine.items()
                      if k[1] != default and len(v) >= 2}
            best_other = max(others.items(), key=lambda kv: kv[1], default=None)
            best_median = max([med] + list(others.values()))
            best_known = max(x for v in mine.values() for x in v)
            spread = (max(values) - worst) / med if med > 0 else float("nan")
            other = (f"{best_other[1]:.2f} {NAMES.get(best_other[0][1], best_other[0][1])} "
                     f"({len(mine[best_other[0]])})") if best_other else "–"
            vs_median = med / best_median - 1
            vs_known = worst / best_known - 1
            held["robots"] += 1
            held["median"] += vs_median >= -0.05
            held["worst"] += vs_known >= -0.10
            print(f"| {robot} | {direction} | {len(values)} | {med:.2f} ({worst:.2f}) | {spread:.0%} | "
                  f"{other} | {vs_median:+.0%} | {vs_known:+.0%} |")
    print()
    print(f"{NAMES.get(default, default)}'s median is within 5 % of the best median on "
          f"{held['median']} of {held['robots']}; its worst seed within 10 % of the best known on "
          f"{held['worst']} of {held['robots']}.")


def main(path):
    runs = read(path)
    robots = in_file_order(runs)
    print("| robot | optimizer | direction | budget | seeds | median cm/s | worst seed | spread (max−min)/median | "
          "median vs best median | worst vs best known | walks | wall s (median) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    # Figures along the axis and in any direction measure different things:
    # each is judged against its own best.
    groups = [(r, d) for r in robots for d in ("any", "axis")
              if any(k[0] == r and k[3] == d for k in runs)]
    for robot, direction in groups:
        mine = {k: v for k, v in runs.items() if k[0] == robot and k[3] == direction}
        medians = {k: statistics.median(float(r["held_out_cm_s"]) for r in v)
                   for k, v in mine.items()}
        best_median = max(medians.values())
        best_known = max(float(r["held_out_cm_s"]) for v in mine.values() for r in v)
        for key, rows in sorted(mine.items(), key=lambda kv: -medians[kv[0]]):
            values = [float(r["held_out_cm_s"]) for r in rows]
            med = medians[key]
            worst = min(values)
            spread = (max(values) - worst) / med if med > 0 else float("nan")
            print(f"| {robot} | {key[1]} | {key[3]} | {key[2]} | {len(values)} | {med:.2f} | {worst:.2f} | "
                  f"{spread:.0%} | {med / best_median - 1:+.0%} | {worst / best_known - 1:+.0%} | "
                  f"{known_median(rows, 'walks', '.0f')} | {known_median(rows, 'wall_s', '.0f')} |")


if __name__ == "__main__":
    args = sys.argv[1:]
    if args[:1] == ["--default"]:
        default_table(args[2] if len(args) > 2 else "bench/morphology/results/raw.csv", args[1])
    else:
        main(args[0] if args else "bench/morphology/results/raw.csv")
