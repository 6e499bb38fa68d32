// The CPU burn-in loop: GEMM on random data for a fixed time, each
// iteration's output compared with the first one's (a differing element is a
// failure), telemetry Samples once a second, Progress every few seconds.
#ifndef CMAX_BENCHMARKS_BURNIN_CPU_BURNIN_H_
#define CMAX_BENCHMARKS_BURNIN_CPU_BURNIN_H_

#include <cstdint>
#include <optional>
#include <string>

#include "common/record_io.h"

namespace cmax::burnin {

struct CpuBurninOptions {
  double duration_s = 10;
  int threads = 0;           // 0: every core
  std::string dtype = "fp32";  // fp32 | fp64
  int size = 1024;           // n of the n x n matrices
  int64_t fault_inject = 0;  // TEST ONLY: corrupt one element at this iteration (>= 1)
  uint64_t seed = 20240601;
  double progress_every_s = 3;
};

struct Mismatch {
  int64_t iteration = 0;
  int row = 0, col = 0;
  double expected = 0, got = 0;
};

struct CpuBurninResult {
  int64_t iterations = 0;       // verified iterations after the reference
  double seconds = 0;
  double gflops_mean = 0;
  double gflops_min_window = 0;  // slowest full one-second window
  double gflops_cv = 0;          // coefficient of variation over windows
  int windows = 0;
  int64_t mismatched_elements = 0;
  std::optional<Mismatch> first_mismatch;
  std::optional<double> max_temperature_c;
  std::optional<double> min_freq_mhz, max_freq_mhz;
  std::string implementation;
  int threads = 0;
};

// Relative tolerance per dtype (gpu-burn uses 1e-3 for float, 1e-7 for double).
double ToleranceFor(const std::string& dtype);

// Runs the loop, writing Samples and Progress to `out` as it goes. Returns
// the per-run figures; the caller writes Measurements and Findings.
// INVALID_ARGUMENT for a bad dtype, size or duration.
absl::StatusOr<CpuBurninResult> RunCpuBurnin(const CpuBurninOptions& options, RecordWriter* out);

}  // namespace cmax::burnin

#endif  // CMAX_BENCHMARKS_BURNIN_CPU_BURNIN_H_
