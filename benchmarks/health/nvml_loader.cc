#include "benchmarks/health/nvml_loader.h"

#include <dlfcn.h>

#include <cstring>

#include "absl/strings/str_cat.h"

namespace cmax::health {

// ---- Declarations written from the NVML API reference ----------------------
// https://docs.nvidia.com/deploy/nvml-api/ (Device Queries, Initialization and
// Cleanup, Error reporting). Enumerations are passed as int, as C does.
namespace nvml {
extern "C" {
typedef struct nvmlDevice_st* nvmlDevice_t;  // opaque
typedef int nvmlReturn_t;
}
constexpr nvmlReturn_t kSuccess = 0;               // NVML_SUCCESS
constexpr nvmlReturn_t kNotSupported = 3;          // NVML_ERROR_NOT_SUPPORTED
constexpr nvmlReturn_t kInsufficientSize = 7;      // NVML_ERROR_INSUFFICIENT_SIZE
constexpr nvmlReturn_t kGpuIsLost = 15;            // NVML_ERROR_GPU_IS_LOST
constexpr int kMemoryErrorCorrected = 0;           // NVML_MEMORY_ERROR_TYPE_CORRECTED
constexpr int kMemoryErrorUncorrected = 1;         // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
constexpr int kVolatileEcc = 0;                    // NVML_VOLATILE_ECC
constexpr int kAggregateEcc = 1;                   // NVML_AGGREGATE_ECC
constexpr int kRetireMultipleSbe = 0;  // NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS
constexpr int kRetireDbe = 1;          // NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR
constexpr int kTemperatureGpu = 0;                 // NVML_TEMPERATURE_GPU
constexpr int kThresholdShutdown = 0;              // NVML_TEMPERATURE_THRESHOLD_SHUTDOWN
constexpr int kThresholdSlowdown = 1;              // NVML_TEMPERATURE_THRESHOLD_SLOWDOWN
constexpr int kPerfPolicyPower = 0;                // NVML_PERF_POLICY_POWER
constexpr int kPerfPolicyThermal = 1;              // NVML_PERF_POLICY_THERMAL
constexpr unsigned kNameBuffer = 96;               // NVML_DEVICE_NAME_V2_BUFFER_SIZE
constexpr unsigned kUuidBuffer = 80;               // NVML_DEVICE_UUID_V2_BUFFER_SIZE
constexpr unsigned kDriverBuffer = 80;             // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE

// nvmlPciInfo_t as filled by nvmlDeviceGetPciInfo_v3.
struct PciInfo {
  char bus_id_legacy[16];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;
  unsigned int pci_subsystem_id;
  char bus_id[32];         // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE
};
// nvmlViolationTime_t.
struct ViolationTime {
  unsigned long long reference_time;
  unsigned long long violation_time;
};

using VoidFn = nvmlReturn_t (*)();
using ErrorStringFn = const char* (*)(nvmlReturn_t);
using UintOutFn = nvmlReturn_t (*)(unsigned int*);
using HandleByIndexFn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using PciInfoFn = nvmlReturn_t (*)(nvmlDevice_t, PciInfo*);
using DevStringFn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);
using SysStringFn = nvmlReturn_t (*)(char*, unsigned int);
using DevTwoIntFn = nvmlReturn_t (*)(nvmlDevice_t, int*, int*);
using DevIntFn = nvmlReturn_t (*)(nvmlDevice_t, int*);
using EccCountFn = nvmlReturn_t (*)(nvmlDevice_t, int, int, unsigned long long*);
using RetiredPagesFn = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned int*, unsigned long long*);
using RemappedRowsFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, unsigned int*,
                                        unsigned int*, unsigned int*);
using DevUintFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using DevU64Fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*);
using DevEnumUintFn = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned int*);
using DevTwoUintFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, unsigned int*);
using ProcessesFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, void*);
using ViolationFn = nvmlReturn_t (*)(nvmlDevice_t, int, ViolationTime*);
}  // namespace nvml

class NvmlLibrary {
 public:
  explicit NvmlLibrary(void* handle) : handle_(handle) {}
  ~NvmlLibrary() {
    if (initialized_ && shutdown) shutdown();
    if (handle_) dlclose(handle_);
  }

  template <typename Fn>
  Fn Sym(const char* name) {
    return reinterpret_cast<Fn>(dlsym(handle_, name));
  }

