#!/usr/bin/env bash
# The suite binaries (cmax-bench, cmax-bench-cuda) run on every node, and the
# GPU bundle carries them alone: they must link neither gRPC nor the plan
# parser (issue 16 item 4; the plan parser is library cmax_plan,
# common/plan_parser.h). Two checks per binary:
#   - its symbols (nm), as tests/coordinator/ctl_links_test.sh does for
#     cmaxctl: a link that pulls in any object of gRPC or of the plan parser
#     fails here;
#   - with --links FILE, what it is linked from: FILE lists every target the
#     binary links, directly or not, one a line, " compiles
#     common/plan_parser.cc" after a target that compiles the parser
#     (written at configure time by tests/benchmarks/CMakeLists.txt). A
#     static library that holds the parser fails here even while nothing in
#     the binary calls it yet, which the symbols alone cannot show.
#
# yaml-cpp itself stays in both binaries: the health suite's tables
# (benchmarks/health/data/*.yaml, linked into cmax-bench-cuda by the burn-in's
# GPU half) and the audit suite's advisories are YAML the suites read. What
# must not be there is the plan parser; the YAML:: symbol count is printed
# for the record.
#   bench_links_test.sh [--links FILE] BINARY [[--links FILE] BINARY]...
set -euo pipefail
(($# > 0)) || { echo "usage: $0 [--links FILE] BINARY..." >&2; exit 2; }
rc=0
links=""
for arg in "$@"; do
  if [[ $arg == --links ]]; then
    links=next
    continue
  fi
  if [[ $links == next ]]; then
    links=$arg
    continue
  fi
  bin=$arg
  name=$(basename "$bin")
  bad=0
  [[ -x $bin ]] || { echo "FAIL: $bin is not an executable" >&2; rc=1; links=""; continue; }
  syms=$(nm -C "$bin")
  # Any gRPC symbol, defined or referenced (a shared libgrpc++ shows as U).
  grpc=$(grep -E '\bgrpc(_impl)?::|\bgrpc_[a-z]' <<<"$syms" || true)
  needed=$(readelf -d "$bin" | grep -E 'NEEDED.*lib(grpc|gpr)' || true)
  # The plan parser's functions (common/plan_parser.cc): its API and its
  # YAML walker (an anonymous-namespace Parser taking YAML nodes).
  plan=$(grep -E ' [TtWw] ' <<<"$syms" |
    grep -E 'cmax::(ParsePlan|LoadPlanFile|ValidatePlan|ParseDurationSeconds)\(|cmax::\(anonymous namespace\)::Parser::(ParseSuite|ParseExpect|Parse)\(' ||
    true)
  yaml=$(grep -c 'YAML::' <<<"$syms" || true)
  if [[ -n $grpc || -n $needed ]]; then
    echo "FAIL: $name links gRPC, e.g.:" >&2
    { printf '%s\n%s\n' "$needed" "$grpc" | grep . | head -5 >&2; } || true  # head may close the pipe early
    bad=1
  fi
  if [[ -n $plan ]]; then
    echo "FAIL: $name carries the plan parser ($(wc -l <<<"$plan") symbols), e.g.:" >&2
    head -5 <<<"$plan" >&2
    bad=1
  fi
  if [[ -n $links ]]; then
    [[ -r $links ]] || { echo "FAIL: $links (the targets $name links) is missing" >&2; exit 1; }
    linked=$(grep -E 'compiles common/plan_parser\.cc|^cmax_plan$|^cmax_proto$|^gRPC::' "$links" ||
      true)
    if [[ -n $linked ]]; then
      echo "FAIL: $name is linked from $(wc -l <<<"$linked") target(s) it must not be" \
        "(the plan parser, the gRPC service or gRPC), of $(wc -l <"$links") it links:" >&2
      sed 's/^/  /' <<<"$linked" >&2
      bad=1
    fi
  fi
  if ((bad)); then
    echo "fix: the suite binaries link cmax_common and cmax_proto_msgs (no cmax_proto, no" \
      "gRPC::grpc++); only the coordinator, cmaxctl, the scale tools and tests link" \
      "cmax_plan (common/CMakeLists.txt); a suite reads its flags through" \
      "common/suite_flags.h" >&2
    rc=1
  else
    echo "ok: $name carries no gRPC and no plan parser" \
      "${links:+(and links none of them: $(wc -l <"$links") targets) }($yaml YAML:: symbols:" \
      "the suites' own data)"
  fi
  links=""
done
exit $rc
