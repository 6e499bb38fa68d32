// NCCL loaded at run time (dlopen), like cuBLASLt (cublaslt_loader.h): the
// collective suite finds libnccl.so.2 on the node (system CUDA, a pip
// wheel's nvidia/nccl/lib, LD_LIBRARY_PATH) and says "not measured" naming
// where it looked when it is absent; every other suite runs without it.
//
// nccl_loader.cc defines the NCCL functions collective_nccl.cc calls, with
// <nccl.h>'s signatures, forwarding to the loaded library; before a
// successful LoadNccl() they return ncclSystemError (ncclGetErrorString:
// "NCCL is not loaded").
#ifndef CMAX_BENCHMARKS_CUDA_NCCL_LOADER_H_
#define CMAX_BENCHMARKS_CUDA_NCCL_LOADER_H_

#include <string>

#include "absl/status/status.h"

namespace cmax::bench {

// Loads libnccl.so.2 once (thread-safe). NOT_FOUND names every place looked
// in; FAILED_PRECONDITION when the library lacks a function (NCCL older than
// 2.14, which has no non-blocking init).
absl::Status LoadNccl();
std::string NcclPath();

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_CUDA_NCCL_LOADER_H_
