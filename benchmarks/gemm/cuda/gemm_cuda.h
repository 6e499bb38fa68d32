// cmax_gemm_cuda: the GPU half of the gemm suite (`cmax-bench-cuda gemm`):
// dense GEMM through cuBLASLt on every selected GPU, verified. The host half
// (OpenBLAS) is cmax-bench gemm (benchmarks/gemm/gemm.cc).
#ifndef CMAX_BENCHMARKS_GEMM_CUDA_GEMM_CUDA_H_
#define CMAX_BENCHMARKS_GEMM_CUDA_GEMM_CUDA_H_

#include <cstdint>
#include <optional>
#include <string>

namespace cmax::bench {

struct CudaGemmArgs {
  std::string dtype_name = "bf16";
  std::string gpus = "all";
  int64_t m = 0, n = 0, k = 0;  // 0: the default shapes (one given: the others 8192)
  int64_t iters = 20, warmup = 5;
  bool jsonl = false, fault_inject = false;
};

// Parses and checks the flags of `cmax-bench-cuda gemm` (argv[0] is the
// suite name). std::nullopt: run with `*a`. Otherwise the exit code to
// return: 0 after --help, 2 for bad usage (the reason is on stderr). Touches
// no GPU.
std::optional<int> ParseCudaGemmArgs(int argc, char** argv, CudaGemmArgs* a);

// The whole suite. Exit 0 passed, 1 found failures, 2 could not run.
int RunCudaGemm(int argc, char** argv);

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_GEMM_CUDA_GEMM_CUDA_H_
