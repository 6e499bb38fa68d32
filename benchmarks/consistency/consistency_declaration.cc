// Numerical consistency (benchmarks/consistency): digests of deterministic
// workloads, compared across the fleet by benchmarks/consistency/consistency_judge.cc.
// cpu (the default) in cmax-bench, cuda in cmax-bench-cuda consistency
// (benchmarks/consistency/cuda/); gpus applies to the cuda backend only.
#include "common/suite_declaration.h"

namespace cmax::suites::consistency {

using v1::SCOPE_BARRIER;
using v1::SCOPE_NODE;

SuiteInfo Declaration() {
  return {
    .name = "consistency",
    .category = "reliability",
    .help = "deterministic workloads reduced to digests (silent data corruption check)",
    .scopes = {SCOPE_NODE, SCOPE_BARRIER},
    .default_timeout_s = 900,
    .exclusive = true,
    .params =
        {
            {.name = "backend", .type = ParamType::kEnum, .help = "cpu or cuda (default cpu)",
             .choices = {"cpu", "cuda"}},
            {.name = "gpus", .type = ParamType::kIntList,
             .help = "GPU indices or 'all' (cuda backend)", .backends = {"cuda"}},
        },
    .backends =
        {
            {.name = "cpu", .binary = "cmax-bench",
             .summary = "deterministic workloads reduced to digests",
             .details =
             "Runs deterministic workloads with fixed seeds and fixed algorithms (GEMM fp32 and fp64 in\n"
             "a fixed loop order, a long fp32 reduction, an fp64 FMA chain, a memory pattern) and\n"
             "reduces each output to a digest (FNV-1a 64). Each is repeated; repeats that differ on\n"
             "this node fail at once. The coordinator compares digests across the fleet: machines of\n"
             "the same model and versions must agree bit for bit.\n"
             "The GPU workloads are `cmax-bench-cuda consistency`; --backend cuda here writes a\n"
             "not-measured record naming it and exits 2."},
            {.name = "cuda", .binary = "cmax-bench-cuda",
             .summary = "deterministic GPU workloads reduced to digests (SDC check)",
             .details =
             "Deterministic GPU workloads with fixed seeds and fixed algorithms (a cuBLASLt GEMM per\n"
             "supported dtype with one algorithm chosen deterministically and no split-K reduction,\n"
             "a long fp32 reduction in a fixed tree order, fp32/fp64 FMA chains, an HBM pattern copy),\n"
             "each output reduced to an FNV-1a 64 digest. Each runs --repeats times per GPU; repeats\n"
             "that differ fail at once. The coordinator compares digests across the fleet: GPUs of\n"
             "the same model and driver/CUDA/cuBLAS versions must agree bit for bit."},
        },
    .metrics =
        {
            {.name = "consistency_digest", .unit = "sum", .better = MetricBetter::kNeither,
             .help = "digest of the workload's output: compared across repeats and GPUs, its size means nothing"},
        },
  };
}

}  // namespace cmax::suites::consistency
