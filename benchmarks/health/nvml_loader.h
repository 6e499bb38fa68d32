// The health suite's GPU probe over NVML loaded at run time (the loader and
// the declarations are benchmarks/gpu_common/nvml_api.h, library cmax_nvml).
//
// NVML can hang for minutes after an Xid 79: only suite processes (children
// with a timeout) call it, never the agent.
#ifndef CMAX_BENCHMARKS_HEALTH_NVML_LOADER_H_
#define CMAX_BENCHMARKS_HEALTH_NVML_LOADER_H_

#include <memory>
#include <string>

#include "benchmarks/gpu_common/nvml_api.h"
#include "benchmarks/health/gpu_probe.h"

namespace cmax::health {

class NvmlGpuProbe : public GpuProbe {
 public:
  // `library` is the name handed to dlopen. `fabric_only`: per GPU only its
  // name, UUID, PCI address and fabric registration (what `hostcheck
  // --inventory` needs for the nvlink_domain fact, kept short).
  explicit NvmlGpuProbe(std::string library = "libnvidia-ml.so.1", bool fabric_only = false);
  ~NvmlGpuProbe() override;

  // UNAVAILABLE when dlopen fails (no driver installed); INTERNAL with the
  // NVML error string when nvmlInit_v2 or the device count fails.
  absl::StatusOr<GpuInventory> Probe() override;
  std::string Describe() const override;

 private:
  std::string library_name_;
  bool fabric_only_ = false;
  std::unique_ptr<nvml::Library> lib_;  // benchmarks/gpu_common/nvml_api.h
};

}  // namespace cmax::health

#endif  // CMAX_BENCHMARKS_HEALTH_NVML_LOADER_H_
