// Device kernels of the GPU suites, behind plain host functions (the host
// code is compiled by the C++ compiler, only kernels.cu by nvcc). Every
// launcher enqueues on `stream` and returns the launch's error
// (cudaGetLastError); errors during execution surface at the next
// synchronisation.
#ifndef CMAX_BENCHMARKS_CUDA_KERNELS_H_
#define CMAX_BENCHMARKS_CUDA_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace cmax::bench {

// Element types of GEMM operands as stored in device memory.
enum class Elem { kF64, kF32, kBf16, kF16, kF8E4M3 };

// count elements of `type`, uniform in [-1, 1) from (seed, index), rounded to
// the type. Never zeros: zeros inflate GPU throughput (DESIGN.md).
cudaError_t LaunchFillUniform(void* data, Elem type, int64_t count, uint64_t seed,
                              cudaStream_t stream);

// For each of `count` sampled positions (i, j) (device array ij: i0, j0, i1,
// j1, ...), recomputes D(i,j) = sum_l A(i,l) B(l,j) in fp64 from the stored
// operands, for the layout the GEMM suite uses (column-major, "TN"):
//   A(i,l) = a[l + i*k]   (A stored k x m, used transposed)
//   B(l,j) = b[l + j*k]   (B stored k x n)
//   D(i,j) = d[i + j*m]   (D stored m x n)
// and writes out[3s] = D(i,j) as computed by the GEMM, out[3s+1] = the
// reference times ab_scale, out[3s+2] = sqrt(sum (a*b)^2) times |ab_scale|.
// Supported (in, out): (F64, F64), (F32, F32), (Bf16, Bf16), (F16, F16),
// (F8E4M3, Bf16); anything else returns cudaErrorInvalidValue.
cudaError_t LaunchGemmReference(const void* a, const void* b, const void* d, Elem in, Elem out,
                                int64_t m, int64_t k, const int64_t* ij, int count,
                                double ab_scale, double* result, cudaStream_t stream);

// words 64-bit words: word i = PatternWord(seed, i).
cudaError_t LaunchFillPattern(uint64_t* data, int64_t words, uint64_t seed, cudaStream_t stream);
// Adds the number of words differing from the pattern to *mismatches.
cudaError_t LaunchCheckPattern(const uint64_t* data, int64_t words, uint64_t seed,
                               unsigned long long* mismatches, cudaStream_t stream);
// The HBM bandwidth kernel: dst = src over `bytes` (a multiple of 16), 16-byte
// loads and stores, a grid sized to `sm_count`. Moves 2 * bytes through HBM.
cudaError_t LaunchStreamCopy(const void* src, void* dst, int64_t bytes, int sm_count,
                             cudaStream_t stream);

// Adds to *differing the number of elements (elem_bytes 1, 2, 4 or 8) whose
// bit patterns differ between a and b: the burn-in's check of an iteration's
// output against the first iteration's (exact, see gpu_burnin.cc).
cudaError_t LaunchCountDiffering(const void* a, const void* b, int64_t count, int elem_bytes,
                                 unsigned long long* differing, cudaStream_t stream);

// The consistency check's long reduction, in a fixed tree order that does not
// depend on the GPU: block p of kTreeThreads threads sums elements
// [p * kTreeChunk, (p + 1) * kTreeChunk) (thread t adds t, t + kTreeThreads,
// ... in that order, then a shared-memory halving tree), writing
// partials[p]; one block then reduces the partials the same way into *total.
// partials must hold TreePartials(n) floats.
inline constexpr int kTreeThreads = 256;
inline constexpr int64_t kTreeChunk = 16 * kTreeThreads;
inline int64_t TreePartials(int64_t n) { return (n + kTreeChunk - 1) / kTreeChunk; }
cudaError_t LaunchFixedTreeSum(const float* in, int64_t n, float* partials, float* total,
                               cudaStream_t stream);

// FMA chain: out[i] = x after `steps` of x = fma(x, 0.999, c_i) starting at
// x = in[i], with c_i = in[(7 i + 1) mod n] / 1024, in fp32 (fmaf) or fp64
// (fma) as `type` says (kF32 or kF64; anything else cudaErrorInvalidValue).
// Every step is one explicit fused multiply-add, so the result does not
// depend on the compiler's contraction choices.
cudaError_t LaunchFmaChain(const void* in, void* out, Elem type, int64_t n, int steps,
                           cudaStream_t stream);

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_CUDA_KERNELS_H_
