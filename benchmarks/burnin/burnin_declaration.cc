// Burn-in (benchmarks/burnin): sustained verified GEMM. --backend picks the
// binary: cmax-bench burnin for cpu (the default), cmax-bench-cuda burnin
// (benchmarks/burnin/cuda/) for cuda; this is the only way to the GPU
// burn-in (cmax-bench burnin --backend cuda does not hand over). threads
// applies to the cpu backend, gpus and bug-report to the cuda backend; the
// cpu backend runs fp32 and fp64, the cuda backend bf16 and fp32. Each
// binary refuses the rest (exit 2), so the plan is refused them too.
#include "common/suite_declaration.h"

namespace cmax::suites::burnin {

using v1::SCOPE_BARRIER;
using v1::SCOPE_NODE;

namespace {

// A Sample drawn over time per GPU or host sensor in the HTML scorecard.
ChartSpec OverTime(const char* title) {
  return {.kind = ChartKind::kOverTime,
          .title = title,
          .family = "Burn-in clocks, temperature and power over time",
          .family_needs = "burn-in Samples"};
}

}  // namespace

SuiteInfo Declaration() {
  return {
    .name = "burnin",
    .category = "reliability",
    .help = "sustained verified GEMM load with telemetry (host or GPUs)",
    .scopes = {SCOPE_NODE, SCOPE_BARRIER},
    .default_timeout_s = 7200,
    .exclusive = true,
    .params =
        {
            {.name = "backend", .type = ParamType::kEnum, .help = "cpu or cuda (default cpu)",
             .choices = {"cpu", "cuda"}},
            {.name = "duration", .type = ParamType::kNumber, .help = "seconds of load",
             .min = 1, .max = 7 * 86400},
            {.name = "threads", .type = ParamType::kInt,
             .help = "host threads, 0 for every core (default 0)", .min = 0, .max = 4096,
             .backends = {"cpu"}},
            {.name = "dtype", .type = ParamType::kEnum, .help = "element type",
             .choices = {"fp32", "fp64", "bf16"},
             .choices_by_backend = {{"cpu", {"fp32", "fp64"}}, {"cuda", {"bf16", "fp32"}}}},
            {.name = "gpus", .type = ParamType::kIntList,
             .help = "GPU indices or 'all' (cuda backend)", .backends = {"cuda"}},
            {.name = "bug-report", .type = ParamType::kEnum,
             .help = "on: nvidia-bug-report.sh after a failure (cuda backend)",
             .choices = {"on", "off"}, .backends = {"cuda"}},
        },
    .backends =
        {
            {.name = "cpu", .binary = "cmax-bench",
             .summary = "sustained verified load on the host",
             .details =
             "Sustained GEMM load on random data for --duration seconds; every iteration's output is\n"
             "compared with the first one's (tolerance 1e-3 relative for fp32, 1e-7 for fp64) and a\n"
             "differing element fails the run. Samples once a second (GFLOP/s, CPU frequency, hwmon\n"
             "temperatures), progress every few seconds, then mean and minimum-window GFLOP/s, their\n"
             "coefficient of variation and the mismatched elements.\n"
             "The GPU burn-in is `cmax-bench-cuda burnin`; --backend cuda here writes a not-measured\n"
             "record naming it and exits 2.\n"
             "--fault-inject N is TEST-ONLY: it corrupts one output element at iteration N so tests can\n"
             "check that a mismatch is detected and named. Never use it in an evaluation.\n"
             "Exit: 0 verified, 1 mismatches, 2 could not run."},
            {.name = "cuda", .binary = "cmax-bench-cuda",
             .summary = "sustained GEMM on every GPU, outputs checked bit for bit, NVML telemetry",
             .details =
             "Sustained GEMM load on every selected GPU at once (cuBLASLt, random operands, one\n"
             "algorithm kept for the run). Every iteration's output is compared bit for bit with the\n"
             "first iteration's on the GPU; a differing element is a CRITICAL finding (silent data\n"
             "corruption suspect). Telemetry through NVML once a second (temperature, memory\n"
             "temperature, power, SM clock, clock event reasons, ECC counters) as Samples; runs\n"
             "longer than 600 s write about 600 windows a metric (min/mean/max). At the end, per GPU: mean and\n"
             "slowest-window TFLOP/s, their coefficient of variation, maximum temperatures, time\n"
             "throttled and why, mismatched elements, new ECC errors.\n"
             "--fault-inject N is TEST-ONLY: it corrupts one output element at iteration N so tests\n"
             "can check that the mismatch is detected. Never use it in an evaluation.\n"
             "Exit: 0 passed, 1 found failures, 2 could not run.\n"
             "Xids in the kernel log are watched during the run; on a failure the suite keeps\n"
             "evidence and runs nvidia-bug-report.sh. More: benchmarks/burnin/README.md."},
        },
    .metrics =
        {
            {.name = "burnin_tflops_mean", .unit = "TFLOP/s", .fleet = true,
             .help = "mean throughput over the burn-in"},
            // Samples, drawn over time per GPU or host in the HTML scorecard.
            {.name = "gpu_sm_clock_mhz", .unit = "MHz", .help = "SM clock, once a second",
             .chart = OverTime("GPU SM clock over time")},
            {.name = "gpu_temperature_c", .unit = "C", .better = MetricBetter::kLower,
             .help = "GPU temperature, once a second",
             .chart = OverTime("GPU temperature over time")},
            {.name = "gpu_power_w", .unit = "W", .better = MetricBetter::kNeither,
             .help = "GPU power, once a second", .chart = OverTime("GPU power over time")},
            {.name = "burnin_gflops", .unit = "GFLOP/s", .help = "host throughput, once a second",
             .chart = OverTime("CPU burn-in throughput over time")},
            {.name = "cpu_freq_mhz", .unit = "MHz", .help = "CPU frequency, once a second",
             .chart = OverTime("CPU frequency over time")},
            {.name = "temperature_c", .unit = "C", .better = MetricBetter::kLower,
             .help = "hwmon temperatures, once a second",
             .chart = OverTime("Host temperature over time")},
            // Every other metric the suite writes (the declarations test reads them all).
            {.name = "burnin_gflops_mean", .unit = "GFLOP/s", .better = MetricBetter::kHigher,
             .help = "cpu backend: mean host GEMM throughput over the run"},
            {.name = "burnin_gflops_min_window", .unit = "GFLOP/s", .better = MetricBetter::kHigher,
             .help = "cpu backend: the slowest one-second window's throughput"},
            {.name = "burnin_gflops_cv", .unit = "ratio", .better = MetricBetter::kLower,
             .help = "cpu backend: coefficient of variation of the windows' throughput"},
            {.name = "burnin_iterations", .unit = "count", .better = MetricBetter::kNeither,
             .help = "GEMM iterations run (per GPU on the cuda backend)"},
            {.name = "burnin_mismatched_elements", .unit = "count", .better = MetricBetter::kLower,
             .help = "cpu backend: output elements that differed from the first iteration's"},
            {.name = "burnin_seconds", .unit = "s", .better = MetricBetter::kNeither,
             .help = "how long the load ran"},
            {.name = "burnin_temperature_max_c", .unit = "C", .better = MetricBetter::kLower,
             .help = "cpu backend: the highest hwmon temperature seen"},
            {.name = "burnin_cpu_freq_min_mhz", .unit = "MHz", .better = MetricBetter::kHigher,
             .help = "cpu backend: the lowest one-second mean CPU frequency"},
            {.name = "burnin_cpu_freq_max_mhz", .unit = "MHz", .better = MetricBetter::kNeither,
             .help = "cpu backend: the highest one-second mean CPU frequency"},
            {.name = "burnin_tflops_min_window", .unit = "TFLOP/s", .better = MetricBetter::kHigher,
             .help = "cuda backend: the slowest window's throughput, per GPU"},
            {.name = "burnin_cv", .unit = "ratio", .better = MetricBetter::kLower,
             .help = "cuda backend: coefficient of variation of the windows' throughput, per GPU"},
            {.name = "burnin_mismatches", .unit = "count", .better = MetricBetter::kLower,
             .help = "cuda backend: output elements that differed from the first iteration's, per GPU"},
            {.name = "burnin_max_temp_c", .unit = "C", .better = MetricBetter::kLower,
             .help = "cuda backend: the highest GPU temperature seen"},
            {.name = "burnin_max_memory_temp_c", .unit = "C", .better = MetricBetter::kLower,
             .help = "cuda backend: the highest GPU memory temperature seen"},
            {.name = "burnin_max_power_w", .unit = "W", .better = MetricBetter::kNeither,
             .help = "cuda backend: the highest GPU power draw seen"},
            {.name = "burnin_throttled_s", .unit = "s", .better = MetricBetter::kLower,
             .help = "cuda backend: time with any clock event reason that slows the clocks"},
            {.name = "burnin_throttled_hot_s", .unit = "s", .better = MetricBetter::kLower,
             .help = "cuda backend: time slowed for heat or the hardware power brake"},
            {.name = "burnin_power_capped_s", .unit = "s", .better = MetricBetter::kLower,
             .help = "cuda backend: time held at the software power cap"},
            {.name = "burnin_xids", .unit = "count", .better = MetricBetter::kLower,
             .help = "cuda backend: Xid events logged for the GPU during the run"},
            {.name = "burnin_tflops", .unit = "TFLOP/s", .better = MetricBetter::kHigher,
             .help = "cuda backend: GPU throughput, once a second (Sample)"},
            {.name = "gpu_memory_temperature_c", .unit = "C", .better = MetricBetter::kLower,
             .help = "GPU memory temperature, once a second (Sample)"},
            {.name = "gpu_throttle_reasons", .unit = "bitmask", .better = MetricBetter::kNeither,
             .help = "NVML clock event reasons seen in the window (Sample)"},
            {.name = "gpu_ecc_corrected_volatile", .unit = "count", .better = MetricBetter::kLower,
             .help = "corrected ECC errors since the driver loaded (Sample)"},
            {.name = "gpu_ecc_uncorrected_volatile", .unit = "count", .better = MetricBetter::kLower,
             .help = "uncorrected ECC errors since the driver loaded (Sample)"},
        },
  };
}

}  // namespace cmax::suites::burnin
