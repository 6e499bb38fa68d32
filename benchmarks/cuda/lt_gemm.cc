#include "benchmarks/cuda/lt_gemm.h"

#include "benchmarks/cuda/cuda_env.h"
#include "common/status_macros.h"

namespace cmax::bench {

GpuLtContext::~GpuLtContext() {
  if (workspace) cudaFree(workspace);
  if (handle) cublasLtDestroy(handle);
  if (stream) cudaStreamDestroy(stream);
}

absl::Status GpuLtContext::Init(int gpu, size_t workspace_bytes) {
  CMAX_CUDA(cudaSetDevice(gpu));
  CMAX_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  CMAX_CUBLAS(cublasLtCreate(&handle));
  CMAX_CUDA(cudaMalloc(&workspace, workspace_bytes));
  return absl::OkStatus();
}

// FP32 uses CUBLAS_COMPUTE_32F: cuBLASLt never down-converts to TF32 for it
// (only CUBLAS_COMPUTE_32F_FAST_TF32 does), so it runs on the CUDA cores and
// is graded against the non-tensor FP32 peak. Should TF32 ever sneak in, the
// fp32 tolerance (2^-23 accumulation) catches its 2^-10 input rounding.
TypeSetup SetupFor(GemmDtype d) {
  switch (d) {
    case GemmDtype::kBf16:
      return {CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F, Elem::kBf16, Elem::kBf16,
              2, 2, 80, "bf16 GEMM needs compute capability 8.0 or newer"};
    case GemmDtype::kFp16:
      return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, CUDA_R_32F, Elem::kF16, Elem::kF16, 2,
              2, 70, "fp16 tensor-core GEMM needs compute capability 7.0 or newer"};
    case GemmDtype::kFp8:
      // cuBLASLt FP8 rules: A and B E4M3, TN layout, FP32 compute and scale,
      // C/D bf16 (or fp16), A/B scale pointers, dims multiple of 16.
      return {CUDA_R_8F_E4M3, CUDA_R_16BF, CUBLAS_COMPUTE_32F, CUDA_R_32F, Elem::kF8E4M3,
              Elem::kBf16, 1, 2, 89,
              "FP8 GEMM needs compute capability 8.9 (Ada) or 9.0 (Hopper) or newer"};
    case GemmDtype::kTf32:
      return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F, Elem::kF32,
              Elem::kF32, 4, 4, 80, "TF32 needs compute capability 8.0 or newer"};
    case GemmDtype::kFp32:
      return {CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, CUDA_R_32F, Elem::kF32, Elem::kF32, 4,
              4, 0, ""};
    case GemmDtype::kFp64:
      return {CUDA_R_64F, CUDA_R_64F, CUBLAS_COMPUTE_64F, CUDA_R_64F, Elem::kF64, Elem::kF64, 8,
              8, 0, ""};
  }
  return {};
}

absl::Status CreateTnMatmul(const TypeSetup& t, int64_t m, int64_t n, int64_t k,
                            uint64_t workspace_bytes, uint32_t reduction_mask, int gpu,
                            LtObjects* lt) {
  CMAX_CUBLAS(cublasLtMatmulDescCreate(&lt->op, t.compute, t.scale));
  cublasOperation_t op_t = CUBLAS_OP_T, op_n = CUBLAS_OP_N;
  CMAX_CUBLAS(cublasLtMatmulDescSetAttribute(lt->op, CUBLASLT_MATMUL_DESC_TRANSA, &op_t,
                                             sizeof(op_t)));
  CMAX_CUBLAS(cublasLtMatmulDescSetAttribute(lt->op, CUBLASLT_MATMUL_DESC_TRANSB, &op_n,
                                             sizeof(op_n)));
  CMAX_CUBLAS(cublasLtMatrixLayoutCreate(&lt->a, t.ab, k, m, k));
  CMAX_CUBLAS(cublasLtMatrixLayoutCreate(&lt->b, t.ab, k, n, k));
  CMAX_CUBLAS(cublasLtMatrixLayoutCreate(&lt->c, t.cd, m, n, m));
  CMAX_CUBLAS(cublasLtMatmulPreferenceCreate(&lt->pref));
  CMAX_CUBLAS(cublasLtMatmulPreferenceSetAttribute(
      lt->pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &workspace_bytes,
      sizeof(workspace_bytes)));
  CMAX_CUBLAS(cublasLtMatmulPreferenceSetAttribute(
      lt->pref, CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, &reduction_mask,
      sizeof(reduction_mask)));
  return absl::OkStatus();
}

absl::Status ReadAlgoSplit(const cublasLtMatmulAlgo_t& algo, int gpu, AlgoSplit* split) {
  int32_t splits = 1;
  uint32_t scheme = 0;
  size_t written = 0;
  CMAX_CUBLAS(cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits,
                                                   sizeof(splits), &written));
  CMAX_CUBLAS(cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
                                                   &scheme, sizeof(scheme), &written));
  split->split_k = splits;
  split->reduction_scheme = scheme;
  return absl::OkStatus();
}

absl::Status FirstAlgoWithoutSplitK(const GpuLtContext& ctx, const LtObjects& lt, int requested,
                                    int gpu, cublasLtMatmulAlgo_t* algo, bool* found,
                                    int* offered) {
  std::vector<cublasLtMatmulHeuristicResult_t> heur(static_cast<size_t>(requested));
  int count = 0;
  CMAX_CUBLAS(cublasLtMatmulAlgoGetHeuristic(ctx.handle, lt.op, lt.a, lt.b, lt.c, lt.c, lt.pref,
                                             requested, heur.data(), &count));
  *found = false;
  *offered = count;
  std::vector<AlgoSplit> splits;
  std::vector<int> index;  // into heur, for the usable ones
  for (int i = 0; i < count; ++i) {
    if (heur[static_cast<size_t>(i)].state != CUBLAS_STATUS_SUCCESS) continue;
    AlgoSplit sp;
    CMAX_RETURN_IF_ERROR(ReadAlgoSplit(heur[static_cast<size_t>(i)].algo, gpu, &sp));
    splits.push_back(sp);
    index.push_back(i);
  }
  const int pick = FirstWithoutSplitK(splits);
  if (pick < 0) return absl::OkStatus();
  *algo = heur[static_cast<size_t>(index[static_cast<size_t>(pick)])].algo;
  *found = true;
  return absl::OkStatus();
}

}  // namespace cmax::bench
