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
# Exit code: cmaxctl run's (README, "Exit codes"), except that a run which
# completed "not rated" (4) exits 0 after saying so (the quick plan alone
# never rates a cluster); 2 also for a bad option or plan file, 1 when the
# build or the coordinator failed. Every exit ends with a "==>" line that
# says what happened and what to do.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

# The closing line: said once, by `finish` or, for an exit nobody planned
# (a failed build under set -e), by the EXIT trap with the stage it was in.
stage="starting"
closed=0
finish() {  # finish CODE LINE...
  local code=$1
  shift
  if [[ $code -eq 0 ]]; then echo "==> $*"; else echo "==> $*" >&2; fi
  closed=1
  exit "$code"
}
usage_error() { finish 2 "quickstart: $*; nothing was built or started (deploy/quickstart.sh --help)"; }

agents=3
plan=$root/benchmarks/plans/quick.yaml
keep=0
while [[ $# -gt 0 ]]; do
  case $1 in
    --agents|--plan)
      [[ $# -ge 2 && -n $2 && $2 != --* ]] || usage_error "$1 needs a value"
      if [[ $1 == --agents ]]; then agents=$2; else plan=$2; fi
      shift 2 ;;
    --agents=*) agents=${1#*=}; shift ;;
    --plan=*) plan=${1#*=}; shift ;;
    --keep-running) keep=1; shift ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage_error "unknown option '$1'" ;;
  esac
done
[[ $agents =~ ^[0-9]+$ && $agents -ge 1 && $agents -le 64 ]] || usage_error "--agents must be 1..64"
# The plan file before anything is installed or built; its contents are
# checked by cmaxctl run (file:line:column) once cmaxctl is built.
[[ -n $plan ]] || usage_error "--plan needs a file"
[[ -e $plan ]] || usage_error "the plan $plan does not exist"
[[ -f $plan && -r $plan ]] || usage_error "the plan $plan is not a readable file"
[[ -s $plan ]] || usage_error "the plan $plan is empty"
plan=$(realpath "$plan")

build=${CMAX_BUILD_DIR:-$root/build}
port=${CMAX_PORT:-8470}
addr=127.0.0.1:$port

stage="installing packages (deploy/install-deps.sh)"
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
stage="configuring and building into $build"
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAX_BUILD_TESTS=OFF >/dev/null
fi
targets=(cmax-coordinator cmax-agent cmaxctl cmax-bench)
# The GPU suites' binary exists where CMake found the CUDA toolkit; without
# it every GPU suite could not run, and that is said once here.
if cmake --build "$build" --target help 2>/dev/null | grep -qw cmax-bench-cuda; then
  targets+=(cmax-bench-cuda)
else
  echo "==> no CUDA toolkit at build time: cmax-bench-cuda is not built, so the GPU suites" \
       "(gemm, memory, burn-in, NCCL) could not run and are not measured"
fi
cmake --build "$build" -j "$(nproc)" --target "${targets[@]}"
bin=$build/bin

pids=()
on_exit() {
  local rc=$?
  if [[ $keep -eq 0 ]]; then
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
  fi
  if [[ $closed -eq 0 && $rc -ne 0 ]]; then
    echo "==> quickstart stopped while $stage (exit $rc): the lines above say why" >&2
  fi
}
trap on_exit EXIT

# The work folder holds the token: never one that another local user made
# or can write (a fixed name in /tmp could be theirs, made first).
if [[ -n ${CMAX_QUICKSTART_DIR:-} ]]; then
  work=$CMAX_QUICKSTART_DIR
  mkdir -p -m 0700 "$work"
  [[ -O $work ]] || finish 2 "quickstart: $work belongs to another user: give CMAX_QUICKSTART_DIR a folder of yours"
  if (( 8#$(stat -c %a "$work") & 8#022 )); then
    finish 2 "quickstart: $work is writable by group or others (chmod go-w, or another folder)"
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
stage="starting the coordinator on $addr"
echo "==> starting cmax-coordinator on $addr (data in $work/data, token $work/token)"
"$bin/cmax-coordinator" --listen "$addr" --data-dir "$work/data" --token-file "$work/token" \
  --agent-token-file "$work/agent-token" >"$work/coordinator.out" 2>"$work/coordinator.log" &
pids+=($!)
for _ in $(seq 50); do
  grep -q "listening on" "$work/coordinator.out" 2>/dev/null && break
  if ! kill -0 "${pids[0]}" 2>/dev/null; then
    echo "quickstart: the coordinator did not start:" >&2; tail -5 "$work/coordinator.log" >&2
    # Its exit code says which: 2 a port or data directory in use, or a bad flag.
    wait "${pids[0]}" && crc=0 || crc=$?
    if [[ $crc -eq 2 ]]; then
      finish 2 "the coordinator could not start (see above): another one may hold $addr; stop it, or CMAX_PORT=8471 deploy/quickstart.sh"
    fi
    finish 1 "the coordinator could not start (exit $crc, see above; the whole log: $work/coordinator.log)"
  fi
  sleep 0.1
done

stage="starting the agents"
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

stage="running $(basename "$plan")"
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
  "$bin/cmaxctl" --coordinator "$addr" report "$run_id" --format md > "$work/scorecard.md"
  sed -n '/^| Tier/p;/^| Missing for a tier/p;/^| Why/p;/^## Categories/,/^## Nodes/p' \
    "$work/scorecard.md" | grep -v '^## Nodes'
  # Rejected nodes with the worst of their reasons (the scorecard lists them
  # worst first), ten at most: what exit 1 is about.
  rejected=$(grep -c '^| [^|]* | \*\*FAIL\*\* |' "$work/scorecard.md" || true)
  if [[ $rejected -gt 0 ]]; then
    echo "rejected nodes ($rejected; the worst reason of each, the scorecard's Nodes section has all):"
    sed -n 's/^| \([^|]*\) | \*\*FAIL\*\* | \([^|]*\)|$/  \1: \2/p' "$work/scorecard.md" |
      sed 's/<br>.*//; s/\\_/_/g' | head -10
  fi
  echo "scorecard files:"
  for ext in html md json xml; do
    if [[ -f $dir/scorecard.$ext ]]; then echo "  $dir/scorecard.$ext"; fi
  done
fi
if [[ $keep -eq 1 ]]; then
  echo "coordinator and agents keep running (pids ${pids[*]}); for example:"
  echo "  CMAX_COORDINATOR=$addr CMAX_TOKEN_FILE=$work/token $bin/cmaxctl agents"
  echo "  stop them: kill ${pids[*]}"
fi
# The closing line, one for each exit code of cmaxctl run (README, "Exit codes").
case $rc in
  0) finish 0 "rated, and nothing failed: the tier and every category are in the scorecard above" ;;
  4)
    # The run completed but is not rated: the quick plan checks node sanity
    # and reachability only, and a tier needs Compute, Networking, Storage,
    # Reliability, Security, Orchestration and Monitoring evaluated. The
    # quickstart did what it is for; the scorecard says why there is no tier.
    if [[ $(basename "$plan") == quick.yaml ]]; then
      finish 0 "not rated: the quick plan checks node sanity and reachability only (see 'Why' above);" \
        "benchmarks/plans/full.yaml on GPU nodes evaluates every category"
    fi
    finish 0 "not rated: too little was measured for a tier (see 'Why' and 'Missing for a tier' above)" ;;
  1) finish 1 "FAILED: a node was rejected, or a task crashed, hung or was lost: 'rejected nodes'" \
       "above and the scorecard's Nodes section say which and why${dir:+ ($dir/scorecard.md)}" ;;
  2) finish 2 "the coordinator refused the plan $plan: the line above says where (file:line:column)" ;;
  3) finish 3 "the run could not finish (cancelled, or the coordinator went away): $work/coordinator.log says why" ;;
  5)
    # Nothing was measured (every task could not run): the quickstart failed
    # at what it is for, and says so rather than pointing at an empty card.
    finish 5 "NOTHING WAS MEASURED: every task of the plan could not run; the lines above say why" \
      "(a missing suite binary or tool), and so do $work/agent-*.log" ;;
  6) finish 6 "the coordinator refused the quickstart's own token ($work/token): remove $work and run again" ;;
  *) finish "$rc" "cmaxctl run exited $rc (not one of its documented codes): $work/coordinator.log and $work/agent-*.log" ;;
esac