  void* handle_;
  bool initialized_ = false;
  nvml::VoidFn init = nullptr;
  nvml::VoidFn shutdown = nullptr;
  nvml::ErrorStringFn error_string = nullptr;
  nvml::UintOutFn count = nullptr;
  nvml::HandleByIndexFn handle_by_index = nullptr;
  nvml::SysStringFn driver_version = nullptr;
  nvml::PciInfoFn pci_info = nullptr;
  nvml::DevStringFn name = nullptr;
  nvml::DevStringFn uuid = nullptr;
  nvml::DevTwoIntFn ecc_mode = nullptr;
  nvml::EccCountFn ecc_count = nullptr;
  nvml::RetiredPagesFn retired_pages = nullptr;
  nvml::RemappedRowsFn remapped_rows = nullptr;
  nvml::DevUintFn pcie_width = nullptr;
  nvml::DevUintFn pcie_max_width = nullptr;
  nvml::DevUintFn pcie_replays = nullptr;
  nvml::DevU64Fn clock_reasons = nullptr;
  nvml::DevEnumUintFn temperature = nullptr;
  nvml::DevEnumUintFn temperature_threshold = nullptr;
  nvml::DevIntFn persistence = nullptr;
  nvml::DevTwoUintFn mig_mode = nullptr;
  nvml::ProcessesFn processes = nullptr;
  nvml::ViolationFn violation = nullptr;

  std::string Error(nvml::nvmlReturn_t r) const {
    const char* s = error_string ? error_string(r) : nullptr;
    return s ? absl::StrCat(s, " (", r, ")") : absl::StrCat("NVML error ", r);
  }
};

