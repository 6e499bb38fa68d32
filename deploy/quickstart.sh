#!/usr/bin/env bash
# cmax quickstart: installs what is missing, builds, starts a coordinator and
# local agents on loopback, runs the quick evaluation, prints the scorecard
# summary and where the files are, and stops what it started.
#
#   deploy/quickstart.sh [--agents N] [--plan FILE] [--keep-running]
#     --agents N  agents local-0 ... local-N-1 (default 3: the quick plan's
#                 connectivity measures between nodes; with 1 it says "not
#                 measured: needs 2 nodes")
#
# Environment: CMAX_BUILD_DIR (default build/), CMAX_QUICKSTART_DIR (default:
# a new /tmp/cmax-quickstart.XXXXXX made by mktemp -d, mode 0700; a folder
# given here must be yours and not writable by group or others), CMAX_PORT
# (default 8470).
# Exit code: cmaxctl run's, except that a run which completed "not rated" (4)
# exits 0 after saying so (the quick plan alone never rates a cluster).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

agents=3
plan=$root/benchmarks/plans/quick.yaml
keep=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --agents) agents=${2:?--agents needs a number}; shift 2 ;;
    --agents=*) agents=${1#*=}; shift ;;
    --plan) plan=${2:?--plan needs a file}; shift 2 ;;
    --plan=*) plan=${1#*=}; shift ;;
    --keep-running) keep=1; shift ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "quickstart: unknown option '$1'" >&2; exit 2 ;;
  esac
done
[[ $agents =~ ^[0-9]+$ && $agents -ge 1 && $agents -le 64 ]] || {
  echo "quickstart: --agents must be 1..64" >&2; exit 2; }

build=${CMAX_BUILD_DIR:-$root/build}
port=${CMAX_PORT:-8470}
addr=127.0.0.1:$port

echo "==> installing missing packages"
./deploy/install-deps.sh --quiet

echo "==> building into $build"
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/cmax-ccache}
# As in tests/run.sh: paths relative to the clone, so another clone (or
# run.sh's build of this one) reuses the cache.
export CCACHE_BASEDIR=$root
export CCACHE_NOHASHDIR=1
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
# A new build folder is configured without tests (quicker); an existing one
# keeps its settings, so tests/run.sh's build/ keeps its tests (and run.sh
# turns them on again itself when this configured build/ first).
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAX_BUILD_TESTS=OFF >/dev/null
fi
cmake --build "$build" -j "$(nproc)" --target cmax-coordinator cmax-agent cmaxctl cmax-bench
bin=$build/bin

pids=()
cleanup() {
  if [[ $keep -eq 0 ]]; then
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
  fi
}
trap cleanup EXIT

# The work folder holds the token: never one that another local user made
# or can write (a fixed name in /tmp could be theirs, made first).
if [[ -n ${CMAX_QUICKSTART_DIR:-} ]]; then
  work=$CMAX_QUICKSTART_DIR
  mkdir -p -m 0700 "$work"
  [[ -O $work ]] || { echo "quickstart: $work belongs to another user" >&2; exit 2; }
  if (( 8#$(stat -c %a "$work") & 8#022 )); then
    echo "quickstart: $work is writable by group or others (chmod go-w, or another folder)" >&2
    exit 2
  fi
else
  work=$(mktemp -d /tmp/cmax-quickstart.XXXXXX)
fi
# Tokens of its own (mode 0600), as installed: `token` for cmaxctl (it finds
# it through CMAX_TOKEN_FILE), `agent-token` for the agents alone, which
# cmaxctl cannot use (docs/security.md). No other local user can command the
# agents.
for t in token agent-token; do
  if [[ ! -s $work/$t ]]; then
    (umask 077; head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$work/$t")
  fi
  chmod 0600 "$work/$t"
done
export CMAX_TOKEN_FILE=$work/token
echo "==> starting cmax-coordinator on $addr (data in $work/data, token $work/token)"
"$bin/cmax-coordinator" --listen "$addr" --data-dir "$work/data" --token-file "$work/token" \
  --agent-token-file "$work/agent-token" >"$work/coordinator.out" 2>"$work/coordinator.log" &
pids+=($!)
for _ in $(seq 50); do
  grep -q "listening on" "$work/coordinator.out" 2>/dev/null && break
  if ! kill -0 "${pids[0]}" 2>/dev/null; then
    echo "quickstart: the coordinator did not start:" >&2; tail -5 "$work/coordinator.log" >&2; exit 1
  fi
  sleep 0.1
done

echo "==> starting $agents agent(s): local-0 .. local-$((agents - 1))"
for i in $(seq 0 $((agents - 1))); do
  # --advertise 127.0.0.1: agents on one machine reach each other over
  # loopback (group suites, connectivity), not the machine's interface address.
  "$bin/cmax-agent" --coordinator "$addr" --node-name "local-$i" --work-dir "$work/agent-$i" \
    --token-file "$work/agent-token" --advertise 127.0.0.1 >"$work/agent-$i.log" 2>&1 &
  pids+=($!)
done
for _ in $(seq 100); do
  n=$("$bin/cmaxctl" --coordinator "$addr" agents 2>/dev/null | grep -cE ' (connected|busy) ' || true)
  [[ $n -ge $agents ]] && break
  sleep 0.2
done
"$bin/cmaxctl" --coordinator "$addr" agents

echo "==> running $(basename "$plan")"
set +e
"$bin/cmaxctl" --coordinator "$addr" run --plan "$plan" | tee "$work/run.out"
rc=${PIPESTATUS[0]}
set -e
run_id=$(sed -n 's/^run \(r[0-9a-z-]*\):.*/\1/p' "$work/run.out" | head -1)
if [[ -n $run_id ]]; then
  dir="$work/data/reports/$run_id"
  echo
  echo "==> scorecard summary"
  "$bin/cmaxctl" --coordinator "$addr" report "$run_id" --format md |
    sed -n '/^| Tier/p;/^| Missing for a tier/p;/^| Measured part/p;/^## Categories/,/^## Nodes/p' |
    grep -v '^## Nodes'
  echo "scorecard files:"
  for ext in html md json xml; do
    if [[ -f $dir/scorecard.$ext ]]; then echo "  $dir/scorecard.$ext"; fi
  done
fi
if [[ $keep -eq 1 ]]; then
  echo "coordinator and agents keep running (pids ${pids[*]});" \
       "CMAX_COORDINATOR=$addr CMAX_TOKEN_FILE=$work/token cmaxctl agents"
fi
# 4: the run completed but is not rated (cmaxctl --help): the quick plan
# checks node sanity and reachability only, and a tier needs Compute,
# Networking, Storage, Reliability and Security evaluated. The quickstart did
# what it is for; the scorecard says why there is no tier.
if [[ $rc -eq 4 ]]; then
  echo "==> not rated: too little was measured for a tier (see 'Missing for a tier' above);" \
       "benchmarks/plans/full.yaml on GPU nodes evaluates every category"
  rc=0
elif [[ $rc -eq 5 ]]; then
  # 5: nothing was measured (every task could not run): the quickstart failed
  # at what it is for, and says so rather than pointing at an empty card.
  echo "==> NOTHING WAS MEASURED: every task of the quick plan could not run;" \
       "the lines above say why (a missing suite binary or tool), and so do $work/agent-*.log" >&2
fi
exit "$rc"
