// cmax-bench-cuda: the GPU suites, usable alone like nccl-tests.
//   cmax-bench-cuda <suite> [options]     (cmax-bench-cuda <suite> --help)
// No gRPC and no MPI: ranks, when a suite needs them, come from the
// environment (DESIGN.md). Each suite's GPU half is a library in its own
// folder (benchmarks/<suite>/cuda/); this file is only their table.
#include <cstdio>

#include "benchmarks/burnin/cuda/burnin_cuda.h"
#include "benchmarks/consistency/cuda/consistency_cuda.h"
#include "benchmarks/gemm/cuda/gemm_cuda.h"
#include "benchmarks/memory/cuda/memory_cuda.h"
#include "benchmarks/suite.h"
#include "common/version.h"
#ifdef CMAX_HAVE_NCCL
#include "benchmarks/collective/cuda/collective_cuda.h"
#endif

namespace cmax::bench {

namespace {
const SuiteEntry kSuites[] = {
    {"gemm", RunCudaGemm, "GEMM per GPU through cuBLASLt, verified (bf16 fp16 fp8 tf32 fp32 fp64)"},
    {"memory", RunCudaMemory, "H2D/D2H (NUMA-local pinned), D2D, HBM and P2P bandwidth, verified"},
    {"burnin", RunCudaBurnin, "sustained GEMM on every GPU, outputs checked bit for bit, NVML telemetry"},
    {"consistency", RunCudaConsistency, "deterministic GPU workloads reduced to digests (SDC check)"},
#ifdef CMAX_HAVE_NCCL
    {"collective", RunCudaCollective, "NCCL collectives like nccl-tests, verified; transport check"},
#endif
};
}  // namespace
}  // namespace cmax::bench

int main(int argc, char** argv) {
  using namespace cmax::bench;
  char version[96];
  std::snprintf(version, sizeof(version), "cmax-bench-cuda %s (built with CUDA %d.%d)",
                cmax::kCmaxVersion, CMAX_CUDA_VERSION_MAJOR, CMAX_CUDA_VERSION_MINOR);
  const SuiteBinary binary = {
      .name = "cmax-bench-cuda",
      .about = "Runs one cmax GPU suite on this node. Human output by default;\n"
               "--jsonl writes one cmax.v1.Record per line instead.\n"
               "Exit codes: 0 passed, 1 ran and found failures, 2 could not run\n"
               "(no GPU, no driver, a driver too old for this build, no cuBLASLt or\n"
               "NCCL on the node, bad usage). cuBLASLt and NCCL are loaded at start-up\n"
               "from the node: LD_LIBRARY_PATH, /usr/local/cuda, /usr/lib, pip wheels'\n"
               "nvidia/*/lib of python3 on PATH (CMAX_CUDA_LIBRARY_PATH=DIR[:DIR]\n"
               "searches only there).\n",
      .version = version,
      .suites = kSuites,
      .count = sizeof(kSuites) / sizeof(kSuites[0]),
  };
  return RunSuiteBinary(binary, argc, argv);
}
