// Fabric Manager and NVSwitch state. Where NVSwitches are on the PCI bus
// (ListNvSwitches), the Fabric Manager daemon must be running (a process
// named nv-fabricmanager, FindProcessByName) and every GPU that reports a
// fabric registration (nvmlDeviceGetGpuFabricInfo: Hopper and later) must be
// COMPLETED with status success; anything else fails with its action.
// Without NVSwitches on the node's own PCI bus but with GPUs that report a
// fabric registration (state other than NOT_SUPPORTED: a GB200 / GB300 NVL72
// compute tray, whose switches are in the switch trays), each GPU's
// registration is still checked (FAIL health.fabric_registration, label
// nvswitch_local=false, pointing at the rack's NVLink management); no local
// Fabric Manager is required there. Without NVSwitches and without fabric
// GPUs: no findings, one info log line. Measures nvswitch_count
// (and fabric_manager_running where switches are present).
#ifndef CMAX_BENCHMARKS_HEALTH_FABRIC_CHECKS_H_
#define CMAX_BENCHMARKS_HEALTH_FABRIC_CHECKS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/health/gpu_probe.h"
#include "benchmarks/health/health_result.h"
#include "common/sysroot.h"

namespace cmax::health {

// The pid of the first process under <root>/proc whose comm is `name`, or
// `name` cut to 15 characters as the kernel keeps it (TASK_COMM_LEN 16 with
// the NUL, proc(5): "nv-fabricmanager" shows as "nv-fabricmanage"); nullopt
// when none. Sees only this pid namespace.
std::optional<int> FindProcessByName(const Sysroot& root, const std::string& name);

// `switches`: NVSwitch PCI addresses; `fabric_manager_pid`: the running
// daemon, if any; `gpus`: the probe's answer (fabric state per GPU; a failed
// probe skips the per-GPU part).
void CheckFabric(const std::vector<std::string>& switches, std::optional<int> fabric_manager_pid,
                 const absl::StatusOr<GpuInventory>& gpus, HealthResult* r);

// "NOT_STARTED", ... as NVML names the state.
const char* FabricStateName(FabricState s);

}  // namespace cmax::health

#endif  // CMAX_BENCHMARKS_HEALTH_FABRIC_CHECKS_H_
