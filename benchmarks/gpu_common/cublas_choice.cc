#include "benchmarks/gpu_common/cublas_choice.h"

#include "absl/strings/str_cat.h"

namespace cmax::bench {

std::string CublasStatusNameFallback(int status) {
  switch (status) {
    case 0: return "CUBLAS_STATUS_SUCCESS";
    case 1: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case 3: return "CUBLAS_STATUS_ALLOC_FAILED";
    case 7: return "CUBLAS_STATUS_INVALID_VALUE";
    case 8: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case 11: return "CUBLAS_STATUS_MAPPING_ERROR";
    case 13: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case 14: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case 15: return "CUBLAS_STATUS_NOT_SUPPORTED";
    case 16: return "CUBLAS_STATUS_LICENSE_ERROR";
  }
  return absl::StrCat("CUBLAS_STATUS_", status);
}

std::string ReductionSchemeName(uint32_t scheme) {
  switch (scheme) {
    case kReductionNone: return "none";
    case kReductionInplace: return "inplace";
    case kReductionComputeType: return "compute_type";
    case kReductionOutputType: return "output_type";
  }
  return absl::StrCat("mask_", scheme);
}

uint32_t GemmReductionMask(int output_bytes) {
  if (output_bytes < 4) return kReductionComputeType;
  return kReductionAll;
}

bool ReducesInOutputType(uint32_t scheme) {
  return scheme == kReductionInplace || scheme == kReductionOutputType;
}

int FirstWithoutSplitK(const std::vector<AlgoSplit>& algos) {
  for (size_t i = 0; i < algos.size(); ++i) {
    if (algos[i].split_k <= 1) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace cmax::bench
