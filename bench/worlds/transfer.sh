#!/usr/bin/env bash
# Transfer over run seeds: for ROBOT and seeds 1..$SEEDS, the default
# single-world run and the paired-slowest run (2,400 walks each), each
# answer walked by `yamor sim ROBOT --gait G --worlds 20 --starts 5` (20
# held-out worlds of the robust distribution, both engines), and from 20
# held-out starts in the nominal world on each engine and on the emulated
# real robot's hardware (`--as-emulated`: thesis 6.3 rebuilt).
#
#   ROBOT=dog bash bench/worlds/transfer.sh     # YAMOR=target/release/yamor, SEEDS=5
#
# Prints per seed and protocol the per-engine figures over worlds, all
# worlds with p10/mean, and the nominal figures; docs/benchmarks.md ("Gaits
# in other worlds") holds the tables.
set -euo pipefail
cd "$(dirname "$0")/../.."
YAMOR=${YAMOR:-target/release/yamor}
ROBOT=${ROBOT:-quadruped}
SEEDS=${SEEDS:-5}
OUT=${OUT:-/tmp/yamor-transfer-$ROBOT}
mkdir -p "$OUT"
for seed in $(seq 1 "$SEEDS"); do
    for setup in single paired-slowest; do
        dir="$OUT/$setup-$seed"
        if [ ! -f "$dir/best_gait.xml" ]; then
            rm -rf "$dir"
            if [ "$setup" = single ]; then
                "$YAMOR" run "$ROBOT" --seed "$seed" --out "$dir" > /dev/null 2>&1
            else
                "$YAMOR" run "$ROBOT" --seed "$seed" --worlds paired-slowest --budget 1200 --out "$dir" > /dev/null 2>&1
            fi
        fi
        worlds=$("$YAMOR" sim "$ROBOT" --gait "$dir/best_gait.xml" --worlds 20 --starts 5 2>&1 \
            | grep -E "^(articulated|rapier|all worlds):" | tr '\n' ' ')
        echo "$setup seed $seed worlds: $worlds"
        for walk in "articulated:--engine articulated" "rapier:--engine rapier" "emulated:--as-emulated"; do
            # shellcheck disable=SC2086
            line=$("$YAMOR" sim "$ROBOT" --gait "$dir/best_gait.xml" --starts 20 ${walk#*:} 2>&1 \
                | grep -E "cm/s" | grep -v "^along the long axis" | tail -1)
            echo "$setup seed $seed nominal ${walk%%:*}: $line"
        done
    done
done
