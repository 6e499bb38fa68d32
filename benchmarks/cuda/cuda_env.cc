#include "benchmarks/cuda/cuda_env.h"

#include <dlfcn.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "benchmarks/cuda/cublaslt_loader.h"
#include "benchmarks/gpu_common/cublas_choice.h"
#include "benchmarks/gpu_common/numa_memory.h"
#include "benchmarks/suite.h"
#include "common/suite_catalog.h"
#include "common/sysroot.h"

namespace cmax::bench {

static_assert(static_cast<int>(cudaErrorInsufficientDriver) == kCudaErrorInsufficientDriver);
static_assert(static_cast<int>(cudaErrorNoDevice) == kCudaErrorNoDevice);
static_assert(static_cast<int>(cudaErrorSystemDriverMismatch) == kCudaErrorSystemDriverMismatch);
// gpu_common/cublas_choice.h restates cuBLASLt's values for host-only code.
static_assert(CUBLASLT_REDUCTION_SCHEME_NONE == kReductionNone);
static_assert(CUBLASLT_REDUCTION_SCHEME_INPLACE == kReductionInplace);
static_assert(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE == kReductionComputeType);
static_assert(CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE == kReductionOutputType);
static_assert(CUBLASLT_REDUCTION_SCHEME_MASK == kReductionAll);
static_assert(CUBLAS_STATUS_NOT_SUPPORTED == 15 && CUBLAS_STATUS_EXECUTION_FAILED == 13 &&
              CUBLAS_STATUS_INVALID_VALUE == 7 && CUBLAS_STATUS_NOT_INITIALIZED == 1);

namespace {
std::string HostName() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0) return "?";
  return buf;
}
}  // namespace

PollState QueryState(cudaError_t rc) {
  static const CudaQueryCalls kCalls{
      .success = cudaSuccess,
      .not_ready = cudaErrorNotReady,
      .peek_last = [] { return static_cast<int>(cudaPeekAtLastError()); },
      .take_last = [] { return static_cast<int>(cudaGetLastError()); }};
  return CudaQueryState(rc, kCalls);
}

absl::Status CudaStatus(cudaError_t err, const char* call, const char* file, int line, int gpu) {
  if (err == cudaSuccess) return absl::OkStatus();
  const char* base = std::strrchr(file, '/');
  return absl::InternalError(absl::StrFormat("%s: %s (%s) at %s:%d on host %s, GPU %d", call,
                                             cudaGetErrorName(err), cudaGetErrorString(err),
                                             base ? base + 1 : file, line, HostName(), gpu));
}

absl::Status CublasStatus(cublasStatus_t st, const char* call, const char* file, int line,
                          int gpu) {
  if (st == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  const char* base = std::strrchr(file, '/');
  // cublasLtGetStatusName (cublaslt_loader.cc falls back to a table when
  // cuBLASLt is not loaded).
  return absl::InternalError(absl::StrFormat("%s: %s (cuBLAS status %d) at %s:%d on host %s, GPU %d",
                                             call, cublasLtGetStatusName(st),
                                             static_cast<int>(st), base ? base + 1 : file, line,
                                             HostName(), gpu));
}

DriverProbe ProbeDriver() {
  DriverProbe p;
  cudaDriverGetVersion(&p.driver_api_version);  // 0 when there is no driver
  cudaRuntimeGetVersion(&p.runtime_version);
  cudaError_t err = cudaGetDeviceCount(&p.device_count);
  p.runtime_error = static_cast<int>(err);
  if (err != cudaSuccess) {
    p.runtime_error_name = cudaGetErrorName(err);
    p.device_count = 0;
    cudaGetLastError();  // clear the sticky-free error for later calls
  }
  Sysroot root("/");
  if (auto text = root.Read("/proc/driver/nvidia/version"); text.ok()) {
    p.proc_driver_version = *text;
    p.driver_files_present = true;
  }
  if (!p.driver_files_present) {
    if (void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL)) {
      p.driver_files_present = true;
      dlclose(h);
    }
  }
  return p;
}

std::map<std::string, std::string> GpuInfo::Labels() const {
  return {{"gpu", absl::StrCat(index)},        {"uuid", uuid},
          {"pci_bus_id", pci_bus_id},         {"numa_node", absl::StrCat(numa_node)},
          {"model", name},                    {"cc", absl::StrCat(cc_major, ".", cc_minor)}};
}

absl::StatusOr<std::vector<GpuInfo>> ListGpus() {
  int count = 0;
  int gpu = -1;
  CMAX_CUDA(cudaGetDeviceCount(&count));
  std::vector<GpuInfo> gpus;
  Sysroot root("/");
  for (gpu = 0; gpu < count; ++gpu) {
    cudaDeviceProp prop;
    CMAX_CUDA(cudaGetDeviceProperties(&prop, gpu));
    GpuInfo g;
    g.index = gpu;
    g.name = prop.name;
    const auto* u = reinterpret_cast<const unsigned char*>(prop.uuid.bytes);
    g.uuid = absl::StrFormat(
        "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", u[0], u[1],
        u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11], u[12], u[13], u[14], u[15]);
    char bus[64] = {0};
    CMAX_CUDA(cudaDeviceGetPCIBusId(bus, sizeof(bus), gpu));
    g.pci_bus_id = NormalizePciBusId(bus);
    g.numa_node = PciNumaNode(root, g.pci_bus_id);
    g.cc_major = prop.major;
    g.cc_minor = prop.minor;
    g.memory_bytes = prop.totalGlobalMem;
    g.sm_count = prop.multiProcessorCount;
    gpus.push_back(g);
  }
  return gpus;
}

