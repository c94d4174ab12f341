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
# The organizer's database on a small file system of its own, so that the
# disk can be filled under it (fault 6).
data=/tmp/$project-data
mkdir -p "$data"
mount -t tmpfs -o size=256m tmpfs "$data"
chown 10001:10001 "$data"
export YAMOR_DATA=$data
stack=yamor-swarm-$$
swarm_ours=0
cleanup() {
    "${compose[@]}" logs --no-color --tail 40 >/tmp/yamor-compose.log 2>&1 || true
    "${compose[@]}" down -v --remove-orphans >/dev/null 2>&1 || true
    umount "$data" 2>/dev/null || true
    rmdir "$data" 2>/dev/null || true
    docker stack rm "$stack" >/dev/null 2>&1 || true
    if [ "$swarm_ours" = 1 ]; then docker swarm leave --force >/dev/null 2>&1 || true; fi
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

# One run per fault: started, the fault injected once it is under way, then
# it must finish at exactly its budget with every proposal evaluated once.
start_run() {
    "$yamor" optimize start --robot quadruped --budget "$1" --warmup 2 --measure 4 --json \
        | json "d[0]['id']"
}
evaluations() { "$yamor" optimize show "$1" --json | json "d['evaluations']"; }
state() { "$yamor" optimize show "$1" --json | json "d['state']"; }
check_run() {
    local run=$1 budget=$2 fault=$3 started=$4
    wait_for 300 "[ \"\$(state $run)\" = finished ]"
    local took=$((SECONDS - started))
    "$yamor" jobs list --run "$run" --limit 10000 --json | python3 -c "
import json, sys
jobs = json.load(sys.stdin)
# Proposal numbers from 2**40 on are the held-out re-walks of the finalists
# (5 finalists by mean, and the optimizer's recommendation when it is not
# one of them, x 20 starts by default), each walked once as well; from
# 2**40 + 2**30 on, the gait as given walks the same 20 starts (the
# run's reference).
indices = sorted(j['index'] for j in jobs if j['index'] < 2**40)
reference = sorted(j['index'] for j in jobs if j['index'] >= 2**40 + 2**30)
rewalks = [j['index'] for j in jobs if 2**40 <= j['index'] < 2**40 + 2**30]
assert indices == list(range($budget)), f'proposals: {len(indices)} of $budget, {len(set(indices))} distinct'
assert len(rewalks) == len(set(rewalks)) in (100, 120), f're-walks: {len(rewalks)}, {len(set(rewalks))} distinct'
assert sorted(rewalks) == [2**40 + k for k in range(len(rewalks))], 're-walk numbers have gaps'
assert reference == [2**40 + 2**30 + k for k in range(20)], f'reference walks: {len(reference)}'
assert all(j['state'] == 'done' for j in jobs), [j for j in jobs if j['state'] != 'done']
retried = sum(j['attempts'] > 1 for j in jobs)
print(f'$fault: {len(indices)} of $budget proposals, {len(rewalks)} held-out re-walks and {len(reference)} of the given gait evaluated once each, none lost, {retried} retried; run took ${took} s')
"
    test "$(evaluations "$run")" -eq "$budget"
}
container() {
    docker ps -aq --filter "label=com.docker.compose.project=$project" \
        --filter "label=com.docker.compose.service=$1" | head -1
}

# 1. Hosts killed mid-run, repeatedly: each of the three in turn, each
#    started again once the next is killed.
run=$(start_run 1500); t=$SECONDS
kills=()
for round in 0 1 2; do
    wait_for 120 "[ \"\$(evaluations $run)\" -ge $((10 + round * 300)) ]"
    victim=$(docker ps -aq --filter "label=com.docker.compose.project=$project" \
        --filter "label=com.docker.compose.service=sim" | sed -n "$((round + 1))p")
    kills+=("$(evaluations "$run")")
    docker kill "$victim" >/dev/null
    docker start "$victim" >/dev/null
done
check_run "$run" 1500 "docker kill of a host at ${kills[*]} evaluations" $t

# 2. A host frozen (docker pause) and 3. cut off (docker network
#    disconnect): down within the lease, its job runs elsewhere; back, its
#    late answer is ignored and it is admitted again under the same id.
host_field() { "$yamor" hosts list --json | json "[h['$2'] for h in d if h['name']=='$1'][0]"; }
network="${project}_default"
for how in pause disconnect; do
    wait_for 60 '[ "$(free_hosts)" -ge 3 ]'
    run=$(start_run 1500); t=$SECONDS
    wait_for 120 "[ \"\$(evaluations $run)\" -ge 10 ]"
    cut=$(container sim)
    name=$(docker inspect --format '{{.Config.Hostname}}' "$cut")
    id_before=$(host_field "$name" id)
    case $how in
        pause) docker pause "$cut" >/dev/null ;;
        disconnect) docker network disconnect "$network" "$cut" ;;
    esac
    cut_at=$SECONDS
    wait_for 30 "[ \"\$(host_field $name state)\" = down ]"
    echo "host $name marked down $((SECONDS - cut_at)) s after docker $how"
    case $how in
        pause) docker unpause "$cut" >/dev/null ;;
        disconnect) docker network connect "$network" "$cut" ;;
    esac
    wait_for 30 "[ \"\$(host_field $name state)\" != down ]"
    test "$(host_field "$name" id)" = "$id_before"
    echo "host $name back under id $id_before"
    check_run "$run" 1500 "docker $how of a host" $t
