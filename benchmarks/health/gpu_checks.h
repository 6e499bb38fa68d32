// Judges GPU state from a GpuProbe against the thresholds: ECC, row
// remapping, retired pages, PCIe width and replays, throttle reasons,
// temperature against the GPU's own slowdown threshold, persistence mode,
// MIG mode and other processes. Every GPU reading becomes a Measurement.
#ifndef CMAX_BENCHMARKS_HEALTH_GPU_CHECKS_H_
#define CMAX_BENCHMARKS_HEALTH_GPU_CHECKS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/health/gpu_probe.h"
#include "benchmarks/health/health_result.h"
#include "benchmarks/health/pci_gpus.h"
#include "benchmarks/health/thresholds.h"

namespace cmax::health {

// `probed` is the probe's answer (UNAVAILABLE: no NVML -> "not measured" info
// finding and a log line, never a pass). `pci` is what sysfs shows, so GPUs
// missing from the driver but on the bus are named. `expect_gpus` < 0: no
// expectation.
void CheckGpus(const absl::StatusOr<GpuInventory>& probed, const std::vector<PciGpu>& pci,
               const HealthThresholds& t, int expect_gpus, HealthResult* result);

// Names of the throttle reason bits set in `mask`, e.g. "HwSlowdown, SwPowerCap".
std::string ThrottleReasonNames(uint64_t mask);

}  // namespace cmax::health

#endif  // CMAX_BENCHMARKS_HEALTH_GPU_CHECKS_H_
