// Helpers of the cmax-bench-cuda tests: whether this machine has a GPU, and
// running the built binary.
#ifndef CMAX_TESTS_BENCHMARKS_CUDA_CUDA_TEST_UTIL_H_
#define CMAX_TESTS_BENCHMARKS_CUDA_CUDA_TEST_UTIL_H_

#include <cuda_runtime.h>

#include <chrono>
#include <string>
#include <vector>

#include "tests/benchmarks/suite_run.h"

namespace cmax::testing {

// How many GPUs the CUDA runtime sees here, for the [gpu] tests that skip
// without one. 0 with `why` set (the CUDA error's name, or "no device").
inline int UsableGpus(std::string* why) {
  int n = 0;
  cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    *why = cudaGetErrorName(e);
    return 0;
  }
  if (n == 0) *why = "no device";
  return n;
}

// cmax-bench-cuda `args`, with a timeout long enough for a GPU run.
inline SuiteRun RunCuda(const std::vector<std::string>& args) {
  return RunSuite("cmax-bench-cuda", args, std::chrono::seconds(300));
}

}  // namespace cmax::testing

#endif  // CMAX_TESTS_BENCHMARKS_CUDA_CUDA_TEST_UTIL_H_
