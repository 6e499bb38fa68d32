#!/usr/bin/env bash
# The chaos run: a coordinator and 4 agents in network namespaces run a long
# plan again and again while the coordinator and agents are SIGKILLed and
# restarted, agents' links are cut and healed, and the coordinator's store
# fails every task lookup and record insert for a while (a busy database:
# --test-store-fault-file) at random moments (bounded in count and time). At the end it prints records expected, stored, lost
# and duplicated, runs completed, and the worst time to recover.
#
#   benchmarks/chaos/run.sh [--minutes N] [--seed S] [--keep]
#
# Builds nothing: uses build/bin (or $CMAX_BIN_DIR). Needs root (network
# namespaces, tests/hosts.sh), python3 and sqlite3. Default: 3 minutes of
# chaos, then up to 2 more for the last run to finish.
#
# Expected records: a completed attempt must hold exactly what the selftest
# declared before writing (--declare: its first record counts them all); an
# attempt that was interrupted (its agent killed, its task lost) must hold
# 0..max_seq with no gap. Lost = expected - stored distinct (task, attempt,
# rank, seq); duplicated = rows beyond distinct keys in `cmaxctl export`,
# seqs beyond the declared count, and one record stored under two seqs;
# resent = what the coordinator logged as received again (see analyze.py).
# Recovery: from a kill or cut until the affected side stores records again
# (coordinator: any node; agent: that node), read from the database every
# 0.5 s.
set -euo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
bin=${CMAX_BIN_DIR:-$src/build/bin}
minutes=3
seed=$RANDOM
keep=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --minutes) minutes=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    *) sed -n '2,22p' "$0"; exit 2 ;;
  esac
done
for b in cmax-coordinator cmax-agent cmaxctl cmax-bench; do
  [[ -x $bin/$b ]] || { echo "chaos: $bin/$b missing; build first (ninja -C build $b)" >&2; exit 2; }
done
[[ $(id -u) == 0 ]] || { echo "chaos: needs root for network namespaces" >&2; exit 2; }
command -v sqlite3 >/dev/null || { echo "chaos: needs sqlite3" >&2; exit 2; }
command -v python3 >/dev/null || { echo "chaos: needs python3" >&2; exit 2; }

RANDOM=$seed
prefix=chaos
n=4
dir=$(mktemp -d /tmp/cmax-chaos-XXXXXX)
hosts="$src/tests/hosts.sh"
declare -A agent_pid
coord_pid=""

cleanup() {
  set +e
  exec 2>/dev/null  # no "Killed" job notices for the daemons we kill here
  [[ -n ${monitor_pid:-} ]] && kill "$monitor_pid" 2>/dev/null
  [[ -n ${runner_pid:-} ]] && kill "$runner_pid" 2>/dev/null
  for i in "${!agent_pid[@]}"; do kill -9 "${agent_pid[$i]}" 2>/dev/null; done
  [[ -n $coord_pid ]] && kill -9 "$coord_pid" 2>/dev/null
  "$hosts" down "$prefix" >/dev/null 2>&1
  if [[ $keep == 0 ]]; then rm -rf "$dir"; else echo "chaos: kept $dir"; fi
}
trap cleanup EXIT

