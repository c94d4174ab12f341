#!/usr/bin/env bash
# The bench of morphologies (docs/morphology.md): every robot of `yamor
# robots` × every optimizer × seeds 1..SEEDS, each a whole `yamor run` at
# the default budget, judged on the held-out mean it reports. Appends one
# row per run to $OUT/raw.csv and skips runs already there, so a killed
# bench resumes; then prints the table (summarise.py).
#
#   bash bench/morphology/run.sh                       # everything (hours)
#   ROBOTS="hexapod dog" OPTIMIZERS="cmaes powell" SEEDS=2 BUDGET=600 \
#       bash bench/morphology/run.sh
#   DIRECTION=axis ROBOTS="quadruped hexapod" bash bench/morphology/run.sh
#   OPTIMIZERS="cmaes@surrogate=lq" bash bench/morphology/run.sh
#
# An optimizer entry may carry settings after `@` (`name@key=value@...`,
# each a `yamor run --set`); the whole entry is the row's optimizer, so
# lq-CMA-ES (`cmaes@surrogate=lq`) is a method of its own in the table.
#
# DIRECTION (any, the default, or axis) is `yamor run --direction`: which
# way a walk's velocity counts, in what the optimizer is told and in the
# held-out figure.
set -euo pipefail
cd "$(dirname "$0")/../.."
YAMOR=${YAMOR:-target/release/yamor}
[ -x "$YAMOR" ] || cargo build --release -p yamor
ROBOTS=${ROBOTS:-$("$YAMOR" robots | awk '{print $1}')}
OPTIMIZERS=${OPTIMIZERS:-cmaes powell pso powell-cmaes}
SEEDS=${SEEDS:-5}
BUDGET=${BUDGET:-2400}
DIRECTION=${DIRECTION:-any}
OUT=${OUT:-bench/morphology/results}
mkdir -p "$OUT"
RAW="$OUT/raw.csv"
[ -s "$RAW" ] || echo "robot,optimizer,seed,budget,held_out_cm_s,standard_error_cm_s,walks,wall_s,direction" > "$RAW"
runs=$(mktemp -d)
trap 'rm -rf "$runs"' EXIT
# Seed-major, so a bench stopped part-way leaves whole seeds of the table.
for seed in $(seq "${FIRST_SEED:-1}" "$SEEDS"); do
  for robot in $ROBOTS; do
    for optimizer in $OPTIMIZERS; do
      plugin=${optimizer%%@*}
      settings=()
      if [[ "$optimizer" == *@* ]]; then
        IFS=@ read -ra pairs <<< "${optimizer#*@}"
        for pair in "${pairs[@]}"; do settings+=(--set "$pair"); done
      fi
      if grep -q "^$robot,$optimizer,$seed,$BUDGET,.*,$DIRECTION\$" "$RAW"; then continue; fi
      start=$(date +%s.%N)
      if ! log=$(YAMOR_RUNS="$runs" RUST_BACKTRACE=0 "$YAMOR" run "$robot" \
          --optimizer "$plugin" "${settings[@]}" --seed "$seed" --budget "$BUDGET" --direction "$DIRECTION" \
          --out "$runs/$robot-$optimizer-$seed" 2>&1); then
        echo "FAILED: $robot $optimizer seed $seed" >&2
        echo "$log" | tail -5 >&2
        continue
      fi
      wall=$(awk -v a="$(date +%s.%N)" -v b="$start" 'BEGIN { printf "%.1f", a - b }')
      line=$(echo "$log" | grep '^best gait:')
      mean=$(echo "$line" | sed -E 's/.*\(([-0-9.]+) ± ([0-9.]+) cm\/s.*/\1/')
      se=$(echo "$line" | sed -E 's/.*\(([-0-9.]+) ± ([0-9.]+) cm\/s.*/\2/')
      walks=$(($(wc -l < "$runs/$robot-$optimizer-$seed/evaluations.csv") - 1))
      # Kept so a figure can be walked again (and along the axis: yamor sim).
      mkdir -p "$OUT/gaits"
      cp "$runs/$robot-$optimizer-$seed/best_gait.xml" "$OUT/gaits/$robot-$optimizer-$seed-$DIRECTION.xml"
      echo "$robot,$optimizer,$seed,$BUDGET,$mean,$se,$walks,$wall,$DIRECTION" | tee -a "$RAW"
    done
  done
done
python3 bench/morphology/summarise.py "$RAW"
