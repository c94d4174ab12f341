#!/usr/bin/env bash
# Thesis 6.3 rebuilt: gaits learnt in one world (the default single-world
# run) and over a distribution of worlds (paired-slowest), each walked from
# 20 held-out starts on the learning engine, on rapier, and on the emulated
# real robot's hardware (servo lag 40 ms, 2 degrees of backlash, torque at
# 0.8 that sags with speed: `yamor emulate`'s defaults). Seeds 1..$SEEDS.
#
#   bash bench/worlds/thesis63.sh            # YAMOR=target/release/yamor, SEEDS=5
#
# Prints one line per gait and engine; the summary table is in
# docs/benchmarks.md ("Thesis 6.3 rebuilt").
set -euo pipefail
cd "$(dirname "$0")/../.."
YAMOR=${YAMOR:-target/release/yamor}
SEEDS=${SEEDS:-5}
OUT=${OUT:-/tmp/yamor-thesis63}
mkdir -p "$OUT"
figure() { grep -E "cm/s" | tail -1; }
for seed in $(seq 1 "$SEEDS"); do
    for setup in single paired-slowest; do
        dir="$OUT/$setup-$seed"
        if [ ! -f "$dir/best_gait.xml" ]; then
            rm -rf "$dir"
            if [ "$setup" = single ]; then
                "$YAMOR" run quadruped --seed "$seed" --out "$dir" > /dev/null 2>&1
            else
                "$YAMOR" run quadruped --seed "$seed" --worlds paired-slowest --budget 1200 --out "$dir" > /dev/null 2>&1
            fi
        fi
        for walk in "articulated:--engine articulated" "rapier:--engine rapier" "emulated:--as-emulated"; do
            name=${walk%%:*}
            args=${walk#*:}
            # shellcheck disable=SC2086
            line=$("$YAMOR" sim quadruped --gait "$dir/best_gait.xml" --starts 20 $args 2>&1 | figure)
            echo "$setup seed $seed $name: $line"
        done
    done
done
