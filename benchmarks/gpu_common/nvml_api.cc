#include "benchmarks/gpu_common/nvml_api.h"

#include <dlfcn.h>

#include "absl/strings/str_cat.h"

namespace cmax::nvml {

bool FieldAsDouble(const FieldValue& v, double* out) {
  if (v.nvml_return != kSuccess) return false;
  switch (v.value_type) {
    case 0: *out = v.value.d; return true;
    case 1: *out = v.value.ui; return true;
    case 2: *out = static_cast<double>(v.value.ul); return true;
    case 3: *out = static_cast<double>(v.value.ull); return true;
    case 4: *out = static_cast<double>(v.value.sll); return true;
    case 5: *out = v.value.si; return true;
    case 6: *out = v.value.us; return true;
  }
  return false;
}

void* Library::Sym(const char* name) const { return dlsym(handle_, name); }

Library::~Library() {
  if (initialized_ && shutdown_) shutdown_();
  if (handle_) dlclose(handle_);
}

std::string Library::Error(nvmlReturn_t r) const {
  const char* s = error_string ? error_string(r) : nullptr;
  return s ? absl::StrCat(s, " (", r, ")") : absl::StrCat("NVML error ", r);
}

absl::StatusOr<std::unique_ptr<Library>> Library::Open(const std::string& name) {
  void* handle = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* why = dlerror();
    return absl::UnavailableError(absl::StrCat("dlopen ", name, ": ", why ? why : "failed"));
  }
  std::unique_ptr<Library> lib(new Library(handle));
  auto sym = [&lib](auto* fn, const char* symbol) {
    *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(lib->Sym(symbol));
  };
  sym(&lib->init_, "nvmlInit_v2");
  sym(&lib->shutdown_, "nvmlShutdown");
  sym(&lib->error_string, "nvmlErrorString");
  sym(&lib->count, "nvmlDeviceGetCount_v2");
  sym(&lib->handle_by_index, "nvmlDeviceGetHandleByIndex_v2");
  if (!lib->init_ || !lib->count || !lib->handle_by_index) {
    return absl::InternalError(absl::StrCat(
        name, " lacks nvmlInit_v2, nvmlDeviceGetCount_v2 or nvmlDeviceGetHandleByIndex_v2 "
              "(driver too old?)"));
  }
  sym(&lib->handle_by_uuid, "nvmlDeviceGetHandleByUUID");
  sym(&lib->driver_version, "nvmlSystemGetDriverVersion");
  sym(&lib->pci_info, "nvmlDeviceGetPciInfo_v3");
  sym(&lib->name, "nvmlDeviceGetName");
  sym(&lib->uuid, "nvmlDeviceGetUUID");
  sym(&lib->ecc_mode, "nvmlDeviceGetEccMode");
  sym(&lib->ecc_count, "nvmlDeviceGetTotalEccErrors");
  sym(&lib->retired_pages, "nvmlDeviceGetRetiredPages");
  sym(&lib->remapped_rows, "nvmlDeviceGetRemappedRows");
  sym(&lib->pcie_width, "nvmlDeviceGetCurrPcieLinkWidth");
  sym(&lib->pcie_max_width, "nvmlDeviceGetMaxPcieLinkWidth");
  sym(&lib->pcie_replays, "nvmlDeviceGetPcieReplayCounter");
  // Renamed in R535; the older name stays exported by newer drivers.
  sym(&lib->clock_reasons, "nvmlDeviceGetCurrentClocksEventReasons");
  if (!lib->clock_reasons) sym(&lib->clock_reasons, "nvmlDeviceGetCurrentClocksThrottleReasons");
  sym(&lib->temperature, "nvmlDeviceGetTemperature");
  sym(&lib->temperature_threshold, "nvmlDeviceGetTemperatureThreshold");
  sym(&lib->persistence, "nvmlDeviceGetPersistenceMode");
  sym(&lib->mig_mode, "nvmlDeviceGetMigMode");
  sym(&lib->processes, "nvmlDeviceGetComputeRunningProcesses_v3");
  sym(&lib->violation, "nvmlDeviceGetViolationStatus");
  sym(&lib->power_usage, "nvmlDeviceGetPowerUsage");
  sym(&lib->clock_info, "nvmlDeviceGetClockInfo");
  sym(&lib->field_values, "nvmlDeviceGetFieldValues");
  sym(&lib->nvlink_state, "nvmlDeviceGetNvLinkState");
  sym(&lib->nvlink_error_counter, "nvmlDeviceGetNvLinkErrorCounter");
  sym(&lib->fabric_info, "nvmlDeviceGetGpuFabricInfo");
  sym(&lib->fabric_info_v, "nvmlDeviceGetGpuFabricInfoV");
  nvmlReturn_t r = lib->init_();
  if (r != kSuccess) return absl::InternalError(absl::StrCat("nvmlInit_v2: ", lib->Error(r)));
  lib->initialized_ = true;
  return lib;
}

}  // namespace cmax::nvml
