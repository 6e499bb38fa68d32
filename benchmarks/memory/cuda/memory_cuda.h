// cmax_memory_cuda: the memory suite (`cmax-bench-cuda memory`), GPU only:
// H2D/D2H (NUMA-local pinned), D2D, HBM and P2P bandwidth, verified.
#ifndef CMAX_BENCHMARKS_MEMORY_CUDA_MEMORY_CUDA_H_
#define CMAX_BENCHMARKS_MEMORY_CUDA_MEMORY_CUDA_H_

namespace cmax::bench {

// Exit 0 passed, 1 found failures, 2 could not run (bad usage, no GPU).
int RunCudaMemory(int argc, char** argv);

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_MEMORY_CUDA_MEMORY_CUDA_H_
