// cmax-bench: every host suite, usable alone like nccl-tests.
//   cmax-bench <suite> [options]     (cmax-bench <suite> --help)

#include "benchmarks/suite.h"
#include "common/version.h"

namespace cmax::bench {
#include "bench_suites.inc"  // generated: benchmarks/CMakeLists.txt
}  // namespace cmax::bench

int main(int argc, char** argv) {
  using namespace cmax::bench;
  const SuiteBinary binary = {
      .name = "cmax-bench",
      .about = "Runs one cmax evaluation suite on this node. Human output by default;\n"
               "--jsonl writes one cmax.v1.Record per line instead.\n"
               "Exit codes: 0 passed, 1 ran and found failures, 2 could not run.\n",
      .version = std::string("cmax-bench ") + cmax::kCmaxVersion,
      .suites = kSuites,
      .count = sizeof(kSuites) / sizeof(kSuites[0]),
  };
  return RunSuiteBinary(binary, argc, argv);
}
