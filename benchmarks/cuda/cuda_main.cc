// cmax-bench-cuda: the GPU suites, usable alone like nccl-tests.
//   cmax-bench-cuda <suite> [options]     (cmax-bench-cuda <suite> --help)
// No gRPC and no MPI: ranks, when a suite needs them, come from the
// environment (DESIGN.md).
#include <cstdio>
#include <cstring>

#include "benchmarks/suite.h"
#include "common/version.h"

namespace cmax::bench {
int RunCudaGemm(int argc, char** argv);
int RunCudaMemory(int argc, char** argv);
int RunCudaBurnin(int argc, char** argv);
int RunCudaConsistency(int argc, char** argv);
#ifdef CMAX_HAVE_NCCL
int RunCudaCollective(int argc, char** argv);
#endif

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

void Usage(FILE* out) {
  std::fprintf(out,
               "usage: cmax-bench-cuda <suite> [options]\n"
               "       cmax-bench-cuda <suite> --help\n\n"
               "Runs one cmax GPU suite on this node. Human output by default;\n"
               "--jsonl writes one cmax.v1.Record per line instead.\n"
               "Exit codes: 0 passed, 1 ran and found failures, 2 could not run\n"
               "(no GPU, no driver, a driver too old for this build, bad usage).\n\n"
               "suites:\n");
  for (const auto& s : kSuites) std::fprintf(out, "  %-10s %s\n", s.name, s.summary);
}
}  // namespace
}  // namespace cmax::bench

int main(int argc, char** argv) {
  using namespace cmax::bench;
  if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help")) {
    Usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? kExitCouldNotRun : kExitPassed;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::printf("cmax-bench-cuda %s (built with CUDA %d.%d)\n", cmax::kCmaxVersion,
                CMAX_CUDA_VERSION_MAJOR, CMAX_CUDA_VERSION_MINOR);
    return 0;
  }
  for (const auto& s : kSuites) {
    if (!std::strcmp(argv[1], s.name)) return s.main(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "cmax-bench-cuda: unknown suite '%s'\n\n", argv[1]);
  Usage(stderr);
  return kExitCouldNotRun;
}
