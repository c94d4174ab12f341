#!/usr/bin/env bash
# The quality-diversity benchmark (bench/qd/README.md): yamor's map-elites
# plugin against pyribs on the quadruped and on the 10-joint planar arm.
#
#   bash bench/qd/run.sh [validate|quad|arm|report|all]     (default: all)
#
# Env: YAMOR (default target/release/yamor from the repo root), PYTHON
# (default /tmp/qd/venv/bin/python, a venv with requirements.txt), SEEDS
# (default 1-5), QUAD_BUDGET (3000), ARM_BUDGET (10000), QD_WORK (scratch:
# databases and logs, default /tmp/qd/work). Results: bench/qd/results/*.json
# (a run whose file exists is not run again). Everything listens on
# 127.0.0.1; every process started is stopped on exit (also on Ctrl-C).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
export YAMOR="${YAMOR:-$ROOT/target/release/yamor}"
PYTHON="${PYTHON:-/tmp/qd/venv/bin/python}"
SEEDS="${SEEDS:-1-5}"
QUAD_BUDGET="${QUAD_BUDGET:-3000}"
ARM_BUDGET="${ARM_BUDGET:-10000}"
QD_WORK="${QD_WORK:-/tmp/qd/work}"
WHAT="${1:-all}"
[ -x "$YAMOR" ] || { echo "no yamor binary at $YAMOR (set YAMOR=...)" >&2; exit 1; }
"$PYTHON" -c "import ribs, grpc, grpc_tools, numpy" || {
  echo "$PYTHON lacks ribs/grpcio/grpcio-tools/numpy: pip install -r $HERE/requirements.txt" >&2; exit 1; }

CHILD=""
cleanup() {
  # The Python drivers stop their own organizer and hosts in `finally`;
  # SIGTERM reaches them here, and their children via qdlib.Cluster.close.
  if [ -n "$CHILD" ] && kill -0 "$CHILD" 2>/dev/null; then
    kill -TERM "$CHILD" 2>/dev/null || true
    wait "$CHILD" 2>/dev/null || true
  fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

step() {  # runs one driver in the background so the trap can stop it
  "$PYTHON" "$@" &
  CHILD=$!
  wait "$CHILD"
  CHILD=""
}

mkdir -p "$QD_WORK" "$HERE/results"
cd "$HERE"
case "$WHAT" in validate|all)
  step validate_merge.py "$QD_WORK/validate"
  cp "$QD_WORK/validate/validation.json" "$HERE/results/validation.json" ;; esac
case "$WHAT" in quad|all)
  step quad.py --seeds "$SEEDS" --budget "$QUAD_BUDGET" --work "$QD_WORK" ;; esac
case "$WHAT" in arm|all)
  step arm.py --seeds "$SEEDS" --budget "$ARM_BUDGET" --work "$QD_WORK" ;; esac
case "$WHAT" in report|all)
  step report.py ;; esac
