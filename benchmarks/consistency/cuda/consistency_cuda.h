// cmax_consistency_cuda: the GPU half of the consistency suite
// (`cmax-bench-cuda consistency`): deterministic GPU workloads reduced to
// digests. The host half is cmax-bench consistency.
#ifndef CMAX_BENCHMARKS_CONSISTENCY_CUDA_CONSISTENCY_CUDA_H_
#define CMAX_BENCHMARKS_CONSISTENCY_CUDA_CONSISTENCY_CUDA_H_

namespace cmax::bench {

// Exit 0 passed, 1 found failures, 2 could not run (bad usage, no GPU).
int RunCudaConsistency(int argc, char** argv);

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_CONSISTENCY_CUDA_CONSISTENCY_CUDA_H_
