#!/usr/bin/env bash
# How much of a gait's speed goes along the robot's long axis: every kept
# best gait of the bench (results/gaits/ROBOT-OPTIMIZER-SEED-DIRECTION.xml)
# walked from the first STARTS held-out starts by `yamor sim`, which prints
# the velocity in any direction and the part along the long axis. A gait
# found with `--direction any` that walks sideways shows here.
#
#   bash bench/morphology/along_axis.sh                  # every kept gait
#   ROBOTS="hexapod tripod" bash bench/morphology/along_axis.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
YAMOR=${YAMOR:-target/release/yamor}
[ -x "$YAMOR" ] || cargo build --release -p yamor
ROBOTS=${ROBOTS:-quadruped dog hexapod tripod salamander mudskipper}
STARTS=${STARTS:-10}
GAITS=${GAITS:-bench/morphology/results/gaits}
echo "| robot | gait (optimizer, seed, objective) | any direction, cm/s | along the long axis, cm/s | share along |"
echo "|---|---|---|---|---|"
for robot in $ROBOTS; do
  for gait in "$GAITS/$robot"-*.xml; do
    [ -e "$gait" ] || continue
    out=$("$YAMOR" sim "$robot" --gait "$gait" --starts "$STARTS" 2>&1)
    any=$(echo "$out" | grep '^velocity ' | sed -E 's/^velocity ([-0-9.]+ ± [0-9.]+) cm\/s.*/\1/')
    along=$(echo "$out" | grep '^along the long axis ' | sed -E 's/^along the long axis ([-0-9.]+ ± [0-9.]+) cm\/s.*/\1/')
    share=$(awk -v a="${any%% *}" -v b="${along%% *}" 'BEGIN { printf "%.0f %%", (a > 0 ? 100 * b / a : 0) }')
    name=$(basename "$gait" .xml)
    echo "| $robot | ${name#"$robot"-} | $any | $along | $share |"
  done
done
