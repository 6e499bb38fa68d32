// A diagnostic suite that exercises the pipeline itself: records, slow,
// hanging, failing and crashing suites. Its records say "selftest".
#include "common/suite_declaration.h"

namespace cmax::suites::selftest {

using v1::SCOPE_BARRIER;
using v1::SCOPE_GANG;
using v1::SCOPE_NODE;

SuiteInfo Declaration() {
  return {
    .name = "selftest",
    .binary = "cmax-bench",
    .category = "reliability",
    .help = "pipeline self-test: writes records, sleeps, fails or crashes on request",
    .details =
        "Checks the pipeline from suite to scorecard; measures nothing about the node. Modes:\n"
        "  ok       write --records records over --seconds, exit 0\n"
        "  records  same as ok (for long record streams; see --rate)\n"
        "  sleep    write one record, then sleep --seconds (for timeouts)\n"
        "  fail     write records and a FAIL finding, exit 1\n"
        "  error    print a reason to stderr, exit 2 (could not run)\n"
        "  crash    write records, print to stderr, then abort (SIGABRT)\n"
        "  barrier  group tasks: prepare for --seconds x rank, wait at the\n"
        "           rendezvous barrier, start at its instant; records\n"
        "           barrier_{prepare,ready,start,end}_ns (unix ns, this host)\n"
        "  orphan   write one record, leave a child behind that writes\n"
        "           --records more after --seconds, and exit 0 at once (checks\n"
        "           that the agent stops what a suite leaves running)\n"
        "--fail-rank N: in a group task, rank N writes one record and a FAIL\n"
        "finding, then exits 3 (a crash), so the group is stopped.\n"
        "--declare: first write selftest_declared_records, the number of\n"
        "records this run writes in all, itself included (modes ok, records,\n"
        "fail, crash and sleep), so a reader can tell a lost record from one\n"
        "never written (benchmarks/chaos/analyze.py).",
    .scopes = {SCOPE_NODE, SCOPE_BARRIER, SCOPE_GANG},
    .default_timeout_s = 60,
    .exclusive = true,
    .params =
        {
            {.name = "mode", .type = ParamType::kEnum, .help = "what to do (default ok)",
             .choices = {"ok", "records", "sleep", "fail", "error", "crash", "barrier",
                         "orphan"}},
            {.name = "records", .type = ParamType::kInt, .help = "records to write (default 10)",
             .min = 0, .max = 10000000},
            {.name = "seconds", .type = ParamType::kNumber, .help = "time to take (default 0)",
             .min = 0, .max = 86400},
            {.name = "rate", .type = ParamType::kNumber, .help = "records per second, 0 for as fast as possible",
             .min = 0, .max = 1e7},
            {.name = "fail-rank", .type = ParamType::kInt,
             .help = "group tasks: this rank exits 3 (a crash) after its first record",
             .min = 0, .max = 1 << 20},
            {.name = "declare", .type = ParamType::kFlag,
             .help = "first write how many records this run writes (selftest_declared_records)"},
        },
    .metrics =
        {
            {.name = "selftest_sequence", .unit = "count", .help = "the index of each record"},
            {.name = "selftest_orphan_sequence", .unit = "count",
             .help = "records of the child left behind (mode orphan)"},
            {.name = "selftest_declared_records", .unit = "count",
             .help = "records this run writes in all (--declare)"},
            {.name = "barrier_prepare_ns", .unit = "ns", .help = "mode barrier: prepared"},
            {.name = "barrier_ready_ns", .unit = "ns", .help = "mode barrier: at the barrier"},
            {.name = "barrier_start_ns", .unit = "ns", .help = "mode barrier: started"},
            {.name = "barrier_target_ns", .unit = "ns",
             .help = "mode barrier: the barrier's start instant"},
            {.name = "barrier_end_ns", .unit = "ns", .help = "mode barrier: ended"},
        },
    // It measures the pipeline, not the node: never graded.
    .graded = false,
  };
}

}  // namespace cmax::suites::selftest
