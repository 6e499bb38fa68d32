#!/usr/bin/env bash
# The integration tests again and again on a loaded machine: stress-ng keeps
# every core busy while ctest runs the tests matching a pattern (default:
# every *integration_test case) N times. Prints one line per round (passed,
# failed, seconds) and, at the end, how many rounds and test runs failed and
# which tests failed how often. Issue 33 item 6: a verdict must not depend
# on the machine's load.
#
#   benchmarks/stress/run.sh [--rounds N] [--regex RE] [--load-percent P] [--build-dir DIR]
#
# Defaults: 20 rounds, 'integration_test:', 100% load on every core,
# build/. Builds nothing. Needs stress-ng (apt install stress-ng; in
# deploy/install-deps.sh --with-tests). Exit 1 when any test run failed.
# Bounded: N rounds of ctest, each under ctest's own per-test timeouts;
# stress-ng is stopped on every exit.
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$src/build
rounds=20
regex='integration_test:'
load=100
while [[ $# -gt 0 ]]; do
  case $1 in
    --rounds) rounds=$2; shift 2 ;;
    --regex) regex=$2; shift 2 ;;
    --load-percent) load=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    *) sed -n '2,15p' "$0"; exit 2 ;;
  esac
done
[[ $rounds =~ ^[0-9]+$ && $rounds -ge 1 && $rounds -le 1000 ]] || { echo "stress: --rounds 1..1000" >&2; exit 2; }
[[ $load =~ ^[0-9]+$ && $load -ge 1 && $load -le 100 ]] || { echo "stress: --load-percent 1..100" >&2; exit 2; }
command -v stress-ng >/dev/null || { echo "stress: stress-ng is not installed (apt install stress-ng)" >&2; exit 2; }
[[ -f $build/CTestTestfile.cmake ]] || { echo "stress: no tests in $build; build with tests first" >&2; exit 2; }
tests=$(ctest --test-dir "$build" -N -R "$regex" | sed -n 's/^Total Tests: //p')
[[ ${tests:-0} -gt 0 ]] || { echo "stress: no test matches '$regex'" >&2; exit 2; }

cores=$(nproc)
stress-ng --cpu "$cores" --cpu-load "$load" --timeout 0 --quiet &
stress_pid=$!
trap 'kill "$stress_pid" 2>/dev/null; wait "$stress_pid" 2>/dev/null' EXIT
echo "stress: $tests tests matching '$regex', $rounds rounds, stress-ng --cpu $cores at $load%"

log_dir=$(mktemp -d "${TMPDIR:-/tmp}/cmax-stress.XXXXXX")
declare -A failed_count=()
failed_rounds=0
failed_runs=0
start_all=$(date +%s)
for ((i = 1; i <= rounds; i++)); do
  t0=$(date +%s)
  log=$log_dir/round-$i.log
  ctest --test-dir "$build" -R "$regex" -j "$cores" --output-on-failure >"$log" 2>&1
  rc=$?
  mapfile -t failed < <(grep -E '^\s*[0-9]+ - .* \((Failed|Timeout|SEGFAULT|Exception|Subprocess aborted)\)$' "$log" |
                        sed -E 's/^\s*[0-9]+ - //; s/ \([^()]*\)$//')
  passed=$(grep -c ' Passed ' "$log")
  if [[ $rc -ne 0 ]]; then
    ((failed_rounds++))
    ((failed_runs += ${#failed[@]}))
    for f in "${failed[@]}"; do failed_count[$f]=$(( ${failed_count[$f]:-0} + 1 )); done
    [[ ${#failed[@]} -gt 0 ]] || failed_count["(ctest exit $rc, no failed test listed)"]=1
    cp "$log" "$log_dir/failed-round-$i.log"
  fi
  printf 'round %2d: %3d passed, %d failed, %4d s\n' "$i" "$passed" "${#failed[@]}" $(( $(date +%s) - t0 ))
done
echo "stress: $rounds rounds in $(( $(date +%s) - start_all )) s: $failed_rounds rounds failed," \
     "$failed_runs test runs failed of $(( rounds * tests ))"
for f in "${!failed_count[@]}"; do echo "  failed ${failed_count[$f]}x: $f"; done
if [[ $failed_rounds -eq 0 ]]; then
  rm -rf "$log_dir"
  exit 0
fi
echo "stress: logs of the failed rounds in $log_dir"
exit 1
