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
#include "benchmarks/health/nvlink_platforms.h"
#include "benchmarks/health/thresholds.h"

namespace cmax::health {

void CheckNvLinks(const GpuState& g, const HealthThresholds& t, bool nvswitches_present,
                  HealthResult* r);

// Judges one GPU's NVLinks against its platform (`p`, from
// NvLinkPlatforms::Find on its name; nullptr: no expectation, nothing done).
// Fewer links than the platform has (links NVML does not report at all,
// which CheckNvLinks cannot see) fails health.nvlink_count naming the missing
// link numbers; active links whose speed (NvLinkState::speed_mbps, where
// known) is below 99% of the platform's link speed warn once per GPU
// (health.nvlink_speed) naming each link and its speed. Inactive links are
// CheckNvLinks' (health.nvlink_down), not repeated here. Measures
// nvlink_links_expected and, where any speed is known, the slowest active
// link as nvlink_link_speed_min (GB/s). A GPU without links or lost gets
// nothing.
void CheckNvLinkPlatform(const GpuState& g, const NvLinkPlatform* p, HealthResult* r);

}  // namespace cmax::health

#endif  // CMAX_BENCHMARKS_HEALTH_NVLINK_CHECKS_H_
