#include "benchmarks/gpu_common/nvml_telemetry.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace cmax::bench {

std::string DescribeTelemetry(const GpuTelemetry& t) {
  std::string out;
  auto num = [&out](const char* name, const std::optional<double>& v) {
    absl::StrAppend(&out, name, "=", v ? absl::StrFormat("%.1f", *v) : "n/a", "\n");
  };
  num("temperature_c", t.temperature_c);
  num("memory_temperature_c", t.memory_temperature_c);
  num("power_w", t.power_w);
  num("sm_clock_mhz", t.sm_clock_mhz);
  absl::StrAppend(&out, "clocks_event_reasons=",
                  t.throttle_reasons ? absl::StrFormat("0x%x", *t.throttle_reasons) : "n/a",
                  "\n");
  absl::StrAppend(&out, "ecc_corrected_volatile=",
                  t.ecc_corrected_volatile ? absl::StrCat(*t.ecc_corrected_volatile) : "n/a",
                  "\n");
  absl::StrAppend(&out, "ecc_uncorrected_volatile=",
                  t.ecc_uncorrected_volatile ? absl::StrCat(*t.ecc_uncorrected_volatile) : "n/a",
                  "\n");
  if (t.lost) absl::StrAppend(&out, "gpu_is_lost=true\n");
  for (const auto& e : t.errors) absl::StrAppend(&out, "error: ", e, "\n");
  return out;
}

absl::StatusOr<std::unique_ptr<NvmlTelemetry>> NvmlTelemetry::Open() {
  auto lib = nvml::Library::Open();
  if (!lib.ok()) return lib.status();
  return std::unique_ptr<NvmlTelemetry>(new NvmlTelemetry(std::move(*lib)));
}

std::string NvmlTelemetry::DriverVersion() const {
  char buf[128] = {};
  if (lib_->driver_version && lib_->driver_version(buf, nvml::kDriverBuffer) == nvml::kSuccess) {
    return buf;
  }
  return "";
}

absl::StatusOr<nvml::nvmlDevice_t> NvmlTelemetry::Handle(const std::string& uuid) {
  if (auto it = handles_.find(uuid); it != handles_.end()) return it->second;
  nvml::nvmlDevice_t dev = nullptr;
  if (lib_->handle_by_uuid && lib_->handle_by_uuid(uuid.c_str(), &dev) == nvml::kSuccess) {
    handles_[uuid] = dev;
    return dev;
  }
  // Fall back to a scan over indices comparing UUIDs.
  unsigned int count = 0;
  if (lib_->count(&count) == nvml::kSuccess && lib_->uuid) {
    for (unsigned int i = 0; i < count; ++i) {
      char buf[128] = {};
      if (lib_->handle_by_index(i, &dev) == nvml::kSuccess &&
          lib_->uuid(dev, buf, nvml::kUuidBuffer) == nvml::kSuccess && uuid == buf) {
        handles_[uuid] = dev;
        return dev;
      }
    }
  }
  return absl::NotFoundError(absl::StrCat("NVML does not know GPU ", uuid));
}

absl::StatusOr<GpuTelemetry> NvmlTelemetry::Read(const std::string& uuid) {
  auto dev_or = Handle(uuid);
  if (!dev_or.ok()) return dev_or.status();
  nvml::nvmlDevice_t dev = *dev_or;
  nvml::Library& lib = *lib_;
  GpuTelemetry t;
  auto ok = [&](nvml::nvmlReturn_t r, const char* call) {
    if (r == nvml::kSuccess) return true;
    if (r == nvml::kNotSupported) return false;
    if (r == nvml::kGpuIsLost) t.lost = true;
    t.errors.push_back(absl::StrCat(call, ": ", lib.Error(r)));
    return false;
  };
  unsigned int u = 0;
  if (lib.temperature &&
      ok(lib.temperature(dev, nvml::kTemperatureGpu, &u), "nvmlDeviceGetTemperature")) {
    t.temperature_c = u;
  }
  if (lib.field_values) {
    nvml::FieldValue fv{};
    fv.field_id = nvml::kFieldMemoryTemp;
    double v = 0;
    // The call's own return says whether the query ran; each field carries
    // its own return (NOT_SUPPORTED on GPUs without a memory sensor).
    if (ok(lib.field_values(dev, 1, &fv), "nvmlDeviceGetFieldValues") &&
        nvml::FieldAsDouble(fv, &v) && v > 0) {
      t.memory_temperature_c = v;
    }
  }
  if (lib.power_usage && ok(lib.power_usage(dev, &u), "nvmlDeviceGetPowerUsage")) {
    t.power_w = u / 1000.0;
  }
  if (lib.clock_info && ok(lib.clock_info(dev, nvml::kClockSm, &u), "nvmlDeviceGetClockInfo(SM)")) {
    t.sm_clock_mhz = u;
  }
  unsigned long long reasons = 0;
  if (lib.clock_reasons &&
      ok(lib.clock_reasons(dev, &reasons), "nvmlDeviceGetCurrentClocksEventReasons")) {
    t.throttle_reasons = reasons;
  }
  unsigned long long ecc = 0;
  if (lib.ecc_count &&
      ok(lib.ecc_count(dev, nvml::kMemoryErrorCorrected, nvml::kVolatileEcc, &ecc),
         "nvmlDeviceGetTotalEccErrors(corrected, volatile)")) {
    t.ecc_corrected_volatile = ecc;
  }
  if (lib.ecc_count &&
      ok(lib.ecc_count(dev, nvml::kMemoryErrorUncorrected, nvml::kVolatileEcc, &ecc),
         "nvmlDeviceGetTotalEccErrors(uncorrected, volatile)")) {
    t.ecc_uncorrected_volatile = ecc;
  }
  return t;
}

}  // namespace cmax::bench
