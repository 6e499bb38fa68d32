// NVIDIA DCGM's diagnostic (benchmarks/dcgm): opt-in, stresses the GPUs
// at levels 2 and 3, so exclusive. Where DCGM is missing it says so (exit 2).
#include "common/suite_declaration.h"

namespace cmax::suites::dcgm {

using v1::SCOPE_NODE;

SuiteInfo Declaration() {
  return {
    .name = "dcgm",
    .binary = "cmax-bench",
    .category = "reliability",
    .help = "NVIDIA DCGM diagnostic (dcgmi diag -r LEVEL -j) as findings per test and GPU",
    .details =
        "Runs NVIDIA DCGM's diagnostic (dcgmi diag -r LEVEL -j) and turns its JSON into\n"
        "records: a Finding per failing or warning test and GPU, a Measurement per\n"
        "result. Needs DCGM (dcgmi and a running nv-hostengine). A diagnostic\n"
        "that hangs past its time limit, is killed by a signal or prints nothing\n"
        "parseable FAILS the node (dcgm.diag_wedged, dcgm.diag_killed,\n"
        "dcgm.diag_unparseable). Exit: 0 passed, 1 a test failed or the diagnostic\n"
        "wedged, 2 could not run (dcgmi not installed, could not start, nv-hostengine\n"
        "not reachable: not measured).\n"
        "Opt-in: no plan in benchmarks/plans runs it.",
    .scopes = {SCOPE_NODE},
    .default_timeout_s = 6000,
    .exclusive = true,
    .params =
        {
            {.name = "level", .type = ParamType::kInt, .help = "diagnostic run level 1, 2 or 3 (default 1)",
             .min = 1, .max = 3},
        },
    .metrics =
        {
            {.name = "dcgm_test_passed", .unit = "bool", .better = MetricBetter::kHigher,
             .help = "1 when the DCGM diagnostic test passed or warned, 0 when it failed"},
        },
  };
}

}  // namespace cmax::suites::dcgm
