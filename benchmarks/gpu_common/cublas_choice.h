// Host-only decisions around cuBLASLt that the GPU suites make and tests can
// check without a GPU: the name of a cublasStatus_t, which reduction schemes
// a GEMM may use, which offered algorithm is free of split-K.
//
// Values are those of cublas_api.h / cublasLt.h (CUDA 12.x and 13.x);
// benchmarks/cuda/cuda_env.cc static_asserts them against the headers.
#ifndef CMAX_BENCHMARKS_GPU_COMMON_CUBLAS_CHOICE_H_
#define CMAX_BENCHMARKS_GPU_COMMON_CUBLAS_CHOICE_H_

#include <cstdint>
#include <string>
#include <vector>

namespace cmax::bench {

// "CUBLAS_STATUS_NOT_SUPPORTED" for 15; "CUBLAS_STATUS_<n>" for a value this
// table does not know. Used when cuBLASLt itself (cublasLtGetStatusName) is
// not loaded.
std::string CublasStatusNameFallback(int status);

// cublasLtReductionScheme_t bits.
inline constexpr uint32_t kReductionNone = 0;
inline constexpr uint32_t kReductionInplace = 1;
inline constexpr uint32_t kReductionComputeType = 2;
inline constexpr uint32_t kReductionOutputType = 4;
inline constexpr uint32_t kReductionAll = 7;

// "none", "inplace", "compute_type", "output_type" (or "mask_<n>").
std::string ReductionSchemeName(uint32_t scheme);

// The reduction-scheme mask the throughput GEMM asks the heuristic for.
// cuBLASLt adds split-K partial sums in the output type for two of its
// schemes: OUTPUT_TYPE, and INPLACE ("parts are added up in the output data
// type", cublasLtReductionScheme_t in the cuBLASLt documentation). With a
// 16-bit output (bf16, fp16; also fp8 inputs with a bf16 output) each split
// then rounds to 8 or 11 bits, more than the verification allows on narrow
// shapes with long k, and a healthy GPU would fail as "wrong result". So
// for outputs of fewer than 4 bytes only the COMPUTE_TYPE scheme (fp32) is
// admitted; wider outputs may use any scheme.
uint32_t GemmReductionMask(int output_bytes);

// True for the schemes that add split-K parts in the output type (INPLACE,
// OUTPUT_TYPE): the verification's tolerance widens for those
// (gemm_check.h, GemmReduction). NONE and COMPUTE_TYPE: false.
bool ReducesInOutputType(uint32_t scheme);

// What an algorithm's configuration says about split-K
// (CUBLASLT_ALGO_CONFIG_SPLITK_NUM, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME).
struct AlgoSplit {
  int split_k = 1;                 // 1: no split
  uint32_t reduction_scheme = 0;   // kReduction*; meaningful when split_k > 1
};

// The index of the first algorithm (the heuristic's order: best first)
// whose output element is summed by one block in one order, i.e.
// split_k <= 1; -1 when every algorithm splits k. The burn-in and the
// consistency check need bit-for-bit repeatable results, which a split-K
// reduction with atomics does not give (cuBLAS docs, "Results
// reproducibility"); a zero reduction mask does not mean "none" (cuBLASLt
// documents the mask, not 0 = no split-K), so the suites ask for several
// algorithms and take the first without split-K instead.
int FirstWithoutSplitK(const std::vector<AlgoSplit>& algos);

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_GPU_COMMON_CUBLAS_CHOICE_H_
