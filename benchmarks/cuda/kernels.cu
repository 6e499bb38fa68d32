// Kernels of the GPU suites: random operands, the fp64 GEMM reference for
// sampled elements, the copy pattern and its check, the HBM stream kernel.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <type_traits>

#include "benchmarks/cuda/kernels.h"
#include "benchmarks/cuda/pattern.h"

namespace cmax::bench {
namespace {

constexpr int kThreads = 256;

__device__ inline double ToDouble(double x) { return x; }
__device__ inline double ToDouble(float x) { return x; }
__device__ inline double ToDouble(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ inline double ToDouble(__half x) { return __half2float(x); }
__device__ inline double ToDouble(__nv_fp8_e4m3 x) { return static_cast<float>(x); }

template <typename T>
__device__ inline T FromFloat(float v);
template <>
__device__ inline float FromFloat<float>(float v) { return v; }
template <>
__device__ inline __nv_bfloat16 FromFloat<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
template <>
__device__ inline __half FromFloat<__half>(float v) { return __float2half(v); }
template <>
__device__ inline __nv_fp8_e4m3 FromFloat<__nv_fp8_e4m3>(float v) { return __nv_fp8_e4m3(v); }

// Uniform in [-1, 1) from 53 random bits.
__device__ inline double Uniform(uint64_t seed, uint64_t i) {
  return static_cast<double>(PatternWord(seed, i) >> 11) * 0x1.0p-52 - 1.0;
}

template <typename T>
__global__ void FillUniformKernel(T* data, int64_t count, uint64_t seed) {
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < count;
       i += stride) {
    if constexpr (std::is_same_v<T, double>) {
      data[i] = Uniform(seed, i);
    } else {
      data[i] = FromFloat<T>(static_cast<float>(Uniform(seed, i)));
    }
  }
}

template <typename TIn, typename TOut>
__global__ void GemmReferenceKernel(const TIn* a, const TIn* b, const TOut* d, int64_t m,
                                    int64_t k, const int64_t* ij, double ab_scale,
                                    double* result) {
  __shared__ double s_sum[kThreads];
  __shared__ double s_sq[kThreads];
  const int s = blockIdx.x;
  const int64_t i = ij[2 * s], j = ij[2 * s + 1];
  const TIn* arow = a + i * k;  // A(i, l) = a[l + i*k]
  const TIn* bcol = b + j * k;  // B(l, j) = b[l + j*k]
  double sum = 0, sq = 0;
  for (int64_t l = threadIdx.x; l < k; l += blockDim.x) {
    double p = ToDouble(arow[l]) * ToDouble(bcol[l]);
    sum += p;
    sq += p * p;
  }
  s_sum[threadIdx.x] = sum;
  s_sq[threadIdx.x] = sq;
  __syncthreads();
  for (int w = blockDim.x / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) {
      s_sum[threadIdx.x] += s_sum[threadIdx.x + w];
      s_sq[threadIdx.x] += s_sq[threadIdx.x + w];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    result[3 * s] = ToDouble(d[i + j * m]);
    result[3 * s + 1] = s_sum[0] * ab_scale;
    result[3 * s + 2] = sqrt(s_sq[0]) * fabs(ab_scale);
  }
}

__global__ void FillPatternKernel(uint64_t* data, int64_t words, uint64_t seed) {
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < words;
       i += stride) {
    data[i] = PatternWord(seed, static_cast<uint64_t>(i));
  }
}

__global__ void CheckPatternKernel(const uint64_t* data, int64_t words, uint64_t seed,
                                   unsigned long long* mismatches) {
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  unsigned long long bad = 0;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < words;
       i += stride) {
    bad += data[i] != PatternWord(seed, static_cast<uint64_t>(i));
  }
  if (bad) atomicAdd(mismatches, bad);
}

// Four independent 16-byte loads in flight per thread before the stores.
__global__ void StreamCopyKernel(const uint4* __restrict__ src, uint4* __restrict__ dst,
                                 int64_t n) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  for (; i + 3 * stride < n; i += 4 * stride) {
    uint4 v0 = src[i], v1 = src[i + stride], v2 = src[i + 2 * stride], v3 = src[i + 3 * stride];
    dst[i] = v0;
    dst[i + stride] = v1;
    dst[i + 2 * stride] = v2;
    dst[i + 3 * stride] = v3;
  }
  for (; i < n; i += stride) dst[i] = src[i];
}


