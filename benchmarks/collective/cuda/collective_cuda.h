// cmax_collective_cuda: the NCCL backend of the collective suite
// (`cmax-bench-cuda collective`), like nccl-tests, verified. The gloo and MPI
// backends are cmax-bench collective.
#ifndef CMAX_BENCHMARKS_COLLECTIVE_CUDA_COLLECTIVE_CUDA_H_
#define CMAX_BENCHMARKS_COLLECTIVE_CUDA_COLLECTIVE_CUDA_H_

namespace cmax::bench {

// Exit 0 passed, 1 found failures, 2 could not run.
int RunCudaCollective(int argc, char** argv);

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_COLLECTIVE_CUDA_COLLECTIVE_CUDA_H_