absl::StatusOr<std::vector<int>> ParseGpuSelection(const std::string& text, int count) {
  std::vector<int> out;
  if (text.empty() || text == "all") {
    for (int i = 0; i < count; ++i) out.push_back(i);
    return out;
  }
  std::set<int> seen;
  for (absl::string_view item : absl::StrSplit(text, ',')) {
    int v;
    if (!absl::SimpleAtoi(item, &v) || v < 0 || v >= count) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--gpus '", text, "': '", std::string(item), "' is not a GPU index in [0, ", count, ")"));
    }
    if (!seen.insert(v).second) {
      return absl::InvalidArgumentError(absl::StrCat("--gpus '", text, "': GPU ", v, " twice"));
    }
    out.push_back(v);
  }
  return out;
}

absl::StatusOr<std::vector<GpuInfo>> SelectGpus(const std::string& selection, const char* suite,
                                                RecordWriter& out) {
  auto all = ListGpus();
  if (!all.ok()) {
    out.Log("error", std::string(all.status().message()));
    out.NotMeasured("gpu.list_failed", SuiteCategory(out), "node",
                    absl::StrCat("not measured: ", suite, " could not list the GPUs"),
                    std::string(all.status().message()),
                    "check nvidia-smi and the kernel log (Xids) on this node");
    std::fprintf(stderr, "%s: %s\n", suite, std::string(all.status().message()).c_str());
    return all.status();
  }
  auto indices = ParseGpuSelection(selection, static_cast<int>(all->size()));
  absl::Status error = indices.ok() ? absl::OkStatus() : indices.status();
  if (indices.ok() && indices->empty()) error = absl::InvalidArgumentError("no GPU selected");
  if (!error.ok()) {
    out.NotMeasured("gpu.bad_selection", SuiteCategory(out), "node",
                    absl::StrCat("not measured: ", suite, " --gpus names no usable GPU"),
                    absl::StrCat(error.message(), " (", all->size(), " GPUs on this node)"),
                    "fix the plan's gpus parameter");
    std::fprintf(stderr, "%s: %s\n", suite, std::string(error.message()).c_str());
    return error;
  }
  std::vector<GpuInfo> gpus;
  for (int i : *indices) gpus.push_back((*all)[static_cast<size_t>(i)]);
  return gpus;
}

CudaVersions GetCudaVersions(const DriverProbe& probe) {
  CudaVersions v;
  v.driver = ParseProcDriverVersion(probe.proc_driver_version);
  if (v.driver.empty()) {
    v.driver = probe.driver_api_version > 0
                   ? "CUDA " + CudaVersionString(probe.driver_api_version)
                   : "none";
  }
  v.runtime = CudaVersionString(probe.runtime_version);
  size_t lt = cublasLtGetVersion();  // e.g. 130100 = 13.1.0; 0: not loaded
  v.cublas = lt == 0 ? std::string("not loaded")
                     : absl::StrCat(lt / 10000, ".", (lt % 10000) / 100, ".", lt % 100);
  return v;
}

std::string SuiteCategory(const RecordWriter& out) {
  const SuiteInfo* info = FindSuite(out.suite());
  return info != nullptr ? info->category : std::string("compute");
}

int CheckCublasLtLoaded(const absl::Status& loaded, RecordWriter& out, bool quiet) {
  if (loaded.ok()) return 0;
  const std::string category = SuiteCategory(out);
  out.NotMeasured("gpu.no_cublaslt", category, "node",
                  absl::StrCat("not measured: cuBLASLt not found (", out.suite(),
                               " needs libcublasLt.so.", CUBLAS_VER_MAJOR, ")"),
                  std::string(loaded.message()),
                  absl::StrCat("install cuBLAS ", CUBLAS_VER_MAJOR,
                               " (the CUDA toolkit's libcublas, or pip install "
                               "nvidia-cublas), or point CMAX_CUDA_LIBRARY_PATH or "
                               "LD_LIBRARY_PATH at the directory holding libcublasLt.so.",
                               CUBLAS_VER_MAJOR));
  std::fprintf(quiet ? stderr : stdout, "not measured: cuBLASLt not found: %s\n",
               std::string(loaded.message()).c_str());
  return kExitCouldNotRun;
}

int CheckCudaReady(RecordWriter& out, const DriverProbe& probe, bool quiet) {
  DriverDecision d = DecideDriver(probe);
  if (d.availability == GpuAvailability::kReady) return 0;
  if (d.finding) {
    // Under the running suite's category (common/suite_catalog.cc): a burn-in
    // that could not run leaves Reliability, not Compute, not measured.
    d.finding->set_category(SuiteCategory(out));
    out.Find(*d.finding);
  }
  out.Log(d.availability == GpuAvailability::kDriverTooOld ||
                  d.availability == GpuAvailability::kInitFailed
              ? "error"
              : "warn",
          d.message);
  std::fprintf(quiet ? stderr : stdout, "%s\n", d.message.c_str());
  return d.exit_code;
}

}  // namespace cmax::bench
