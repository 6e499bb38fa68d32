#include "benchmarks/health/fabric_checks.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "benchmarks/health/gpu_checks.h"

namespace cmax::health {
namespace {

constexpr char kFmDoc[] = "https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/";
constexpr char kFabricDoc[] =
    "https://docs.nvidia.com/deploy/nvml-api/structnvmlGpuFabricInfo__t.html";
constexpr char kStartFm[] =
    "start the Fabric Manager: systemctl enable --now nvidia-fabricmanager (its version must "
    "match the driver's exactly), check its log (/var/log/fabricmanager.log), then rerun "
    "health; until then CUDA cannot initialise on these GPUs (cudaErrorSystemNotReady)";

constexpr char kRemoteFabric[] =
    "the NVLink switches are outside this node (a multi-node NVLink domain such as a GB200 / "
    "GB300 NVL72 rack, whose NVSwitches sit in the switch trays): check the rack's NVLink "
    "management (NMX-M / NMX-C and the fabric manager on the switch trays) and the IMEX "
    "service; if this GPU alone stays unregistered, reset it or reboot the tray, then drain "
    "and inspect it with the provider";

// Whether any GPU reports an NVLink fabric registration (Hopper and later
// with a fabric; NOT_SUPPORTED and no answer do not count).
bool AnyGpuInAFabric(const absl::StatusOr<GpuInventory>& gpus) {
  if (!gpus.ok()) return false;
  for (const GpuState& g : gpus->gpus) {
    if (!g.lost && g.fabric_state && *g.fabric_state != FabricState::kNotSupported) return true;
  }
  return false;
}

// `remote`: no NVSwitch on this node's PCI bus (the fabric is managed elsewhere).
void CheckGpuRegistration(const GpuState& g, bool fm_running, bool remote, HealthResult* r) {
  if (g.lost || !g.fabric_state || *g.fabric_state == FabricState::kNotSupported) return;
  FabricState state = *g.fabric_state;
  int status = g.fabric_status.value_or(0);
  if (state == FabricState::kCompleted && status == 0) return;
  std::string title =
      state == FabricState::kCompleted
          ? absl::StrCat(GpuWho(g), ": NVLink fabric registration completed with error ", status)
          : absl::StrCat(GpuWho(g), ": NVLink fabric registration ", FabricStateName(state));
  std::string action =
      remote        ? kRemoteFabric
      : !fm_running ? kStartFm
                  : "restart the Fabric Manager (systemctl restart nvidia-fabricmanager) and "
                    "check its log; if the GPU still does not register, reset GPU or reboot, "
                    "then drain and inspect hardware (NVSwitch, baseboard) with the provider";
  v1::Finding& f = GpuFinding(
      r, g, "health.fabric_registration", v1::SEVERITY_FAIL, "reliability", title,
      remote ? "nvmlDeviceGetGpuFabricInfo: a GPU of a multi-node NVLink domain is usable only "
               "once the domain's fabric management has registered it (state COMPLETED, status "
               "success); no NVSwitch is on this node's own PCI bus"
             : "nvmlDeviceGetGpuFabricInfo: a GPU on an NVSwitch system is usable only once the "
               "fabric manager has registered it (state COMPLETED, status success)",
      action, kFabricDoc);
  (*f.mutable_labels())["fabric_state"] = FabricStateName(state);
  if (g.fabric_status) (*f.mutable_labels())["fabric_status"] = absl::StrCat(status);
  (*f.mutable_labels())["nvswitch_local"] = remote ? "false" : "true";
}

}  // namespace

const char* FabricStateName(FabricState s) {
  switch (s) {
    case FabricState::kNotSupported: return "NOT_SUPPORTED";
    case FabricState::kNotStarted: return "NOT_STARTED";
    case FabricState::kInProgress: return "IN_PROGRESS";
    case FabricState::kCompleted: return "COMPLETED";
  }
  return "UNKNOWN";
}

std::optional<int> FindProcessByName(const Sysroot& root, const std::string& name) {
  constexpr size_t kCommMax = 15;  // TASK_COMM_LEN - 1
  const std::string truncated = name.substr(0, kCommMax);
  for (const std::string& entry : root.List("/proc")) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry, &pid) || pid <= 0) continue;
    auto comm = root.ReadLine(absl::StrCat("/proc/", entry, "/comm"));
    if (comm && (*comm == name || *comm == truncated)) return pid;
  }
  return std::nullopt;
}

void CheckFabric(const std::vector<std::string>& switches, std::optional<int> fabric_manager_pid,
                 const absl::StatusOr<GpuInventory>& gpus, HealthResult* r) {
  r->Measure("nvswitch_count", static_cast<double>(switches.size()), "count", {});
  if (switches.empty()) {
    if (!AnyGpuInAFabric(gpus)) {
      r->Log("info", "no NVSwitch on the PCI bus: Fabric Manager and fabric registration not "
                     "applicable");
      return;
    }
    // GB200 / GB300 NVL72 compute trays: the switches are in other trays, but
    // the GPUs still register with the fabric; their registration is checked
    // (no local Fabric Manager is expected).
    r->Log("info", "no NVSwitch on this node's PCI bus, but GPUs report an NVLink fabric "
                   "registration (multi-node NVLink): checking each GPU's registration");
    for (const GpuState& g : gpus->gpus) CheckGpuRegistration(g, false, /*remote=*/true, r);
    return;
  }
  r->Measure("fabric_manager_running", fabric_manager_pid ? 1 : 0, "bool", {});
  if (!fabric_manager_pid) {
    v1::Finding& f = r->Find(
        "health.fabric_manager_down", v1::SEVERITY_FAIL, "reliability", "node",
        absl::StrCat(switches.size(), " NVSwitches but no Fabric Manager running"),
        "no process named nv-fabricmanager (an agent in its own pid namespace cannot see host "
        "processes: then run it in the host's)",
        kStartFm);
    f.add_links(kFmDoc);
    f.add_evidence(absl::StrCat("NVSwitches: ", absl::StrJoin(switches, ", ")));
    (*f.mutable_labels())["nvswitch_count"] = absl::StrCat(switches.size());
  }
  if (!gpus.ok()) return;
  for (const GpuState& g : gpus->gpus) {
    CheckGpuRegistration(g, fabric_manager_pid.has_value(), /*remote=*/false, r);
  }
}

}  // namespace cmax::health
