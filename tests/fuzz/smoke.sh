#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (a separate tree, ccache when
# present) and runs each for a fixed time; fails on any crash, leak,
# sanitizer report, timeout or out-of-memory.
#
#   tests/fuzz/smoke.sh [--build-dir DIR] [--seconds N] [--jobs N]
#
# Defaults: build/fuzz under the source tree, 15 s per target, 2 jobs.
# Fails (exit 1) when clang++ is not installed or the targets do not build:
# a smoke test that fuzzed nothing has not passed (deploy/install-deps.sh
# --with-tests installs clang). Prints one line per
# target: executions, corpus size, crashes. New corpus entries go to a
# scratch dir in the build tree, never into tests/fuzz/corpus.
set -uo pipefail
src=$(cd "$(dirname "$0")/../.." && pwd)
build="$src/build/fuzz"
seconds=15
jobs=2
while [[ $# -gt 0 ]]; do
  case $1 in
    --build-dir) build=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    *) echo "usage: $0 [--build-dir DIR] [--seconds N] [--jobs N]" >&2; exit 2 ;;
  esac
done
targets=(plan_parser record_line rendezvous version http_request web_view)

cxx=$(command -v clang++ || command -v clang++-14 || true)
cc=$(command -v clang || command -v clang-14 || true)
if [[ -z $cxx || -z $cc ]]; then
  echo "FAIL: clang++ is not installed, so nothing was fuzzed; the libFuzzer targets need it" \
       "(deploy/install-deps.sh --with-tests, or apt install clang libclang-rt-14-dev)"
  exit 1
fi

start=$(date +%s)
mkdir -p "$build"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
if [[ ! -f $build/build.ninja ]]; then
  # -O1 with line tables only: what libFuzzer's docs suggest, and it keeps
  # the clean build (the web view target brings the scorecard code) short
  # on CI's two cores; stack traces still name file and line.
  cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only -DNDEBUG" \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_CXX_COMPILER="$cxx" "${launcher[@]}" \
    -DCMAX_BUILD_FUZZERS=ON -DCMAX_BUILD_TESTS=OFF -DCMAX_ENABLE_CUDA=OFF >"$build/configure.log" 2>&1 \
    || { echo "FAIL: configuring the fuzz build (see $build/configure.log)"; tail -20 "$build/configure.log"; exit 1; }
fi
if ! ninja -C "$build" -j "$jobs" fuzzers >"$build/build.log" 2>&1; then
  echo "FAIL: building the fuzz targets (see $build/build.log)"
  tail -30 "$build/build.log"
  exit 1
fi
built=$(date +%s)
echo "fuzz targets built in $((built - start)) s ($build/bin)"

failed=0
for t in "${targets[@]}"; do
  bin="$build/bin/${t}_fuzz"
  work="$build/corpus/$t"
  art="$build/artifacts/$t"
  log="$build/logs/$t.log"
  rm -rf "$art"
  mkdir -p "$work" "$art" "$(dirname "$log")"
  # Fixture files a target writes (web_view: a report directory).
  CMAX_FUZZ_WORK_DIR="$build/work/$t" "$bin" "$work" "$src/tests/fuzz/corpus/$t" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -max_len=65536 -print_final_stats=1 -artifact_prefix="$art/" \
    >"$log" 2>&1
  rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  corpus=$(find "$work" -type f | wc -l)
  crashes=$(find "$art" -type f | wc -l)
  if [[ $rc -ne 0 || $crashes -ne 0 ]]; then
    failed=1
    echo "FAIL $t: exit $rc, ${execs:-?} executions, $crashes crash files in $art (log $log)"
    grep -E "ERROR|SUMMARY|violated|==[0-9]+==|runtime error" "$log" | head -10
    # The input itself, so a CI log keeps what a rerun would overwrite.
    for f in "$art"/*; do
      [[ -f $f ]] || continue
      echo "  input $f ($(stat -c %s "$f") bytes), first 256:"
      od -A x -t x1z -N 256 "$f" | head -20 | sed 's/^/    /'
    done
  else
    printf 'ok   %-12s %10s executions in %s s, corpus %s, crashes 0\n' "$t" "${execs:-?}" \
      "$seconds" "$corpus"
  fi
done
echo "fuzz smoke: $(( $(date +%s) - start )) s in all"
exit $failed