done

# 4. The organizer killed (docker kill) and 5. stopped (docker stop,
#    SIGTERM) mid-run, then started: the run resumes and ends at its budget.
organizer=$(container organizer)
for how in kill stop; do
    run=$(start_run 1500); t=$SECONDS
    wait_for 120 "[ \"\$(evaluations $run)\" -ge 10 ]"
    before=$(evaluations "$run")
    docker "$how" "$organizer" >/dev/null
    down_at=$SECONDS
    docker start "$organizer" >/dev/null
    wait_for 60 '"$yamor" health "$YAMOR_ORGANIZER"'
    echo "organizer back $((SECONDS - down_at)) s after docker $how (run at $before evaluations)"
    check_run "$run" 1500 "docker $how of the organizer" $t
done

# 6. The organizer's database on a full disk (its tmpfs filled from this
#    machine mid-run): the failure is reported (/metrics, a new run refused
#    with the reason), the run waits rather than fails, and once space
#    returns it goes on by itself and ends at its budget, every proposal
#    once, without a restart.
metric() {
    python3 -c "
import sys, urllib.request
req = urllib.request.Request('http://127.0.0.1:$YAMOR_HTTP_PORT/metrics',
                             headers={'Authorization': 'Bearer $YAMOR_TOKEN'})
for line in urllib.request.urlopen(req, timeout=5).read().decode().splitlines():
    if line.startswith('$1 '):
        print(line.split()[1])
"
}
started_before=$(docker inspect --format '{{.State.StartedAt}}' "$organizer")
wait_for 60 '[ "$(free_hosts)" -ge 3 ]'
run=$(start_run 1500); t=$SECONDS
wait_for 120 "[ \"\$(evaluations $run)\" -ge 10 ]"
dd if=/dev/zero of="$data/filler" bs=64k 2>/dev/null || true
full_at=$SECONDS
wait_for 240 '[ "$(metric yamor_database_writable)" = 0 ]'
echo "organizer reports its disk full $((SECONDS - full_at)) s after it filled (at $(evaluations "$run") evaluations)"
if "$yamor" optimize start --robot quadruped --budget 10 >/tmp/yamor-refused.txt 2>&1; then
    echo "a run was started on a full disk" >&2
    exit 1
fi
grep -q "disk is full" /tmp/yamor-refused.txt || { cat /tmp/yamor-refused.txt; exit 1; }
echo "a new run is refused: $(head -c 200 /tmp/yamor-refused.txt)"
test "$(state "$run")" = running
# Paused, not failed: nothing is told to the run while nothing can be saved.
waiting=$(evaluations "$run")
sleep 5
test "$(evaluations "$run")" -eq "$waiting"
test "$(state "$run")" = running
echo "the run waits at $waiting evaluations for 5 s of full disk"
rm "$data/filler"
freed_at=$SECONDS
wait_for 30 '[ "$(metric yamor_database_writable)" = 1 ]'
echo "organizer writes again $((SECONDS - freed_at)) s after space returned"
check_run "$run" 1500 "a full disk under the organizer database" $t
test "$(docker inspect --format '{{.State.StartedAt}}' "$organizer")" = "$started_before"
"${compose[@]}" down -v --remove-orphans >/dev/null 2>&1

# 7. The same file as a Docker Swarm stack on a one-node swarm: the
#    organizer and two replicated hosts come up without depends_on (hosts
#    retry until the organizer answers), a run finishes, a host task killed
#    mid-run is restarted by the swarm and the run still ends at its budget,
#    and the hosts scale to three.
if [ "$(docker info --format '{{.Swarm.LocalNodeState}}')" != active ]; then
    docker swarm init --advertise-addr 127.0.0.1 >/dev/null
    swarm_ours=1
fi
unset YAMOR_DATA  # the named volume, as a lab's stack has
files=(--compose-file docker/compose.yml)
# Without IPVS in the kernel a swarm has no routing mesh (docker/stack-dnsrr.yml).
[ -e /proc/net/ip_vs ] || files+=(--compose-file docker/stack-dnsrr.yml)
docker stack deploy "${files[@]}" "$stack" >/dev/null 2>/tmp/yamor-stack.log \
    || { cat /tmp/yamor-stack.log; exit 1; }
wait_for 120 '"$yamor" health "$YAMOR_ORGANIZER"'
wait_for 120 '[ "$(free_hosts)" -ge 2 ]' || { "$yamor" hosts list; docker service ps "${stack}_sim" --no-trunc; exit 1; }
echo "swarm stack $stack: organizer healthy, 2 hosts registered"
task() { docker ps -q --filter "label=com.docker.swarm.service.name=${stack}_$1" | head -1; }
run=$(start_run 300); t=$SECONDS
wait_for 120 "[ \"\$(evaluations $run)\" -ge 10 ]"
victim=$(task sim)
docker kill "$victim" >/dev/null
check_run "$run" 300 "swarm: docker kill of a host task" $t
wait_for 120 "[ \"\$(docker service ls --filter name=${stack}_sim --format '{{.Replicas}}')\" = 2/2 ]"
echo "swarm restarted the killed host task"
docker service scale --detach "${stack}_sim=3" >/dev/null
wait_for 120 '[ "$(free_hosts)" -ge 3 ]' || { "$yamor" hosts list; exit 1; }
echo "swarm: hosts scaled to 3, all registered"
echo "docker/test.sh: ok"
