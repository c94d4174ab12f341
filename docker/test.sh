#!/usr/bin/env bash
# The cluster in containers, as a lab runs it: the image built here, the
# compose file up with three simulation hosts, a run started from this
# machine, one host killed (docker kill) mid-run. Checks that the run ends
# at exactly its budget with every proposal evaluated once: none lost, none
# recorded twice. Bounded in time; cleans up after itself. CI runs it.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! docker info >/dev/null 2>&1; then
    echo "starting the Docker daemon"
    (dockerd >/tmp/dockerd.log 2>&1 &)
    for _ in $(seq 60); do docker info >/dev/null 2>&1 && break; sleep 1; done
    docker info >/dev/null
fi

docker/build.sh yamor:test
yamor=target/release/yamor
export YAMOR_IMAGE=yamor:test
if [ ! -s docker/token ]; then
    head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > docker/token
fi
# Read by the containers' non-root user through the secret's bind mount.
chmod 644 docker/token
export YAMOR_TOKEN=$(cat docker/token)
export YAMOR_PORT=${YAMOR_PORT:-17070} YAMOR_HTTP_PORT=${YAMOR_HTTP_PORT:-17080}
export YAMOR_ORGANIZER=http://127.0.0.1:$YAMOR_PORT
project=yamor-test-$$
compose=(docker-compose -p "$project" -f docker/compose.yml)
cleanup() {
    "${compose[@]}" logs --no-color --tail 40 >/tmp/yamor-compose.log 2>&1 || true
    "${compose[@]}" down -v --remove-orphans >/dev/null 2>&1 || true
}
trap cleanup EXIT

# Waits up to $1 seconds for the shell condition $2 (evaluated afresh
# each time) to hold.
wait_for() {
    local seconds=$1 condition=$2
    for _ in $(seq $((seconds * 2))); do
        eval "$condition" >/dev/null 2>&1 && return 0
        sleep 0.5
    done
    echo "timed out after ${seconds}s: $condition" >&2
    return 1
}

json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

"${compose[@]}" up -d --scale sim=3
wait_for 60 '"$yamor" health "$YAMOR_ORGANIZER"'
free_hosts() { "$yamor" hosts list --json | json "sum(h['state']=='free' for h in d)"; }
wait_for 90 '[ "$(free_hosts)" -ge 3 ]' || { "$yamor" hosts list; exit 1; }
echo "3 simulation hosts registered"

budget=400
run=$("$yamor" optimize start --robot quadruped --budget $budget --warmup 2 --measure 4 --json | json "d[0]['id']")
evaluations() { "$yamor" optimize show "$run" --json | json "d['evaluations']"; }
wait_for 120 '[ "$(evaluations)" -ge 10 ]'
victim=$(docker ps -q --filter "label=com.docker.compose.project=$project" \
    --filter "label=com.docker.compose.service=sim" | head -1)
docker kill "$victim" >/dev/null
echo "killed host container $victim after $(evaluations) evaluations"

state() { "$yamor" optimize show "$run" --json | json "d['state']"; }
wait_for 300 '[ "$(state)" = finished ]'
"$yamor" optimize show "$run"
"$yamor" jobs list --run "$run" --limit 1000 --json | python3 -c "
import json, sys
jobs = json.load(sys.stdin)
budget = $budget
indices = sorted(j['index'] for j in jobs)
assert indices == list(range(budget)), f'proposals: {indices}'
assert all(j['state'] == 'done' for j in jobs), [j for j in jobs if j['state'] != 'done']
retried = sum(j['attempts'] > 1 for j in jobs)
print(f'{len(jobs)} proposals, each evaluated once; {retried} retried after the kill')
"
test "$(evaluations)" -eq "$budget"
echo "docker/test.sh: ok"
