// Judges GPU state from a GpuProbe against the thresholds: ECC, row
// remapping, retired pages, PCIe width and replays, throttle reasons,
// temperature against the GPU's own slowdown threshold, persistence mode,
// MIG mode and other processes (NVLinks: nvlink_checks.h). Every GPU reading
// becomes a Measurement.
#ifndef CMAX_BENCHMARKS_HEALTH_GPU_CHECKS_H_
#define CMAX_BENCHMARKS_HEALTH_GPU_CHECKS_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/health/gpu_probe.h"
#include "benchmarks/health/health_result.h"
#include "benchmarks/health/pci_gpus.h"
#include "benchmarks/health/thresholds.h"

namespace cmax::health {

// `probed` is the probe's answer (UNAVAILABLE: no NVML -> an info finding
// health.gpu_not_measured with not_measured set and a log line, never a
// pass; another error -> health.nvml_error, FAIL with GPUs on the bus, else
// not measured). `pci` is what sysfs shows, so GPUs
// missing from the driver but on the bus are named. `expect_gpus` < 0: no
// expectation.
void CheckGpus(const absl::StatusOr<GpuInventory>& probed, const std::vector<PciGpu>& pci,
               const HealthThresholds& t, int expect_gpus, HealthResult* result);

// The subject ("gpu:3"), labels (gpu, uuid, pci_bus_id, model) and readable
// name ("GPU 3 GPU-... (00000000:5d:00.0)") every GPU finding carries.
std::string GpuSubject(const GpuState& g);
std::map<std::string, std::string> GpuLabels(const GpuState& g);
std::string GpuWho(const GpuState& g);
// Adds a finding about GPU `g` with its subject and labels; `link` (a
// documentation URL) is added when not empty.
v1::Finding& GpuFinding(HealthResult* r, const GpuState& g, const std::string& id,
                        v1::Severity sev, const std::string& category, const std::string& title,
                        const std::string& detail, const std::string& action,
                        const std::string& link);

// Names of the throttle reason bits set in `mask`, e.g. "HwSlowdown, SwPowerCap".
std::string ThrottleReasonNames(uint64_t mask);

}  // namespace cmax::health

#endif  // CMAX_BENCHMARKS_HEALTH_GPU_CHECKS_H_