template <typename W>
__global__ void CountDifferingKernel(const W* a, const W* b, int64_t n,
                                     unsigned long long* differing) {
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  unsigned long long bad = 0;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride) {
    bad += a[i] != b[i];
  }
  if (bad) atomicAdd(differing, bad);
}

// One block: sums [base, base + len) of `in` in the fixed order described in
// kernels.h and returns the block's sum in thread 0.
__device__ float FixedBlockSum(const float* in, int64_t base, int64_t len) {
  __shared__ float s[kTreeThreads];
  float acc = 0.0f;
  for (int64_t j = threadIdx.x; j < len; j += kTreeThreads) acc += in[base + j];
  s[threadIdx.x] = acc;
  __syncthreads();
  for (int w = kTreeThreads / 2; w > 0; w /= 2) {
    if (threadIdx.x < w) s[threadIdx.x] += s[threadIdx.x + w];
    __syncthreads();
  }
  return s[0];
}

__global__ void TreePartialsKernel(const float* in, int64_t n, float* partials) {
  const int64_t base = static_cast<int64_t>(blockIdx.x) * kTreeChunk;
  const int64_t len = n - base < kTreeChunk ? n - base : kTreeChunk;
  float sum = FixedBlockSum(in, base, len);
  if (threadIdx.x == 0) partials[blockIdx.x] = sum;
}

__global__ void TreeTotalKernel(const float* partials, int64_t count, float* total) {
  float sum = FixedBlockSum(partials, 0, count);
  if (threadIdx.x == 0) *total = sum;
}

template <typename T>
__global__ void FmaChainKernel(const T* in, T* out, int64_t n, int steps) {
  int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; i < n;
       i += stride) {
    T x = in[i];
    const T c = in[(7 * i + 1) % n] / T(1024);
    const T a = T(0.999);
    for (int s = 0; s < steps; ++s) {
      if constexpr (std::is_same_v<T, float>) {
        x = fmaf(x, a, c);
      } else {
        x = fma(x, a, c);
      }
    }
    out[i] = x;
  }
}

int GridFor(int64_t work, int max_blocks) {
  int64_t blocks = (work + kThreads - 1) / kThreads;
  if (blocks > max_blocks) blocks = max_blocks;
  return blocks < 1 ? 1 : static_cast<int>(blocks);
}

template <typename T>
cudaError_t Fill(void* data, int64_t count, uint64_t seed, cudaStream_t stream) {
  FillUniformKernel<T><<<GridFor(count, 65536), kThreads, 0, stream>>>(static_cast<T*>(data),
                                                                        count, seed);
  return cudaGetLastError();
}

template <typename TIn, typename TOut>
cudaError_t Reference(const void* a, const void* b, const void* d, int64_t m, int64_t k,
                      const int64_t* ij, int count, double ab_scale, double* result,
                      cudaStream_t stream) {
  GemmReferenceKernel<TIn, TOut><<<count, kThreads, 0, stream>>>(
      static_cast<const TIn*>(a), static_cast<const TIn*>(b), static_cast<const TOut*>(d), m, k,
      ij, ab_scale, result);
  return cudaGetLastError();
}

}  // namespace

cudaError_t LaunchFillUniform(void* data, Elem type, int64_t count, uint64_t seed,
                              cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  switch (type) {
    case Elem::kF64: return Fill<double>(data, count, seed, stream);
    case Elem::kF32: return Fill<float>(data, count, seed, stream);
    case Elem::kBf16: return Fill<__nv_bfloat16>(data, count, seed, stream);
    case Elem::kF16: return Fill<__half>(data, count, seed, stream);
    case Elem::kF8E4M3: return Fill<__nv_fp8_e4m3>(data, count, seed, stream);
  }
  return cudaErrorInvalidValue;
}

cudaError_t LaunchGemmReference(const void* a, const void* b, const void* d, Elem in, Elem out,
                                int64_t m, int64_t k, const int64_t* ij, int count,
                                double ab_scale, double* result, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  if (in == Elem::kF64 && out == Elem::kF64)
    return Reference<double, double>(a, b, d, m, k, ij, count, ab_scale, result, stream);
  if (in == Elem::kF32 && out == Elem::kF32)
    return Reference<float, float>(a, b, d, m, k, ij, count, ab_scale, result, stream);
  if (in == Elem::kBf16 && out == Elem::kBf16)
    return Reference<__nv_bfloat16, __nv_bfloat16>(a, b, d, m, k, ij, count, ab_scale, result,
                                                   stream);
  if (in == Elem::kF16 && out == Elem::kF16)
    return Reference<__half, __half>(a, b, d, m, k, ij, count, ab_scale, result, stream);
  if (in == Elem::kF8E4M3 && out == Elem::kBf16)
    return Reference<__nv_fp8_e4m3, __nv_bfloat16>(a, b, d, m, k, ij, count, ab_scale, result,
                                                   stream);
  return cudaErrorInvalidValue;
}

