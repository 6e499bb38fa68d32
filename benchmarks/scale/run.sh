#!/usr/bin/env bash
# The coordinator at scale, measured with simulated agents (docs/scale.md).
#   benchmarks/scale/run.sh --agents N [--no-run] [--plan FILE] [--timeout S] [--keep]
#                           [-- extra cmax-scale-agents flags, e.g. --disconnect 0.01]
# Starts a real cmax-coordinator on 127.0.0.1 (fresh data dir, no token:
# loopback only), runs cmax-scale-agents against it (N simulated agents of 8
# simulated GPUs, every record marked simulated) and the plan
# benchmarks/scale/scale.yaml (or --plan FILE, e.g. scale-small.yaml), and
# prints the figures. Everything is bounded
# by --timeout (default 900 s). Needs a build: tests/run.sh or
# cmake --build build --target cmax-coordinator cmax-scale-agents.
set -euo pipefail
start_dir=$(pwd)
cd "$(dirname "$0")/../.."
root=$(pwd)
build=${CMAX_BUILD_DIR:-$root/build}
agents=1000
timeout_s=900
run_plan=1
plan_file=$root/benchmarks/scale/scale.yaml
keep=0
extra=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --agents) agents=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    --no-run) run_plan=0; shift ;;
    --plan) plan_file=$(cd "$start_dir" && realpath -e "$2") || exit 2; shift 2 ;;
    --keep) keep=1; shift ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,11p' "$0" | cut -c3-; exit 0 ;;
    *) echo "run.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
# CMAX_SCALE_COORDINATOR: another coordinator binary (to compare builds).
coord=${CMAX_SCALE_COORDINATOR:-$build/bin/cmax-coordinator}
sim=$build/bin/cmax-scale-agents
for b in "$coord" "$sim"; do
  [[ -x $b ]] || { echo "run.sh: $b not built (cmake --build build --target $(basename "$b"))" >&2; exit 2; }
done
# One fd per HTTP/2 connection on each side, plus SQLite's; raise the soft
# limit as far as the hard one allows.
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true

data=$(mktemp -d /tmp/cmax-scale.XXXXXX)
port=""
for _ in $(seq 1 50); do
  p=$((20000 + RANDOM % 20000))
  if ! ss -Htln "sport = :$p" | grep -q .; then port=$p; break; fi
done
[[ -n $port ]] || { echo "run.sh: no free port found" >&2; exit 1; }
"$coord" --data-dir "$data" --listen "127.0.0.1:$port" --no-token --log-level warn \
  >"$data/coordinator.log" 2>&1 &
cpid=$!
cleanup() {
  kill "$cpid" 2>/dev/null || true
  wait "$cpid" 2>/dev/null || true
  if [[ $keep == 1 ]]; then echo "data dir kept: $data"; else rm -rf "$data"; fi
}
trap cleanup EXIT
for _ in $(seq 1 100); do
  ss -Htln "sport = :$port" | grep -q . && break
  kill -0 "$cpid" 2>/dev/null || { echo "run.sh: the coordinator exited:" >&2; cat "$data/coordinator.log" >&2; exit 1; }
  sleep 0.1
done
echo "machine                                  $(nproc) cores, $(free -g | awk '/^Mem:/{print $2}') GB, $(uname -r)"
echo "coordinator                              pid $cpid, 127.0.0.1:$port, data $data"
plan=()
[[ $run_plan == 1 ]] && plan=(--plan "$plan_file")
rc=0
timeout "$timeout_s" "$sim" --target "127.0.0.1:$port" --agents "$agents" \
  --coordinator-pid "$cpid" "${plan[@]}" --timeout "$((timeout_s - 10))" \
  --json-out "$data/figures.json" "${extra[@]}" || rc=$?
if [[ -f $data/cmax.db ]]; then
  echo "store_records                            $(sqlite3 -readonly "$data/cmax.db" 'SELECT COUNT(*) FROM records' 2>/dev/null || echo '?')"
  echo "store_bytes                              $(du -cb "$data"/cmax.db* | tail -1 | cut -f1)"
fi
log=$data/coordinator.log
lost=$(grep -c ' lost: nothing heard' "$log" 2>/dev/null || true)
echo "coordinator_log_agents_lost              ${lost:-0}"
warns=$(grep ' warning \| error ' "$log" 2>/dev/null | grep -vc 'INSECURE: --no-token' || true)
echo "coordinator_log_warnings_errors          ${warns:-0} $(grep ' warning \| error ' "$log" 2>/dev/null | grep -v 'INSECURE' | head -1 | cut -c1-150)"
exit $rc
