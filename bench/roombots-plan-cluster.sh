#!/usr/bin/env bash
# Planning on the cluster against planning in-process, on this machine
# (issue 34). The same builds (random starts of seeds 0..N-1) three ways:
#   in-process: `yamor roombots build --trials N` (one thread, no jobs);
#   cluster:    `yamor roombots plan --starts N` (an organizer, SQLite and
#               one planning host per core in one process: every build a
#               job, queued, dispatched over gRPC, stored);
#   resumed:    the same command again on the same database (every plan
#               re-used, nothing planned).
# Prints wall times and the ratios. Needs `cargo build --release -p yamor`.
set -euo pipefail
BIN=${BIN:-target/release/yamor}
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
wall() { local s e; s=$(date +%s.%N); "$@" >"$TMP/out" 2>"$TMP/err" || { cat "$TMP/out" "$TMP/err" >&2; exit 1; }; e=$(date +%s.%N); echo "$e - $s" | bc; }
run() {
    local label=$1 n=$2; shift 2
    local inproc cluster resumed
    inproc=$(wall "$BIN" roombots build "$@" --trials "$n")
    cluster=$(wall "$BIN" roombots plan "$@" --starts "$n" --db "$TMP/$label.db")
    grep '^built' "$TMP/out"
    resumed=$(wall "$BIN" roombots plan "$@" --starts "$n" --db "$TMP/$label.db")
    printf '%s, %d builds: in-process %.2f s, cluster %.2f s (%.2fx the in-process time), resumed %.2f s\n' \
        "$label" "$n" "$inproc" "$cluster" "$(echo "$cluster / $inproc" | bc -l)" "$resumed"
}
run "platform 5x20 (100 meta-modules)" 20 --platform 5x20 --size 50 --max-rounds 3000
run "stool-6" 200 examples/roombots/structures/stool-6.xml
run "platform 1x2 (2 meta-modules: job overhead)" 500 --platform 1x2
