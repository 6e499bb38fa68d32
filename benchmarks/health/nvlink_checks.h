// Judges one GPU's NVLinks (GpuState::nvlinks). A link that exists but is
// inactive fails, one finding per link, while another link of the GPU is up
// or NVSwitches are present; when none of its links is up on a node without
// NVSwitches (a PCIe card whose bridge may be absent) it warns once. A link
// whose replay, recovery or CRC counter reaches its threshold warns. Measures
// nvlink_links_active, nvlink_links_down and each counter summed over links
// (only counters some link exposes). A GPU without links (no NVLink, or not
// measured) or lost gets nothing.
#ifndef CMAX_BENCHMARKS_HEALTH_NVLINK_CHECKS_H_
#define CMAX_BENCHMARKS_HEALTH_NVLINK_CHECKS_H_

#include "benchmarks/health/gpu_probe.h"
#include "benchmarks/health/health_result.h"
#include "benchmarks/health/thresholds.h"

namespace cmax::health {

void CheckNvLinks(const GpuState& g, const HealthThresholds& t, bool nvswitches_present,
                  HealthResult* r);

}  // namespace cmax::health

#endif  // CMAX_BENCHMARKS_HEALTH_NVLINK_CHECKS_H_
