// One telemetry reading of a GPU through NVML (nvml_api.h): what the GPU
// burn-in samples once a second. Every field is optional: nullopt when the
// GPU does not support it (NOT_SUPPORTED) or the call failed (then `errors`
// names the call and NVML's error).
#ifndef CMAX_BENCHMARKS_GPU_COMMON_NVML_TELEMETRY_H_
#define CMAX_BENCHMARKS_GPU_COMMON_NVML_TELEMETRY_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/gpu_common/nvml_api.h"

namespace cmax::bench {

struct GpuTelemetry {
  std::optional<double> temperature_c;         // nvmlDeviceGetTemperature(GPU)
  std::optional<double> memory_temperature_c;  // field NVML_FI_DEV_MEMORY_TEMP (HBM GPUs)
  std::optional<double> power_w;               // nvmlDeviceGetPowerUsage / 1000
  std::optional<double> sm_clock_mhz;          // nvmlDeviceGetClockInfo(SM)
  // nvmlClocksEventReasons bit mask as the driver reports it (unmasked).
  std::optional<uint64_t> throttle_reasons;
  std::optional<uint64_t> ecc_corrected_volatile, ecc_uncorrected_volatile;
  std::vector<std::string> errors;
  bool lost = false;  // NVML answered GPU_IS_LOST
};

// "temperature_c=71 memory_temperature_c=80 power_w=690.2 ..." plus errors:
// the NVML state as text for an Artifact.
std::string DescribeTelemetry(const GpuTelemetry& t);

// Reads telemetry by GPU UUID (the "GPU-..." form CUDA and NVML share, so
// the CUDA device order and NVML's index order need not agree).
// Not thread-safe: one thread reads.
class NvmlTelemetry {
 public:
  // UNAVAILABLE without libnvidia-ml; INTERNAL when NVML fails to start.
  static absl::StatusOr<std::unique_ptr<NvmlTelemetry>> Open();

  // NOT_FOUND when NVML does not know the UUID.
  absl::StatusOr<GpuTelemetry> Read(const std::string& uuid);
  std::string DriverVersion() const;

 private:
  explicit NvmlTelemetry(std::unique_ptr<nvml::Library> lib) : lib_(std::move(lib)) {}
  absl::StatusOr<nvml::nvmlDevice_t> Handle(const std::string& uuid);

  std::unique_ptr<nvml::Library> lib_;
  std::map<std::string, nvml::nvmlDevice_t> handles_;
};

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_GPU_COMMON_NVML_TELEMETRY_H_
