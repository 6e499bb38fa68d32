// NVML loaded at run time: dlopen("libnvidia-ml.so.1") and the versioned
// entry points, declared here from NVIDIA's NVML API reference
// (https://docs.nvidia.com/deploy/nvml-api/) because no nvml.h is installed
// on build machines. Only what health needs is declared: opaque handles,
// return codes and plain-C entry points; the one struct used
// (nvmlPciInfo_t, for nvmlDeviceGetPciInfo_v3) is laid out as documented.
//
// NVML can hang for minutes after an Xid 79: only suite processes (children
// with a timeout) call it, never the agent.
#ifndef CMAX_BENCHMARKS_HEALTH_NVML_LOADER_H_
#define CMAX_BENCHMARKS_HEALTH_NVML_LOADER_H_

#include <memory>
#include <string>

#include "benchmarks/health/gpu_probe.h"

namespace cmax::health {

class NvmlLibrary;  // the dlopen'ed library and its entry points

class NvmlGpuProbe : public GpuProbe {
 public:
  // `library` is the name handed to dlopen.
  explicit NvmlGpuProbe(std::string library = "libnvidia-ml.so.1");
  ~NvmlGpuProbe() override;

  // UNAVAILABLE when dlopen fails (no driver installed); INTERNAL with the
  // NVML error string when nvmlInit_v2 or the device count fails.
  absl::StatusOr<GpuInventory> Probe() override;
  std::string Describe() const override;

 private:
  std::string library_name_;
  std::unique_ptr<NvmlLibrary> lib_;
};

}  // namespace cmax::health

#endif  // CMAX_BENCHMARKS_HEALTH_NVML_LOADER_H_
