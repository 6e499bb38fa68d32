// cuBLASLt pieces the GPU suites share (gemm, burnin, consistency): the
// operand and compute types per dtype, RAII owners of device memory, events
// and cuBLASLt descriptors, and the column-major "TN" matmul they all run
// (A stored k x m and used transposed, B stored k x n, D m x n).
#ifndef CMAX_BENCHMARKS_CUDA_LT_GEMM_H_
#define CMAX_BENCHMARKS_CUDA_LT_GEMM_H_

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "benchmarks/cuda/kernels.h"
#include "benchmarks/gpu_common/cublas_choice.h"
#include "benchmarks/gpu_common/gemm_check.h"

namespace cmax::bench {

struct TypeSetup {
  cudaDataType_t ab, cd;
  cublasComputeType_t compute;
  cudaDataType_t scale;
  Elem ab_elem, cd_elem;
  size_t ab_size, cd_size;
  int min_cc;  // 10 * major + minor
  const char* min_cc_reason;
};

// Types for `d` (see the comment at the definition for fp32 vs tf32).
TypeSetup SetupFor(GemmDtype d);

// Owns device memory, events and cuBLASLt objects of one shape's run.
struct DeviceMem {
  void* p = nullptr;
  ~DeviceMem() {
    if (p) cudaFree(p);
  }
};
struct LtObjects {
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~LtObjects() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (op) cublasLtMatmulDescDestroy(op);
  }
};
struct Events {
  std::vector<cudaEvent_t> e;
  ~Events() {
    for (auto ev : e) cudaEventDestroy(ev);
  }
};

// One GPU's non-blocking stream, cuBLASLt handle and workspace, each suite's
// per-GPU context; released in reverse order of creation.
struct GpuLtContext {
  cudaStream_t stream = nullptr;
  cublasLtHandle_t handle = nullptr;
  void* workspace = nullptr;
  ~GpuLtContext();
  // Makes `gpu` current and creates the three; errors name the failing call.
  absl::Status Init(int gpu, size_t workspace_bytes);
  // Forgets the three without releasing them (the destructor then does
  // nothing): after a GPU hang, freeing would block; the process exits.
  void Abandon() {
    stream = nullptr;
    handle = nullptr;
    workspace = nullptr;
  }
};


// Reduction-scheme mask admitting every scheme
// (CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK; cublasLtReductionScheme_t:
// NONE 0, INPLACE 1, COMPUTE_TYPE 2, OUTPUT_TYPE 4, MASK 7). A mask never
// excludes algorithms without split-K, and cuBLASLt does not document 0 as
// "no split-K"; burn-in and consistency therefore ask for several
// algorithms and take the first without split-K (FirstAlgoWithoutSplitK).
inline constexpr uint32_t kAnyReduction = CUBLASLT_REDUCTION_SCHEME_MASK;

// Creates the TN matmul descriptor (compute and scale types of `t`), the
// A/B/D layouts for m x n x k, and a preference with `workspace_bytes` and
// `reduction_mask`. Errors name the cuBLASLt call and `gpu`.
absl::Status CreateTnMatmul(const TypeSetup& t, int64_t m, int64_t n, int64_t k,
                            uint64_t workspace_bytes, uint32_t reduction_mask, int gpu,
                            LtObjects* lt);

// Split-K count and reduction scheme of `algo`'s configuration
// (CUBLASLT_ALGO_CONFIG_SPLITK_NUM, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME).
absl::Status ReadAlgoSplit(const cublasLtMatmulAlgo_t& algo, int gpu, AlgoSplit* split);

// Asks the heuristic for up to `requested` algorithms for `lt` and copies
// the first one without split-K (gpu_common/cublas_choice.h,
// FirstWithoutSplitK) into *algo. *found is false when the heuristic offered
// none without split-K; errors name the cuBLASLt call and `gpu`.
absl::Status FirstAlgoWithoutSplitK(const GpuLtContext& ctx, const LtObjects& lt, int requested,
                                    int gpu, cublasLtMatmulAlgo_t* algo, bool* found,
                                    int* offered);

// alpha = 1 and beta = 0 in the scale type of `t` (float or double), for
// cublasLtMatmul's host pointers; valid while this object lives.
struct UnitScales {
  explicit UnitScales(const TypeSetup& t) : fp64(t.scale == CUDA_R_64F) {}
  const void* alpha() const { return fp64 ? static_cast<const void*>(&alpha_d) : &alpha_f; }
  const void* beta() const { return fp64 ? static_cast<const void*>(&beta_d) : &beta_f; }
  bool fp64;
  float alpha_f = 1.0f, beta_f = 0.0f;
  double alpha_d = 1.0, beta_d = 0.0;
};

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_CUDA_LT_GEMM_H_