namespace {

// Runs one query: OK -> true; NOT_SUPPORTED -> false silently; any other
// code -> false with "<call>: <error>" in state->errors.
bool Ok(NvmlLibrary& lib, nvml::nvmlReturn_t r, const char* call, GpuState* state) {
  if (r == nvml::kSuccess) return true;
  if (r == nvml::kNotSupported) return false;
  if (r == nvml::kGpuIsLost) state->lost = true;
  state->errors.push_back(absl::StrCat(call, ": ", lib.Error(r)));
  return false;
}

std::optional<uint64_t> EccCount(NvmlLibrary& lib, nvml::nvmlDevice_t dev, int type, int counter,
                                 const char* what, GpuState* state) {
  if (!lib.ecc_count) return std::nullopt;
  unsigned long long v = 0;
  if (!Ok(lib, lib.ecc_count(dev, type, counter, &v), what, state)) return std::nullopt;
  return v;
}

std::optional<uint64_t> RetiredPages(NvmlLibrary& lib, nvml::nvmlDevice_t dev, int cause,
                                     GpuState* state) {
  if (!lib.retired_pages) return std::nullopt;
  unsigned int count = 0;
  nvml::nvmlReturn_t r = lib.retired_pages(dev, cause, &count, nullptr);
  if (r == nvml::kInsufficientSize) return count;
  if (!Ok(lib, r, "nvmlDeviceGetRetiredPages", state)) return std::nullopt;
  return count;
}

void QueryDevice(NvmlLibrary& lib, nvml::nvmlDevice_t dev, GpuState* s) {
  char buf[128];
  if (lib.name) {
    std::memset(buf, 0, sizeof(buf));
    if (Ok(lib, lib.name(dev, buf, nvml::kNameBuffer), "nvmlDeviceGetName", s)) s->name = buf;
  }
  if (lib.uuid) {
    std::memset(buf, 0, sizeof(buf));
    if (Ok(lib, lib.uuid(dev, buf, nvml::kUuidBuffer), "nvmlDeviceGetUUID", s)) s->uuid = buf;
  }
  if (lib.pci_info) {
    // Room beyond the documented layout, in case a newer library writes more.
    struct {
      nvml::PciInfo info;
      char slack[256];
    } pci;
    std::memset(&pci, 0, sizeof(pci));
    if (Ok(lib, lib.pci_info(dev, &pci.info), "nvmlDeviceGetPciInfo_v3", s)) {
      pci.info.bus_id[sizeof(pci.info.bus_id) - 1] = '\0';
      s->pci_bus_id = pci.info.bus_id;
    }
  }
  if (lib.ecc_mode) {
    int current = 0, pending = 0;
    if (Ok(lib, lib.ecc_mode(dev, &current, &pending), "nvmlDeviceGetEccMode", s)) {
      s->ecc_enabled = current != 0;
    }
  }
  s->volatile_sbe = EccCount(lib, dev, nvml::kMemoryErrorCorrected, nvml::kVolatileEcc,
                             "nvmlDeviceGetTotalEccErrors(corrected, volatile)", s);
  s->volatile_dbe = EccCount(lib, dev, nvml::kMemoryErrorUncorrected, nvml::kVolatileEcc,
                             "nvmlDeviceGetTotalEccErrors(uncorrected, volatile)", s);
  s->aggregate_sbe = EccCount(lib, dev, nvml::kMemoryErrorCorrected, nvml::kAggregateEcc,
                              "nvmlDeviceGetTotalEccErrors(corrected, aggregate)", s);
  s->aggregate_dbe = EccCount(lib, dev, nvml::kMemoryErrorUncorrected, nvml::kAggregateEcc,
                              "nvmlDeviceGetTotalEccErrors(uncorrected, aggregate)", s);
  s->retired_pages_sbe = RetiredPages(lib, dev, nvml::kRetireMultipleSbe, s);
  s->retired_pages_dbe = RetiredPages(lib, dev, nvml::kRetireDbe, s);
  if (lib.remapped_rows) {
    unsigned int corr = 0, unc = 0, pending = 0, failed = 0;
    if (Ok(lib, lib.remapped_rows(dev, &corr, &unc, &pending, &failed),
           "nvmlDeviceGetRemappedRows", s)) {
      s->remapped_rows_correctable = corr;
      s->remapped_rows_uncorrectable = unc;
      s->remap_pending = pending != 0;
      s->remap_failed = failed != 0;
    }
  }
  unsigned int u = 0;
  if (lib.pcie_width && Ok(lib, lib.pcie_width(dev, &u), "nvmlDeviceGetCurrPcieLinkWidth", s)) {
    s->pcie_width = u;
  }
  if (lib.pcie_max_width &&
      Ok(lib, lib.pcie_max_width(dev, &u), "nvmlDeviceGetMaxPcieLinkWidth", s)) {
    s->pcie_max_width = u;
  }
  if (lib.pcie_replays &&
      Ok(lib, lib.pcie_replays(dev, &u), "nvmlDeviceGetPcieReplayCounter", s)) {
    s->pcie_replays = u;
  }
  unsigned long long reasons = 0;
  if (lib.clock_reasons &&
      Ok(lib, lib.clock_reasons(dev, &reasons), "nvmlDeviceGetCurrentClocksEventReasons", s)) {
    s->throttle_reasons = reasons;
  }
  if (lib.temperature &&
      Ok(lib, lib.temperature(dev, nvml::kTemperatureGpu, &u), "nvmlDeviceGetTemperature", s)) {
    s->temperature_c = u;
  }
  if (lib.temperature_threshold) {
    if (Ok(lib, lib.temperature_threshold(dev, nvml::kThresholdSlowdown, &u),
           "nvmlDeviceGetTemperatureThreshold(slowdown)", s)) {
      s->slowdown_temperature_c = u;
    }
    if (Ok(lib, lib.temperature_threshold(dev, nvml::kThresholdShutdown, &u),
           "nvmlDeviceGetTemperatureThreshold(shutdown)", s)) {
      s->shutdown_temperature_c = u;
    }
  }
  if (lib.persistence) {
    int mode = 0;
    if (Ok(lib, lib.persistence(dev, &mode), "nvmlDeviceGetPersistenceMode", s)) {
      s->persistence_mode = mode != 0;
    }
  }
  if (lib.mig_mode) {
    unsigned int current = 0, pending = 0;
    if (Ok(lib, lib.mig_mode(dev, &current, &pending), "nvmlDeviceGetMigMode", s)) {
      s->mig_enabled = current != 0;
    }
  }
  if (lib.processes) {
    // Count only: infoCount 0 with no buffer answers SUCCESS (none running)
    // or INSUFFICIENT_SIZE with the count, so no struct layout is needed.
    unsigned int count = 0;
    nvml::nvmlReturn_t r = lib.processes(dev, &count, nullptr);
    if (r == nvml::kInsufficientSize || Ok(lib, r, "nvmlDeviceGetComputeRunningProcesses_v3", s)) {
      s->compute_processes = count;
    }
  }
  if (lib.violation) {
    nvml::ViolationTime vt{};
    if (Ok(lib, lib.violation(dev, nvml::kPerfPolicyPower, &vt),
           "nvmlDeviceGetViolationStatus(power)", s)) {
      s->violation_power_ns = vt.violation_time;
    }
    if (Ok(lib, lib.violation(dev, nvml::kPerfPolicyThermal, &vt),
           "nvmlDeviceGetViolationStatus(thermal)", s)) {
      s->violation_thermal_ns = vt.violation_time;
    }
  }
}

}  // namespace

NvmlGpuProbe::NvmlGpuProbe(std::string library) : library_name_(std::move(library)) {}
NvmlGpuProbe::~NvmlGpuProbe() = default;

std::string NvmlGpuProbe::Describe() const { return absl::StrCat("NVML (", library_name_, ")"); }

