// cmax_burnin_cuda: the GPU half of the burnin suite (`cmax-bench-cuda
// burnin`): sustained cuBLASLt GEMM on every selected GPU, outputs checked
// bit for bit, NVML telemetry. The host half is cmax-bench burnin
// (benchmarks/burnin/burnin.cc).
#ifndef CMAX_BENCHMARKS_BURNIN_CUDA_BURNIN_CUDA_H_
#define CMAX_BENCHMARKS_BURNIN_CUDA_BURNIN_CUDA_H_

#include <cstdint>
#include <optional>
#include <string>

#include "benchmarks/gpu_common/gemm_check.h"

namespace cmax::bench {

struct BurninOptions {
  GemmDtype dtype = GemmDtype::kBf16;
  std::string dtype_name = "bf16";
  double duration_s = 60;
  int64_t size = 8192;
  int64_t fault_inject =
      0;  // TEST ONLY: corrupt one element at this iteration (0: never)
  std::string bug_report = "off";  // on: nvidia-bug-report.sh after a failure
  std::string artifact_dir;        // where its report goes (BugReportDir)
  double hang_timeout_s = 60;      // a batch not done by then is a hang (burnin.gpu_hang)
};

struct CudaBurninArgs {
  BurninOptions o;
  std::string gpus = "all";
  bool jsonl = false;
};

// Parses and checks the flags of `cmax-bench-cuda burnin` (argv[0] is the
// suite name). std::nullopt: run with `*a`. Otherwise the exit code to
// return: 0 after --help, 2 for bad usage (the reason is on stderr). Touches
// no GPU.
std::optional<int> ParseCudaBurninArgs(int argc, char** argv, CudaBurninArgs* a);

// The whole suite. Exit 0 passed, 1 found failures, 2 could not run.
int RunCudaBurnin(int argc, char** argv);

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_BURNIN_CUDA_BURNIN_CUDA_H_
