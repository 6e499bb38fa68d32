#!/usr/bin/env bash
# Installs what is missing, configures and builds cmax with its tests into
# build/ (CMAX_BUILD_DIR overrides), and runs ctest, then last
# tmp_leftovers_test (what the tests left in /tmp); then says how many test
# cases were skipped (tests/skip.h) and why. Its exit code is ctest's.
#   tests/run.sh [ctest arguments...]     e.g. tests/run.sh -R plan
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
build=${CMAX_BUILD_DIR:-$root/build}

./deploy/install-deps.sh --with-tests --quiet

# ccache outside the build folder keeps rebuilds of a fresh clone short.
export CCACHE_DIR=${CCACHE_DIR:-$HOME/.cache/cmax-ccache}
export CCACHE_BASEDIR=$root
export CCACHE_NOHASHDIR=1

jobs=${CMAX_JOBS:-$(nproc)}
# Always (re)configure with the tests on: build/ may come from
# deploy/quickstart.sh, which configures it without them. On an existing
# cache this is quick, and the generator and build type stay as they were.
if [[ ! -f $build/CMakeCache.txt ]]; then
  generator=()
  command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAX_BUILD_TESTS=ON \
    -DCMAKE_BUILD_TYPE=${CMAX_BUILD_TYPE:-RelWithDebInfo}
else
  cmake -S "$root" -B "$build" -DCMAX_BUILD_TESTS=ON >/dev/null
fi
cmake --build "$build" -j "$jobs"
cd "$build"
# Cases that cannot run here (no usable GPU, no CUDA build, a tool not
# installed) call CMAX_SKIP (tests/skip.h): ctest shows them as "Skipped",
# not passed, and each writes its name and reason to this file.
skip_log=$build/Testing/skipped.tsv
mkdir -p "$build/Testing"
: >"$skip_log"
export CMAX_TEST_SKIP_LOG=$skip_log
rc=0
# --no-tests=error: a build without tests (or a -R that matches none) fails
# instead of printing "No tests were found!!!" and exiting 0.
# The last test (label "last": tmp_leftovers_test) lists what the others
# left in /tmp since this mark.
mark=$build/Testing/run-started
touch "$mark"
ctest --output-on-failure --timeout 600 -j "$jobs" --no-tests=error -LE last "$@" || rc=$?
CMAX_TEST_RUN_STARTED=$mark ctest --output-on-failure --no-tests=error -L last || rc=$?
if [[ -s $skip_log ]]; then
  echo "tests/run.sh: $(wc -l <"$skip_log") Catch2 case(s) skipped, not passed (why, then how many):"
  cut -f2 "$skip_log" | sort | uniq -c | sort -rn | sed -E 's/^ *([0-9]+) (.*)$/  \2: \1/'
  echo "  (the cases: $skip_log)"
fi
exit "$rc"