"$hosts" down "$prefix" >/dev/null 2>&1 || true
hub=$("$hosts" up "$prefix" "$n" | awk '$2 == "hub" {print $3}')
addr="$hub:8470"
# A token, as deployed; the namespaces' bridge is a non-loopback network made
# for this run, so the agents and cmaxctl send it without TLS on purpose.
(umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$dir/token")
fault_file=$dir/store-fault
now() { date +%s.%N; }
log() { echo "$(date +%T) $*" | tee -a "$dir/events.log" >&2; }

start_coordinator() {
  ip netns exec "$prefix-hub" "$bin/cmax-coordinator" --data-dir "$dir/coordinator" \
    --listen "$addr" --allow-insecure --token-file "$dir/token" --heartbeat-timeout 5 \
    --test-store-fault-file "$fault_file" >>"$dir/coordinator.log" 2>&1 &
  coord_pid=$!
  for _ in $(seq 100); do
    grep -q "listening on" "$dir/coordinator.log" 2>/dev/null && ctl agents >/dev/null 2>&1 && return 0
    sleep 0.1
  done
}
start_agent() {
  ip netns exec "$prefix-$1" "$bin/cmax-agent" --coordinator "$addr" --node-name "node-$1" \
    --work-dir "$dir/agent-$1" --bench-dir "$bin" --token-file "$dir/token" --allow-insecure \
    >>"$dir/agent-$1.log" 2>&1 &
  agent_pid[$1]=$!
}
ctl() {
  ip netns exec "$prefix-hub" "$bin/cmaxctl" --coordinator "$addr" --token-file "$dir/token" \
    --allow-insecure "$@" 2> >(grep -v "INSECURE: --allow-insecure" >&2)
}

start_coordinator
for i in $(seq 0 $((n - 1))); do start_agent "$i"; done
for _ in $(seq 100); do
  [[ $(ctl agents 2>/dev/null | grep -c connected || true) -ge $n ]] && break
  sleep 0.2
done

cat >"$dir/plan.yaml" <<'PLAN'
name: chaos
suites:
  - suite: selftest
    name: stream
    timeout: 3m
    retries: 2
    params: {mode: records, records: 2000, rate: 200, declare: true}
  - suite: selftest
    name: pause
    timeout: 1m
    retries: 2
    params: {mode: sleep, seconds: 3, declare: true}
  - suite: selftest
    name: burst
    timeout: 2m
    retries: 2
    params: {mode: records, records: 1000, declare: true}
PLAN

# Progress monitor: records stored per node, every 0.5 s.
(
  while true; do
    rows=$(sqlite3 -readonly "$dir/coordinator/cmax.db" \
      "SELECT node, COUNT(*) FROM records GROUP BY node" 2>/dev/null | tr '\n' ' ' || true)
    echo "$(now) $rows"
    sleep 0.5
  done
) >"$dir/progress.log" &
monitor_pid=$!

chaos_end=$(( $(date +%s) + minutes * 60 ))
# Runs, one after the other, until the chaos ends.
(
  while [[ $(date +%s) -lt $chaos_end ]]; do
    run=""
    until [[ -n $run ]]; do
      run=$(ctl run --plan "$dir/plan.yaml" --no-wait 2>/dev/null | sed -n 's/^run \(r[^:]*\):.*/\1/p' || true)
      [[ -n $run ]] || sleep 1
    done
    echo "$run" >>"$dir/runs.txt"
    # Until watch sees the run end: 0, 1 or 4 (not rated); 3 is "could not finish".
    until rc=0; ctl watch "$run" >/dev/null 2>&1 || rc=$?; [[ $rc =~ ^[014]$ ]]; do sleep 1; done
  done
) &
runner_pid=$!

# The chaos: an event every 10-25 s, at most 4 a minute, none in the last 20 s.
events=0
max_events=$(( minutes * 4 ))
while true; do
  sleep $(( 10 + RANDOM % 16 ))
  [[ $(( $(date +%s) + 20 )) -lt $chaos_end && $events -lt $max_events ]] || break
  events=$((events + 1))
  i=$(( RANDOM % n ))
  case $(( RANDOM % 4 )) in
    0)
      down=$(( RANDOM % 4 ))
      echo "$(now) coordinator kill" >>"$dir/chaos.log"
      log "event $events: SIGKILL coordinator, restart after ${down} s"
      kill -9 "$coord_pid" 2>/dev/null || true; { wait "$coord_pid"; } 2>/dev/null || true
      sleep "$down"
      echo "$(now) coordinator back" >>"$dir/chaos.log"
      start_coordinator ;;
    1)
      down=$(( RANDOM % 4 ))
      echo "$(now) node-$i kill" >>"$dir/chaos.log"
      log "event $events: SIGKILL agent node-$i, restart after ${down} s"
      kill -9 "${agent_pid[$i]}" 2>/dev/null || true; { wait "${agent_pid[$i]}"; } 2>/dev/null || true
      sleep "$down"
      echo "$(now) node-$i back" >>"$dir/chaos.log"
      start_agent "$i" ;;
    2)
      down=$(( 2 + RANDOM % 7 ))
      echo "$(now) node-$i cut" >>"$dir/chaos.log"
      log "event $events: cut node-$i's link for ${down} s"
      "$hosts" cut "$prefix" "$i"
      sleep "$down"
      echo "$(now) node-$i back" >>"$dir/chaos.log"
      "$hosts" heal "$prefix" "$i" ;;
    3)
      down=$(( 2 + RANDOM % 7 ))
      echo "$(now) coordinator store-error" >>"$dir/chaos.log"
      log "event $events: the coordinator's store fails lookups and inserts for ${down} s"
      touch "$fault_file"
      sleep "$down"
      rm -f "$fault_file"
      echo "$(now) coordinator back" >>"$dir/chaos.log" ;;
  esac
done
log "chaos over after $events events; waiting for the last run"
deadline=$(( $(date +%s) + 180 ))
while kill -0 "$runner_pid" 2>/dev/null && [[ $(date +%s) -lt $deadline ]]; do sleep 1; done
if kill -0 "$runner_pid" 2>/dev/null; then log "the last run did not finish in 3 minutes"; fi
# Let agents deliver what they still hold (late records of lost tasks).
for _ in $(seq 60); do
  held=0
  for i in $(seq 0 $((n - 1))); do
    [[ -z $(ls -A "$dir/agent-$i/tasks" 2>/dev/null) ]] || held=1
  done
  [[ $held == 0 ]] && break
  sleep 1
done
sleep 1
kill "$monitor_pid" 2>/dev/null || true

mkdir -p "$dir/export"
while read -r run; do
  ctl export "$run" >"$dir/export/$run.jsonl"
  ctl watch "$run" --json >"$dir/export/$run.watch" 2>/dev/null || true
done <"$dir/runs.txt"

echo "$events $seed" >"$dir/meta"
set +e
python3 "$src/benchmarks/chaos/analyze.py" "$dir"
rc=$?
set -e
# The store faults: how many, and whether the coordinator kept every record
# unacknowledged through them (lost/duplicated above count them too).
faults=$(grep -c " coordinator store-error$" "$dir/chaos.log" 2>/dev/null || true)
refusals=$(grep -c "closing its stream so it resends" "$dir/coordinator.log" 2>/dev/null || true)
echo "store faults: ${faults:-0} (records left unacknowledged and resent: ${refusals:-0} stream closes)"
exit $rc
