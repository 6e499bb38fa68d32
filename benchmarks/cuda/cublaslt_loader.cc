#include "benchmarks/cuda/cublaslt_loader.h"

#include <cublasLt.h>
#include <dlfcn.h>

#include "absl/strings/str_cat.h"
#include "benchmarks/gpu_common/cublas_choice.h"
#include "benchmarks/gpu_common/library_search.h"
#include "common/status_macros.h"

namespace cmax::bench {
namespace {

// The functions of cuBLASLt the suites use; add one here and below.
struct LtApi {
  decltype(&::cublasLtCreate) create = nullptr;
  decltype(&::cublasLtDestroy) destroy = nullptr;
  decltype(&::cublasLtGetVersion) get_version = nullptr;
  decltype(&::cublasLtGetStatusName) get_status_name = nullptr;
  decltype(&::cublasLtMatmul) matmul = nullptr;
  decltype(&::cublasLtMatmulAlgoGetHeuristic) algo_get_heuristic = nullptr;
  decltype(&::cublasLtMatmulAlgoConfigGetAttribute) algo_config_get_attribute = nullptr;
  decltype(&::cublasLtMatmulDescCreate) desc_create = nullptr;
  decltype(&::cublasLtMatmulDescDestroy) desc_destroy = nullptr;
  decltype(&::cublasLtMatmulDescSetAttribute) desc_set_attribute = nullptr;
  decltype(&::cublasLtMatmulPreferenceCreate) pref_create = nullptr;
  decltype(&::cublasLtMatmulPreferenceDestroy) pref_destroy = nullptr;
  decltype(&::cublasLtMatmulPreferenceSetAttribute) pref_set_attribute = nullptr;
  decltype(&::cublasLtMatrixLayoutCreate) layout_create = nullptr;
  decltype(&::cublasLtMatrixLayoutDestroy) layout_destroy = nullptr;
};

LtApi g_api;  // written once by g_library's load, read-only afterwards
LoadOnce g_library;

absl::StatusOr<std::string> DoLoad() {
  const std::string major = absl::StrCat(CUBLAS_VER_MAJOR);
  CMAX_ASSIGN_OR_RETURN(LoadedLibrary lib,
                        LoadCudaLibrary(absl::StrCat("cuBLASLt ", major),
                                        {absl::StrCat("libcublasLt.so.", major)}));
  const std::string hint = absl::StrCat("a cuBLASLt older than ", CUBLAS_VER_MAJOR, ".0?");
  LtApi api;
#define CMAX_LT_RESOLVE(field, name) \
  CMAX_RETURN_IF_ERROR(ResolveSymbol(lib, #name, hint, &api.field));
  CMAX_LT_RESOLVE(create, cublasLtCreate)
  CMAX_LT_RESOLVE(destroy, cublasLtDestroy)
  CMAX_LT_RESOLVE(get_version, cublasLtGetVersion)
  CMAX_LT_RESOLVE(get_status_name, cublasLtGetStatusName)
  CMAX_LT_RESOLVE(matmul, cublasLtMatmul)
  CMAX_LT_RESOLVE(algo_get_heuristic, cublasLtMatmulAlgoGetHeuristic)
  CMAX_LT_RESOLVE(algo_config_get_attribute, cublasLtMatmulAlgoConfigGetAttribute)
  CMAX_LT_RESOLVE(desc_create, cublasLtMatmulDescCreate)
  CMAX_LT_RESOLVE(desc_destroy, cublasLtMatmulDescDestroy)
  CMAX_LT_RESOLVE(desc_set_attribute, cublasLtMatmulDescSetAttribute)
  CMAX_LT_RESOLVE(pref_create, cublasLtMatmulPreferenceCreate)
  CMAX_LT_RESOLVE(pref_destroy, cublasLtMatmulPreferenceDestroy)
  CMAX_LT_RESOLVE(pref_set_attribute, cublasLtMatmulPreferenceSetAttribute)
  CMAX_LT_RESOLVE(layout_create, cublasLtMatrixLayoutCreate)
  CMAX_LT_RESOLVE(layout_destroy, cublasLtMatrixLayoutDestroy)
#undef CMAX_LT_RESOLVE
  g_api = api;
  return lib.path;
}

const LtApi& Api() { return g_api; }

}  // namespace

absl::Status LoadCublasLt() { return g_library.Load(DoLoad); }

std::string CublasLtPath() { return g_library.path(); }

}  // namespace cmax::bench

// The forwarders: <cublasLt.h>'s declarations, defined here.
using cmax::bench::Api;
#define CMAX_LT_FORWARD(field, args) \
  {                                          \
    auto f = Api().field;                    \
    return f ? f args : CUBLAS_STATUS_NOT_INITIALIZED; \
  }

extern "C" {

cublasStatus_t cublasLtCreate(cublasLtHandle_t* h) CMAX_LT_FORWARD(create, (h))
cublasStatus_t cublasLtDestroy(cublasLtHandle_t h) CMAX_LT_FORWARD(destroy, (h))

size_t cublasLtGetVersion(void) {
  auto f = Api().get_version;
  return f ? f() : 0;
}

const char* cublasLtGetStatusName(cublasStatus_t status) {
  if (auto f = Api().get_status_name) return f(status);
  // Not loaded: the fallback table (a static string per known value).
  static thread_local std::string name;
  name = cmax::bench::CublasStatusNameFallback(static_cast<int>(status));
  return name.c_str();
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void* alpha,
                              const void* A, cublasLtMatrixLayout_t Adesc, const void* B,
                              cublasLtMatrixLayout_t Bdesc, const void* beta, const void* C,
                              cublasLtMatrixLayout_t Cdesc, void* D, cublasLtMatrixLayout_t Ddesc,
                              const cublasLtMatmulAlgo_t* algo, void* workspace,
                              size_t workspace_bytes, cudaStream_t stream)
    CMAX_LT_FORWARD(matmul, (h, desc, alpha, A, Adesc, B, Bdesc, beta, C, Cdesc, D, Ddesc, algo,
                               workspace, workspace_bytes, stream))

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t Adesc,
                                              cublasLtMatrixLayout_t Bdesc,
                                              cublasLtMatrixLayout_t Cdesc,
                                              cublasLtMatrixLayout_t Ddesc,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int* returned)
    CMAX_LT_FORWARD(algo_get_heuristic,
                    (h, desc, Adesc, Bdesc, Cdesc, Ddesc, pref, requested, results, returned))

cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(const cublasLtMatmulAlgo_t* algo,
                                                    cublasLtMatmulAlgoConfigAttributes_t attr,
                                                    void* buf, size_t bytes, size_t* written)
    CMAX_LT_FORWARD(algo_config_get_attribute, (algo, attr, buf, bytes, written))

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* desc, cublasComputeType_t compute,
                                        cudaDataType_t scale)
    CMAX_LT_FORWARD(desc_create, (desc, compute, scale))
cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc)
    CMAX_LT_FORWARD(desc_destroy, (desc))
cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr,
                                              const void* buf, size_t bytes)
    CMAX_LT_FORWARD(desc_set_attribute, (desc, attr, buf, bytes))
cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref)
    CMAX_LT_FORWARD(pref_create, (pref))
cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref)
    CMAX_LT_FORWARD(pref_destroy, (pref))
cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void* buf, size_t bytes)
    CMAX_LT_FORWARD(pref_set_attribute, (pref, attr, buf, bytes))
cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* layout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld)
    CMAX_LT_FORWARD(layout_create, (layout, type, rows, cols, ld))
cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout)
    CMAX_LT_FORWARD(layout_destroy, (layout))

}  // extern "C"
