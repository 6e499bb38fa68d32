#!/usr/bin/env bash
# Builds cmax-scheduler-cost against the scheduler of git revision REV (one
# from before the incremental scheduler, e.g. ea4ab01) for a before/after
# figure: OUT/cmax-scheduler-cost-old. Needs build/ built (its libraries and
# generated protos) and the compile flags CMake uses there.
#   benchmarks/scheduler_cost/build_old.sh REV [OUT]
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$(pwd)
rev=${1:?usage: build_old.sh REV [OUT]}
out=${2:-/tmp/cmax-scheduler-cost-old}
mkdir -p "$out/inc/coordinator"
git show "$rev:coordinator/scheduler.h" >"$out/inc/coordinator/scheduler.h"
git show "$rev:coordinator/scheduler.cc" >"$out/scheduler_old.cc"
b=$root/build
flags=(-DFMT_SHARED -DSPDLOG_COMPILED_LIB -DSPDLOG_FMT_EXTERNAL -DSPDLOG_SHARED_LIB
       -I"$out/inc" -I"$root" -I"$b/proto" -I"$b/benchmarks" -O2 -DNDEBUG -pthread -std=c++20)
c++ "${flags[@]}" -c "$out/scheduler_old.cc" -o "$out/scheduler_old.o"
c++ "${flags[@]}" -DCMAX_SCHEDULER_COST_OLD -c benchmarks/scheduler_cost/scheduler_cost.cc \
  -o "$out/scheduler_cost_old.o"
# The link line of the CMake target, with the old scheduler's object first.
link=$(cd "$b" && ninja -t commands cmax-scheduler-cost | tail -1)
libs=${link#*-o bin/cmax-scheduler-cost }
libs=${libs%% && :*}
(cd "$b" && eval c++ -O2 "$out/scheduler_cost_old.o" "$out/scheduler_old.o" \
  -o "$out/cmax-scheduler-cost-old" $libs)
echo "$out/cmax-scheduler-cost-old"
