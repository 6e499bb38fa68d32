// The host GEMM measurement behind `cmax-bench gemm --backend cpu`: OpenBLAS
// sgemm/dgemm on all cores, random inputs, warm-up, median of the timed
// iterations, sampled elements verified against a long double reference.
#ifndef CMAX_BENCHMARKS_GEMM_HOST_GEMM_H_
#define CMAX_BENCHMARKS_GEMM_HOST_GEMM_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "benchmarks/gpu_common/gemm_check.h"

namespace cmax::bench {

struct HostGemmOptions {
  GemmDtype dtype = GemmDtype::kFp64;  // kFp32 or kFp64 only
  int64_t m = 4096, n = 4096, k = 4096;
  int iters = 5;
  int warmup = 1;
  int threads = 0;      // 0: every online CPU
  int samples = 256;    // output elements verified
  uint64_t seed = 0x5eed;
  // TEST ONLY: corrupt one sampled output element after the timed runs and
  // before verification, to prove a wrong result is caught.
  bool fault_inject = false;
};

struct HostGemmResult {
  double median_s = 0;      // median time of one GEMM
  double gflops = 0;        // 2mnk / median_s / 1e9
  int threads = 0;          // threads OpenBLAS used
  std::string blas_config;  // openblas_get_config()
  GemmVerdict verdict;
};

// INVALID_ARGUMENT for an unsupported dtype or non-positive sizes,
// RESOURCE_EXHAUSTED when the matrices cannot be allocated. A wrong result is
// an OK status whose verdict is not ok().
absl::StatusOr<HostGemmResult> RunHostGemm(const HostGemmOptions& options);

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_GEMM_HOST_GEMM_H_
