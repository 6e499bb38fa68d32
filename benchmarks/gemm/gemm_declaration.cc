// GEMM per GPU (cuBLASLt, cmax-bench-cuda gemm: benchmarks/gemm/cuda/) or
// on the host CPU (OpenBLAS, cmax-bench gemm): --backend picks the binary
// (SuiteBinary). gpus applies to the cuda backend only, threads to the cpu
// backend only, and the cpu backend runs fp32 and fp64 only; each binary
// refuses the rest (exit 2), so the plan is refused them too.
#include "common/suite_declaration.h"

#include "absl/strings/str_cat.h"

namespace cmax::suites::gemm {

using v1::SCOPE_NODE;

namespace {

// "gemm:<dtype> <m>x<n>x<k>[ fast_accum=<v>]": one bar chart per dtype and
// shape, per GPU (per node for the cpu backend), against the datasheet peak.
bool GemmChart(const v1::Measurement& m, const std::string&, const std::string&,
               ChartNames* out) {
  const std::string dtype = ChartLabel(m, "dtype");
  const std::string shape =
      absl::StrCat(ChartLabel(m, "m"), "x", ChartLabel(m, "n"), "x", ChartLabel(m, "k"));
  out->id = absl::StrCat("gemm:", dtype, " ", shape);
  if (const std::string fast = ChartLabel(m, "fp8_fast_accum"); !fast.empty()) {
    absl::StrAppend(&out->id, " fast_accum=", fast);
  }
  const bool cpu = ChartLabel(m, "backend") == "cpu";
  out->title =
      absl::StrCat("GEMM ", dtype, " ", shape, cpu ? " per node (CPU)" : " per GPU");
  out->peak_dtype = dtype;
  return true;
}

}  // namespace

SuiteInfo Declaration() {
  return {
    .name = "gemm",
    .category = "compute",
    .help = "verified GEMM throughput per GPU (cuBLASLt) or on the host (OpenBLAS)",
    .scopes = {SCOPE_NODE},
    .default_timeout_s = 1800,
    .exclusive = true,
    .params =
        {
            {.name = "backend", .type = ParamType::kEnum,
             .help = "cuda (every GPU, default) or cpu (OpenBLAS on all cores)",
             .choices = {"cuda", "cpu"}},
            {.name = "dtype", .type = ParamType::kEnum,
             .help = "data type (cpu: fp32 or fp64)",
             .choices = {"bf16", "fp16", "fp8", "tf32", "fp32", "fp64"},
             .choices_by_backend = {{"cpu", {"fp32", "fp64"}}}},
            {.name = "m", .type = ParamType::kInt, .help = "rows of A and C", .min = 1, .max = 65536},
            {.name = "n", .type = ParamType::kInt, .help = "columns of B and C", .min = 1,
             .max = 65536},
            {.name = "k", .type = ParamType::kInt, .help = "columns of A, rows of B", .min = 1,
             .max = 65536},
            {.name = "gpus", .type = ParamType::kIntList,
             .help = "GPU indices or 'all' (cuda backend)", .backends = {"cuda"}},
            {.name = "iters", .type = ParamType::kInt, .help = "timed iterations", .min = 1,
             .max = 100000},
            {.name = "warmup", .type = ParamType::kInt, .help = "untimed warm-up iterations", .min = 0,
             .max = 10000},
            {.name = "threads", .type = ParamType::kInt,
             .help = "OpenBLAS threads, 0 for all (cpu backend)", .min = 0, .max = 65536,
             .backends = {"cpu"}},
        },
    .backends =
        {
            {.name = "cuda", .binary = "cmax-bench-cuda",
             .summary = "GEMM per GPU through cuBLASLt, verified (bf16 fp16 fp8 tf32 fp32 fp64)",
             .details =
             "Dense GEMM through cuBLASLt on every selected GPU at once (a host thread and a\n"
             "stream per GPU): random operands, 64 MiB workspace, the heuristic's top 8\n"
             "algorithms timed and the fastest kept, median of the timed iterations, and 256\n"
             "sampled output elements recomputed in fp64 (a wrong element is a FAIL, exit 1).\n"
             "Default shapes: 8192^3 and three Llama-3 layer GEMMs; --m/--n/--k give one shape\n"
             "(missing sizes default to 8192). FP8 (E4M3 in, bf16 out) needs compute\n"
             "capability 8.9 or newer; every FP8 shape is timed twice, without and with fast\n"
             "accumulation (label fp8_fast_accum false / true; the table shows fp8-fa).\n"
             "tf32 uses the tensor cores, fp32 does not. Split-K reductions in a 16-bit\n"
             "output type are not used (labels split_k, reduction_scheme say what ran)."},
            {.name = "cpu", .binary = "cmax-bench",
             .summary = "host GEMM through OpenBLAS, verified",
             .details =
             "Host GEMM through OpenBLAS (cblas_sgemm/cblas_dgemm, row-major C = A*B) on all\n"
             "cores: random inputs, warm-up, median of the timed iterations, GFLOP/s = 2mnk/t.\n"
             "256 sampled output elements are recomputed in long double; a wrong element\n"
             "is a FAIL finding and exit code 1. The GPU GEMM is `cmax-bench-cuda gemm`."},
        },
    // fp8_fast_accum: FP8 timed with and without fast accumulation (two modes).
    .metrics =
        {
            {.name = "gemm_tflops", .unit = "TFLOP/s", .fleet = true,
             .fleet_group_keys = {"dtype", "m", "n", "k", "fp8_fast_accum"},
             .help = "GEMM throughput of one GPU (or the host) at one shape and dtype",
             .chart = {.kind = ChartKind::kPerSubject, .names = GemmChart,
                       .labels = {"dtype", "m", "n", "k", "fp8_fast_accum", "backend"},
                       .family = "GEMM TFLOP/s per GPU",
                       .reference = ChartReference::kDatasheetPeak}},
        },
  };
}

}  // namespace cmax::suites::gemm
