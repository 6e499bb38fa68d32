// GPU memory bandwidth (benchmarks/memory/cuda/): cmax-bench-cuda only.
#include "common/suite_declaration.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace cmax::suites::memory {

using v1::SCOPE_NODE;

namespace {

// "memory:<test>": one bar chart per test, per GPU; pairs (p2p) and the
// all-GPU aggregates are not drawn.
bool MemoryChart(const v1::Measurement& m, const std::string&, const std::string&,
                 ChartNames* out) {
  const std::string test = ChartLabel(m, "test");
  if (test.empty() || test == "p2p" || ChartLabel(m, "gpu") == "all") return false;
  const bool pcie = absl::StartsWith(test, "h2d") || absl::StartsWith(test, "d2h");
  out->id = absl::StrCat("memory:", test);
  out->title = absl::StrCat(pcie ? "PCIe copy " : "Memory ", test, " per GPU");
  return true;
}

}  // namespace

SuiteInfo Declaration() {
  return {
    .name = "memory",
    .binary = "cmax-bench-cuda",
    .category = "compute",
    .help = "host<->device (pinned, NUMA-local), device, HBM and peer-to-peer bandwidth, verified",
    .details =
        "Host<->device (pinned memory on the GPU's NUMA node; each GPU alone and all\n"
        "at once), device-to-device copy, an HBM copy kernel and peer-to-peer copies\n"
        "between every pair of GPUs; every copy verified against a random pattern.\n"
        "d2d and hbm count bytes read + written. Each figure is the median of the\n"
        "timed copies (label stat=median); the all-GPU aggregate of h2d_all/d2h_all is\n"
        "all bytes over the wall time (stat=wall). One GPU: p2p is not measured.\n"
        "Tests: h2d d2h h2d_all d2h_all d2d hbm p2p (default all).",
    .scopes = {SCOPE_NODE},
    .default_timeout_s = 1200,
    .exclusive = true,
    .params =
        {
            {.name = "gpus", .type = ParamType::kIntList, .help = "GPU indices (0,1,...) or all (default all)"},
            {.name = "size", .type = ParamType::kBytes, .help = "bytes per copy (default 1G; a multiple of 1M)",
             .min = 1 << 20, .max = 64.0 * (1LL << 30)},
            {.name = "iters", .type = ParamType::kInt, .help = "timed iterations (default 20)", .min = 1,
             .max = 100000},
            {.name = "warmup", .type = ParamType::kInt, .help = "warm-up iterations (default 3)", .min = 0,
             .max = 10000},
            {.name = "tests", .type = ParamType::kEnumList, .help = "comma-separated tests (default all)",
             .choices = {"h2d", "d2h", "h2d_all", "d2h_all", "d2d", "hbm", "p2p"}},
        },
    // gpu: a copy on one GPU ("0") and on all at once ("all") differ.
    .metrics =
        {
            {.name = "memory_bandwidth_gbps", .unit = "GB/s", .fleet = true,
             .fleet_group_keys = {"test", "size_bytes", "gpu"},
             .help = "copy bandwidth of one test at one size on one GPU or all",
             .chart = {.kind = ChartKind::kPerSubject, .names = MemoryChart,
                       .labels = {"test", "gpu"},
                       .family = "Memory and PCIe copies per GPU"}},
        },
  };
}

}  // namespace cmax::suites::memory
