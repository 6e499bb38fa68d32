// cuBLASLt loaded at run time (dlopen), so cmax-bench-cuda starts on a node
// without it (and says "not measured"), and the bundle carries no copy of
// the 500 MB library: it uses the node's (system CUDA, a pip wheel's
// nvidia/*/lib, LD_LIBRARY_PATH; gpu_common/library_search.h).
//
// cublaslt_loader.cc defines the cuBLASLt functions the suites call, with
// the signatures of <cublasLt.h>, each forwarding to the function resolved
// from the loaded library; the suites call cuBLASLt as usual. Before a
// successful LoadCublasLt() every forwarder returns
// CUBLAS_STATUS_NOT_INITIALIZED (cublasLtGetVersion 0, cublasLtGetStatusName
// the fallback table of gpu_common/cublas_choice.h).
#ifndef CMAX_BENCHMARKS_CUDA_CUBLASLT_LOADER_H_
#define CMAX_BENCHMARKS_CUDA_CUBLASLT_LOADER_H_

#include <string>

#include "absl/status/status.h"

namespace cmax::bench {

// Loads libcublasLt.so.<major of the toolkit cmax was built with> once
// (thread-safe; later calls return the first outcome). NOT_FOUND names every
// place looked in; FAILED_PRECONDITION when a function is missing from the
// library found (too old a cuBLASLt).
absl::Status LoadCublasLt();

// The path loaded ("" before a successful LoadCublasLt).
std::string CublasLtPath();

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_CUDA_CUBLASLT_LOADER_H_
