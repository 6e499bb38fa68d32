// `cmax-bench <suite> --backend cuda` runs the GPU suite: it replaces itself
// with cmax-bench-cuda from the same directory (execv, so the agent's
// timeout and signals reach the GPU process directly).
#ifndef CMAX_BENCHMARKS_BURNIN_CUDA_DELEGATE_H_
#define CMAX_BENCHMARKS_BURNIN_CUDA_DELEGATE_H_

#include <string>
#include <vector>

namespace cmax::bench {

// Path of cmax-bench-cuda next to the running binary; empty when absent.
std::string CudaSiblingPath();

// Execs `cmax-bench-cuda <suite> <args>` with `drop` flags (and their
// values) removed from argv[1..]. Returns only on failure, with the reason
// in `why`.
void ExecCudaSuite(const std::string& suite, int argc, char** argv,
                   const std::vector<std::string>& drop, std::string* why);

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_BURNIN_CUDA_DELEGATE_H_
