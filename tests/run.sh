#!/usr/bin/env bash
# Installs what is missing, configures and builds cmax with its tests into
# build/ (CMAX_BUILD_DIR overrides), and runs ctest.
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
# --no-tests=error: a build without tests (or a -R that matches none) fails
# instead of printing "No tests were found!!!" and exiting 0.
ctest --output-on-failure --timeout 600 -j "$jobs" --no-tests=error "$@"
