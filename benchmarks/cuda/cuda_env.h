// The CUDA environment of a GPU suite: driver/runtime/cuBLAS versions, the
// start-up check (benchmarks/gpu_common/driver_check.h decides), the list of
// GPUs with their identity (index, UUID, PCI bus id, NUMA node), and CUDA /
// cuBLAS errors as absl::Status naming the call, the error, file:line, host
// and GPU.
//
// Compiles with CUDA 12.x and 13.x toolkits (no API that only 13 has).
#ifndef CMAX_BENCHMARKS_CUDA_CUDA_ENV_H_
#define CMAX_BENCHMARKS_CUDA_CUDA_ENV_H_

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "benchmarks/gpu_common/driver_check.h"
#include "benchmarks/gpu_common/gpu_poll.h"
#include "common/record_io.h"

namespace cmax::bench {

// OK for cudaSuccess; otherwise INTERNAL "cudaMalloc(...): cudaErrorMemoryAllocation
// (out of memory) at gpu_gemm.cc:120 on host h, GPU 3".
absl::Status CudaStatus(cudaError_t err, const char* call, const char* file, int line, int gpu);
absl::Status CublasStatus(cublasStatus_t st, const char* call, const char* file, int line,
                          int gpu);

// Evaluate a CUDA / cuBLAS call; return its Status from the enclosing
// function on failure. `gpu` must be an int in scope naming the device.
#define CMAX_CUDA(call)                                                               \
  do {                                                                                \
    if (cudaError_t cmax_err_ = (call); cmax_err_ != cudaSuccess)                     \
      return ::cmax::bench::CudaStatus(cmax_err_, #call, __FILE__, __LINE__, gpu);    \
  } while (0)
#define CMAX_CUBLAS(call)                                                             \
  do {                                                                                \
    if (cublasStatus_t cmax_st_ = (call); cmax_st_ != CUBLAS_STATUS_SUCCESS)          \
      return ::cmax::bench::CublasStatus(cmax_st_, #call, __FILE__, __LINE__, gpu);   \
  } while (0)

// cudaEventQuery / cudaStreamQuery's result as a poll state, with a
// cudaErrorNotReady it left as the last error cleared (gpu_poll.h,
// CudaQueryState): every query polled with a deadline goes through this.
PollState QueryState(cudaError_t rc);

// Page-locked host memory (cudaMallocHost). A cudaMemcpyAsync between the
// device and pageable memory may return only once the copy is done (CUDA
// runtime API, "API synchronization behavior"): on a hung GPU it never
// returns, and a deadline polled after it is never reached. Every copy that
// is waited for with a deadline (PollUntil) uses one of these instead.
// Leak() gives the memory up without cudaFreeHost, which may wait for the
// device too: for the path that reports a hang and exits.
class PinnedHost {
 public:
  PinnedHost() = default;
  PinnedHost(const PinnedHost&) = delete;
  PinnedHost& operator=(const PinnedHost&) = delete;
  ~PinnedHost() {
    if (p_ != nullptr) cudaFreeHost(p_);
  }
  cudaError_t Allocate(size_t bytes) {
    if (p_ != nullptr) cudaFreeHost(p_);
    p_ = nullptr;
    bytes_ = 0;
    cudaError_t e = cudaMallocHost(&p_, bytes);
    if (e == cudaSuccess) bytes_ = bytes;
    return e;
  }
  void* get() const { return p_; }
  template <typename T>
  T* as() const {
    return static_cast<T*>(p_);
  }
  size_t bytes() const { return bytes_; }
  void Leak() {
    p_ = nullptr;
    bytes_ = 0;
  }

 private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

// Probes the driver the way driver_check.h describes: cudaDriverGetVersion,
// cudaRuntimeGetVersion, cudaGetDeviceCount, /proc/driver/nvidia/version,
// dlopen("libcuda.so.1").
DriverProbe ProbeDriver();

struct GpuInfo {
  int index = 0;
  std::string name;        // "NVIDIA H200"
  std::string uuid;        // "GPU-8f0c...": the form nvidia-smi prints
  std::string pci_bus_id;  // "0000:3b:00.0" (sysfs spelling)
  int numa_node = -1;      // from sysfs; -1 unknown
  int cc_major = 0, cc_minor = 0;
  size_t memory_bytes = 0;
  int sm_count = 0;
  int compute_capability() const { return cc_major * 10 + cc_minor; }
  // gpu, uuid, pci_bus_id, numa_node, model, cc.
  std::map<std::string, std::string> Labels() const;
};

absl::StatusOr<std::vector<GpuInfo>> ListGpus();

// "all" or "0,2,5" against `count` devices. INVALID_ARGUMENT for an index out
// of range, a duplicate or a malformed list.
absl::StatusOr<std::vector<int>> ParseGpuSelection(const std::string& text, int count);

// "580.95.05" (or "CUDA 12.8" when the kernel module's file is unreadable),
// "13.0", "13.1.0".
struct CudaVersions {
  std::string driver;
  std::string runtime;
  std::string cublas;
};
CudaVersions GetCudaVersions(const DriverProbe& probe);

// The GPUs `selection` ("all" or "0,2,5"; see ParseGpuSelection) names, in
// that order. On an error (listing the GPUs failed, a bad or empty selection)
// prints "<suite>: <message>" to stderr, logs a listing failure to `out`, and
// returns it: the suite then exits kExitCouldNotRun. Either error also writes
// a not_measured Finding (gpu.list_failed, gpu.bad_selection) with the reason.
absl::StatusOr<std::vector<GpuInfo>> SelectGpus(const std::string& selection, const char* suite,
                                                RecordWriter& out);

// The category of the suite `out` writes for (common/suite_catalog.cc);
// "compute" for a name the catalog does not know.
std::string SuiteCategory(const RecordWriter& out);

// Runs the start-up check: on a machine that cannot run, writes the finding
// under the category of the suite `out` writes for (gpu.no_device and
// gpu.no_driver flagged not_measured; driver_check.h), prints the message
// (to stderr when `quiet`) and returns the exit code (2);
// returns 0 when GPUs are ready.
int CheckCudaReady(RecordWriter& out, const DriverProbe& probe, bool quiet);

// `loaded` is LoadCublasLt()'s outcome (cublaslt_loader.h), taken before the
// versions are read. Not OK: writes a not_measured finding gpu.no_cublaslt
// (under the suite's category) naming where it looked, prints
// "not measured: cuBLASLt not found: ..." (stderr when `quiet`) and returns
// 2; OK: returns 0.
int CheckCublasLtLoaded(const absl::Status& loaded, RecordWriter& out, bool quiet);

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_CUDA_CUDA_ENV_H_