cudaError_t LaunchFillPattern(uint64_t* data, int64_t words, uint64_t seed, cudaStream_t stream) {
  if (words <= 0) return cudaSuccess;
  FillPatternKernel<<<GridFor(words, 65536), kThreads, 0, stream>>>(data, words, seed);
  return cudaGetLastError();
}

cudaError_t LaunchCheckPattern(const uint64_t* data, int64_t words, uint64_t seed,
                               unsigned long long* mismatches, cudaStream_t stream) {
  if (words <= 0) return cudaSuccess;
  CheckPatternKernel<<<GridFor(words, 65536), kThreads, 0, stream>>>(data, words, seed,
                                                                      mismatches);
  return cudaGetLastError();
}

cudaError_t LaunchStreamCopy(const void* src, void* dst, int64_t bytes, int sm_count,
                             cudaStream_t stream) {
  if (bytes <= 0 || bytes % 16 != 0) return cudaErrorInvalidValue;
  int64_t n = bytes / 16;
  // Enough resident blocks to cover every SM several times over; the
  // grid-stride loop does the rest.
  int max_blocks = (sm_count > 0 ? sm_count : 132) * 8;
  StreamCopyKernel<<<GridFor(n, max_blocks), kThreads, 0, stream>>>(
      static_cast<const uint4*>(src), static_cast<uint4*>(dst), n);
  return cudaGetLastError();
}

cudaError_t LaunchCountDiffering(const void* a, const void* b, int64_t count, int elem_bytes,
                                 unsigned long long* differing, cudaStream_t stream) {
  if (count <= 0) return cudaSuccess;
  const int grid = GridFor(count, 65536);
  switch (elem_bytes) {
    case 1:
      CountDifferingKernel<<<grid, kThreads, 0, stream>>>(static_cast<const uint8_t*>(a),
                                                           static_cast<const uint8_t*>(b), count,
                                                           differing);
      break;
    case 2:
      CountDifferingKernel<<<grid, kThreads, 0, stream>>>(static_cast<const uint16_t*>(a),
                                                           static_cast<const uint16_t*>(b), count,
                                                           differing);
      break;
    case 4:
      CountDifferingKernel<<<grid, kThreads, 0, stream>>>(static_cast<const uint32_t*>(a),
                                                           static_cast<const uint32_t*>(b), count,
                                                           differing);
      break;
    case 8:
      CountDifferingKernel<<<grid, kThreads, 0, stream>>>(static_cast<const uint64_t*>(a),
                                                           static_cast<const uint64_t*>(b), count,
                                                           differing);
      break;
    default:
      return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

cudaError_t LaunchFixedTreeSum(const float* in, int64_t n, float* partials, float* total,
                               cudaStream_t stream) {
  if (n <= 0) return cudaErrorInvalidValue;
  const int64_t parts = TreePartials(n);
  if (parts > 0x7fffffff) return cudaErrorInvalidValue;
  TreePartialsKernel<<<static_cast<unsigned>(parts), kTreeThreads, 0, stream>>>(in, n, partials);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  TreeTotalKernel<<<1, kTreeThreads, 0, stream>>>(partials, parts, total);
  return cudaGetLastError();
}

cudaError_t LaunchFmaChain(const void* in, void* out, Elem type, int64_t n, int steps,
                           cudaStream_t stream) {
  if (n <= 0) return cudaSuccess;
  const int grid = GridFor(n, 65536);
  if (type == Elem::kF32) {
    FmaChainKernel<float><<<grid, kThreads, 0, stream>>>(static_cast<const float*>(in),
                                                         static_cast<float*>(out), n, steps);
  } else if (type == Elem::kF64) {
    FmaChainKernel<double><<<grid, kThreads, 0, stream>>>(static_cast<const double*>(in),
                                                          static_cast<double*>(out), n, steps);
  } else {
    return cudaErrorInvalidValue;
  }
  return cudaGetLastError();
}

}  // namespace cmax::bench
