// How many GPUs the CUDA runtime sees here, for the [gpu] tests that skip
// without one. 0 with `why` set (the CUDA error's name, or "no device").
#ifndef CMAX_TESTS_BENCHMARKS_CUDA_USABLE_GPUS_H_
#define CMAX_TESTS_BENCHMARKS_CUDA_USABLE_GPUS_H_

#include <cuda_runtime.h>

#include <string>

namespace cmax::testing {

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

}  // namespace cmax::testing

#endif  // CMAX_TESTS_BENCHMARKS_CUDA_USABLE_GPUS_H_
