#!/usr/bin/env bash
# Adaptation to damage from a map of gaits (issue 53): bench/adapt/README.md.
#
#   bash bench/adapt/run.sh [STEPS]   (default map,check,ite,best,powell,cmaes,skopt,report)
#
# Env: YAMOR (the release binary, default /tmp/yamor-adapt), PYTHON (a venv
# with requirements.txt, default /tmp/adapt-venv/bin/python), ADAPT_WORK
# (databases, run directories and logs, default /tmp/adapt-work), CASES
# (comma-separated damages), SEEDS (default 1-5), JOBS (runs at once, 2),
# MAP_BUDGET (the map's walks, 20000), BEST_BUDGET (the best-known CMA-ES runs', 2400).
# Results: bench/adapt/results/runs/*.json, one per run (a run whose file
# exists is not run again), and the CSVs and table.md report.py writes.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export YAMOR="${YAMOR:-/tmp/yamor-adapt}"
PYTHON="${PYTHON:-/tmp/adapt-venv/bin/python}"
export ADAPT_WORK="${ADAPT_WORK:-/tmp/adapt-work}"
[ -x "$YAMOR" ] || { echo "no yamor binary at $YAMOR (set YAMOR=...)" >&2; exit 1; }
"$PYTHON" -c "import grpc, grpc_tools, numpy, skopt" || {
  echo "$PYTHON lacks grpcio/grpcio-tools/numpy/scikit-optimize:" >&2
  echo "  python3 -m venv /tmp/adapt-venv && /tmp/adapt-venv/bin/pip install -r $HERE/requirements.txt" >&2
  exit 1; }
ARGS=("${1:-map,check,ite,best,powell,cmaes,skopt,report}" --seeds "${SEEDS:-1-5}" --jobs "${JOBS:-2}")
[ -n "${CASES:-}" ] && ARGS+=(--cases "$CASES")
exec "$PYTHON" "$HERE/run.py" "${ARGS[@]}"
