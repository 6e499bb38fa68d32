#!/usr/bin/env bash
# Runs every libFuzzer target longer than CI does and prints executions and
# crashes per target (crash inputs stay in BUILD/artifacts/<target>/).
#
#   benchmarks/fuzz/run.sh [SECONDS]     (default 300 per target)
#
# Builds the clang tree in build/fuzz first when needed (CMAX_FUZZ_BUILD
# overrides the place). Exit status 1 when any target crashed.
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
seconds=${1:-300}
[[ $seconds =~ ^[0-9]+$ ]] || { echo "usage: $0 [SECONDS]" >&2; exit 2; }
exec "$src/tests/fuzz/smoke.sh" --build-dir "${CMAX_FUZZ_BUILD:-$src/build/fuzz}" \
  --seconds "$seconds"
