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
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
if [[ ! -f $build/CMakeCache.txt ]]; then
  cmake -S "$root" -B "$build" "${generator[@]}" -DCMAX_BUILD_TESTS=ON \
    -DCMAKE_BUILD_TYPE=${CMAX_BUILD_TYPE:-RelWithDebInfo}
fi
cmake --build "$build" -j "$jobs"
cd "$build"
ctest --output-on-failure --timeout 600 -j "$jobs" "$@"
