#!/usr/bin/env bash
# Page weight and load time of a 2,400-walk run's pages as the read-only
# dashboard serves them (issue 50: the trials table was one page of every
# row). Makes the run once (`yamor run quadruped --seed 7`, about a minute
# on two cores) in $DIR, then fetches each page three times and prints the
# median time.
#
#   bash bench/dashboard_weight.sh                  # this build
#   YAMOR=/tmp/yamor-old bash bench/dashboard_weight.sh   # another build, same run
set -euo pipefail
cd "$(dirname "$0")/.."
YAMOR=${YAMOR:-target/release/yamor}
[ -x "$YAMOR" ] || cargo build --release -p yamor
DIR=${DIR:-/tmp/yamor-dashboard-weight}
PORT=${PORT:-7181}
mkdir -p "$DIR"
if [ ! -s "$DIR/yamor.db" ]; then
  YAMOR_RUNS="$DIR" "$YAMOR" run quadruped --seed 7 --db "$DIR/yamor.db" --out "$DIR/run" 2> "$DIR/run.log"
fi
"$YAMOR" dashboard "$DIR/yamor.db" --http "127.0.0.1:$PORT" > "$DIR/dashboard.log" 2>&1 &
pid=$!
trap 'kill $pid 2>/dev/null' EXIT
for _ in $(seq 100); do curl -s -o /dev/null "http://127.0.0.1:$PORT/runs" && break; sleep 0.1; done
for path in /runs/1 /runs/1/trials "/runs/1/trials?q=velocity+%3E+10&sort=value&order=desc" /runs/1/trials.csv; do
  for _ in 1 2 3; do
    curl -s -o /dev/null -w "%{http_code} %{size_download} %{time_total}\n" "http://127.0.0.1:$PORT$path"
  done | sort -k3 -n | sed -n 2p |
    awk -v p="$path" '{ printf "%s: HTTP %s, %d bytes, %.3f s (median of 3)\n", p, $1, $2, $3 }'
done