absl::StatusOr<GpuInventory> NvmlGpuProbe::Probe() {
  if (!lib_) {
    void* handle = dlopen(library_name_.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char* why = dlerror();
      return absl::UnavailableError(
          absl::StrCat("dlopen ", library_name_, ": ", why ? why : "failed"));
    }
    auto lib = std::make_unique<NvmlLibrary>(handle);
    lib->init = lib->Sym<nvml::VoidFn>("nvmlInit_v2");
    lib->shutdown = lib->Sym<nvml::VoidFn>("nvmlShutdown");
    lib->error_string = lib->Sym<nvml::ErrorStringFn>("nvmlErrorString");
    lib->count = lib->Sym<nvml::UintOutFn>("nvmlDeviceGetCount_v2");
    lib->handle_by_index = lib->Sym<nvml::HandleByIndexFn>("nvmlDeviceGetHandleByIndex_v2");
    if (!lib->init || !lib->count || !lib->handle_by_index) {
      return absl::InternalError(absl::StrCat(
          library_name_, " lacks nvmlInit_v2, nvmlDeviceGetCount_v2 or "
                         "nvmlDeviceGetHandleByIndex_v2 (driver too old?)"));
    }
    lib->driver_version = lib->Sym<nvml::SysStringFn>("nvmlSystemGetDriverVersion");
    lib->pci_info = lib->Sym<nvml::PciInfoFn>("nvmlDeviceGetPciInfo_v3");
    lib->name = lib->Sym<nvml::DevStringFn>("nvmlDeviceGetName");
    lib->uuid = lib->Sym<nvml::DevStringFn>("nvmlDeviceGetUUID");
    lib->ecc_mode = lib->Sym<nvml::DevTwoIntFn>("nvmlDeviceGetEccMode");
    lib->ecc_count = lib->Sym<nvml::EccCountFn>("nvmlDeviceGetTotalEccErrors");
    lib->retired_pages = lib->Sym<nvml::RetiredPagesFn>("nvmlDeviceGetRetiredPages");
    lib->remapped_rows = lib->Sym<nvml::RemappedRowsFn>("nvmlDeviceGetRemappedRows");
    lib->pcie_width = lib->Sym<nvml::DevUintFn>("nvmlDeviceGetCurrPcieLinkWidth");
    lib->pcie_max_width = lib->Sym<nvml::DevUintFn>("nvmlDeviceGetMaxPcieLinkWidth");
    lib->pcie_replays = lib->Sym<nvml::DevUintFn>("nvmlDeviceGetPcieReplayCounter");
    // Renamed in R535; the older name stays exported by newer drivers.
    lib->clock_reasons = lib->Sym<nvml::DevU64Fn>("nvmlDeviceGetCurrentClocksEventReasons");
    if (!lib->clock_reasons) {
      lib->clock_reasons = lib->Sym<nvml::DevU64Fn>("nvmlDeviceGetCurrentClocksThrottleReasons");
    }
    lib->temperature = lib->Sym<nvml::DevEnumUintFn>("nvmlDeviceGetTemperature");
    lib->temperature_threshold =
        lib->Sym<nvml::DevEnumUintFn>("nvmlDeviceGetTemperatureThreshold");
    lib->persistence = lib->Sym<nvml::DevIntFn>("nvmlDeviceGetPersistenceMode");
    lib->mig_mode = lib->Sym<nvml::DevTwoUintFn>("nvmlDeviceGetMigMode");
    lib->processes = lib->Sym<nvml::ProcessesFn>("nvmlDeviceGetComputeRunningProcesses_v3");
    lib->violation = lib->Sym<nvml::ViolationFn>("nvmlDeviceGetViolationStatus");
    nvml::nvmlReturn_t r = lib->init();
    if (r != nvml::kSuccess) {
      return absl::InternalError(absl::StrCat("nvmlInit_v2: ", lib->Error(r)));
    }
    lib->initialized_ = true;
    lib_ = std::move(lib);
  }
  NvmlLibrary& lib = *lib_;
  GpuInventory inv;
  if (lib.driver_version) {
    char buf[128] = {};
    if (lib.driver_version(buf, nvml::kDriverBuffer) == nvml::kSuccess) inv.driver_version = buf;
  }
  unsigned int count = 0;
  if (nvml::nvmlReturn_t r = lib.count(&count); r != nvml::kSuccess) {
    return absl::InternalError(absl::StrCat("nvmlDeviceGetCount_v2: ", lib.Error(r)));
  }
  for (unsigned int i = 0; i < count; ++i) {
    GpuState s;
    s.index = static_cast<int>(i);
    nvml::nvmlDevice_t dev = nullptr;
    if (Ok(lib, lib.handle_by_index(i, &dev), "nvmlDeviceGetHandleByIndex_v2", &s)) {
      QueryDevice(lib, dev, &s);
    }
    inv.gpus.push_back(std::move(s));
  }
  return inv;
}

}  // namespace cmax::health
