// cmax-bench-cuda: the GPU suites, usable alone like nccl-tests.
//   cmax-bench-cuda <suite> [options]     (cmax-bench-cuda <suite> --help)
// No gRPC and no MPI: ranks, when a suite needs them, come from the
// environment (DESIGN.md). Each suite's GPU half is a library in its own
// folder (benchmarks/<suite>/cuda/); their table is generated from the
// suite list in benchmarks/CMakeLists.txt.
#include <cstdio>

#include "benchmarks/suite.h"
#include "common/version.h"

namespace cmax::bench {
#include "cuda_suites.inc"  // generated: benchmarks/CMakeLists.txt
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
