"""The bench of morphologies' table from raw.csv (run.sh): per robot and
optimizer, the median over seeds of the held-out mean, its worst seed and
spread, walks and wall time; per robot, how far each optimizer's median is
from the best median, and the worst seed from the best gait any run found.

    python3 bench/morphology/summarise.py bench/morphology/results/raw.csv
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


def main(path):
    runs = defaultdict(list)
    with open(path) as f:
        for row in csv.DictReader(f):
            runs[(row["robot"], row["optimizer"], row["budget"],
                  row.get("direction") or "any")].append(row)
    robots = sorted({k[0] for k in runs}, key=lambda r: min(
        i for i, k in enumerate(runs) if k[0] == r))
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
    main(sys.argv[1] if len(sys.argv) > 1 else "bench/morphology/results/raw.csv")
