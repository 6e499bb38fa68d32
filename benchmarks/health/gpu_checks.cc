#include "benchmarks/health/gpu_checks.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "benchmarks/gpu_common/nvml_api.h"
#include "benchmarks/health/kernel_log.h"

namespace cmax::health {
namespace {

constexpr char kNvmlDoc[] = "https://docs.nvidia.com/deploy/nvml-api/";
constexpr char kDcgmDoc[] =
    "https://docs.nvidia.com/datacenter/dcgm/latest/user-guide/dcgm-diagnostics.html";

void MeasureOpt(HealthResult* r, const GpuState& g, const char* metric,
                const std::optional<uint64_t>& v, const char* unit) {
  if (v) r->Measure(metric, static_cast<double>(*v), unit, GpuLabels(g));
}

// The driver's recovery action (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION): any
// value but NONE means the GPU is not fit for work until the action is done.
void CheckRecoveryAction(const GpuState& g, HealthResult* r) {
  const uint64_t a = *g.recovery_action;
  r->Measure("gpu_recovery_action", static_cast<double>(a), "enum", GpuLabels(g));
  if (a == nvml::kRecoveryNone) return;
  struct Meaning {
    const char* what;
    const char* action;
  };
  static const std::map<uint64_t, Meaning> kMeanings = {
      {nvml::kRecoveryGpuReset,
       {"a GPU reset", "reset GPU: stop its processes, nvidia-smi -r, then rerun health"}},
      {nvml::kRecoveryNodeReboot,
       {"a node reboot", "reboot the node (a GPU reset is not enough), then rerun health"}},
      {nvml::kRecoveryDrainP2p,
       {"draining peer-to-peer traffic",
        "stop the NVLink/P2P traffic (the jobs using this GPU), then rerun health: the driver "
        "then names the final action"}},
      {nvml::kRecoveryDrainAndReset,
       {"a drain and reset (it runs at reduced capacity)",
        "drain the node: let running work reach a checkpoint, then reset GPU"}},
      {nvml::kRecoveryRecoverImexDomain,
       {"its IMEX domain recovered",
        "recover the IMEX domain (restart the nvidia-imex service on the domain's nodes), then "
        "rerun health"}},
      {nvml::kRecoveryBusReset,
       {"a reset of its PCIe bus", "reset the GPU's PCIe bus (or reboot), then rerun health"}},
      {nvml::kRecoverySystemReboot,
       {"a system reboot", "reboot the system, then rerun health"}},
  };
  auto it = kMeanings.find(a);
  const std::string what = it == kMeanings.end() ? absl::StrCat("recovery action ", a)
                                                 : std::string(it->second.what);
  GpuFinding(r, g, "health.recovery_action", v1::SEVERITY_FAIL, "reliability",
             absl::StrCat("the driver says ", GpuWho(g), " needs ", what),
             absl::StrCat("NVML_FI_DEV_GET_GPU_RECOVERY_ACTION = ", a,
                          ": the GPU is not fit for work until then (Xid 154 reports changes)"),
             it == kMeanings.end() ? "read the driver's documentation for this action; drain "
                                     "the node until it is done"
                                   : it->second.action,
             kNvmlDoc);
}

void CheckOne(const GpuState& g, const HealthThresholds& t, HealthResult* r) {
  MeasureOpt(r, g, "gpu_ecc_volatile_sbe", g.volatile_sbe, "count");
  MeasureOpt(r, g, "gpu_ecc_volatile_dbe", g.volatile_dbe, "count");
  MeasureOpt(r, g, "gpu_ecc_aggregate_sbe", g.aggregate_sbe, "count");
  MeasureOpt(r, g, "gpu_ecc_aggregate_dbe", g.aggregate_dbe, "count");
  MeasureOpt(r, g, "gpu_retired_pages_sbe", g.retired_pages_sbe, "count");
  MeasureOpt(r, g, "gpu_retired_pages_dbe", g.retired_pages_dbe, "count");
  MeasureOpt(r, g, "gpu_remapped_rows_correctable", g.remapped_rows_correctable, "count");
  MeasureOpt(r, g, "gpu_remapped_rows_uncorrectable", g.remapped_rows_uncorrectable, "count");
  MeasureOpt(r, g, "gpu_pcie_link_width", g.pcie_width, "lanes");
  MeasureOpt(r, g, "gpu_pcie_replay_count", g.pcie_replays, "count");
  MeasureOpt(r, g, "gpu_temperature_c", g.temperature_c, "C");
  MeasureOpt(r, g, "gpu_violation_power_ns", g.violation_power_ns, "ns");
  MeasureOpt(r, g, "gpu_violation_thermal_ns", g.violation_thermal_ns, "ns");
  MeasureOpt(r, g, "gpu_compute_processes", g.compute_processes, "count");

  if (g.lost) {
    GpuFinding(r, g, "health.gpu_lost", v1::SEVERITY_CRITICAL, "reliability",
               absl::StrCat(GpuWho(g), " is lost (NVML: GPU_IS_LOST)"),
               absl::StrJoin(g.errors, "; "),
               "drain and inspect hardware: collect nvidia-bug-report, reboot, RMA if it recurs",
               kNvmlDoc);
    return;
  }
  if (!g.errors.empty()) {
    v1::Finding& f = GpuFinding(r, g, "health.gpu_query_error", v1::SEVERITY_WARN, "reliability",
                                absl::StrCat("NVML could not read part of ", GpuWho(g)),
                                "these readings are not measured", "check the driver and NVML",
                                kNvmlDoc);
    for (const auto& e : g.errors) f.add_evidence(e);
  }
  if (g.ecc_enabled && !*g.ecc_enabled) {
    GpuFinding(r, g, "health.ecc_disabled", v1::SEVERITY_WARN, "reliability",
               absl::StrCat("ECC is disabled on ", GpuWho(g)),
               "memory errors are neither corrected nor counted",
               "enable ECC (nvidia-smi -e 1) and reset the GPU", kNvmlDoc);
  }
  if (g.volatile_dbe && static_cast<int64_t>(*g.volatile_dbe) >= t.volatile_dbe_fail) {
    GpuFinding(r, g, "health.ecc_volatile_dbe", v1::SEVERITY_FAIL, "reliability",
               absl::StrCat(GpuWho(g), ": ", *g.volatile_dbe,
                            " uncorrectable ECC errors since the driver loaded"),
               absl::StrCat("threshold ", t.volatile_dbe_fail, " (DCGM fails on any)"),
               "reset GPU: stop its jobs, reset it so the memory is remapped, then rerun health; "
               "drain and inspect hardware if errors recur",
               kDcgmDoc);
  }
  if (g.aggregate_dbe && static_cast<int64_t>(*g.aggregate_dbe) >= t.aggregate_dbe_warn) {
    GpuFinding(r, g, "health.ecc_aggregate_dbe", v1::SEVERITY_WARN, "reliability",
               absl::StrCat(GpuWho(g), ": ", *g.aggregate_dbe,
                            " uncorrectable ECC errors over its lifetime"),
               "history, not a current fault; watch for new ones",
               "check the application runs that failed around them; drain and inspect hardware "
               "if the count grows",
               kNvmlDoc);
  }
  uint64_t retired = g.retired_pages_sbe.value_or(0) + g.retired_pages_dbe.value_or(0);
  if ((g.retired_pages_sbe || g.retired_pages_dbe) &&
      static_cast<int64_t>(retired) >= t.retired_pages_fail) {
    GpuFinding(r, g, "health.retired_pages", v1::SEVERITY_FAIL, "reliability",
               absl::StrCat(GpuWho(g), ": ", retired, " retired pages"),
               absl::StrCat("threshold ", t.retired_pages_fail, " (DCGM)"),
               "drain and inspect hardware (RMA candidate)", kDcgmDoc);
  }
  if (g.remap_failed && *g.remap_failed) {
    GpuFinding(r, g, "health.row_remap_failure", t.row_remap_failure_fails
                                                     ? v1::SEVERITY_CRITICAL
                                                     : v1::SEVERITY_WARN,
               "reliability", absl::StrCat(GpuWho(g), ": a row remap failed"),
               "the GPU ran out of spare rows or could not record a remap",
               "drain and inspect hardware (RMA candidate)", kNvmlDoc);
  }
  if (g.remap_pending && *g.remap_pending) {
    GpuFinding(r, g, "health.row_remap_pending",
               t.row_remap_pending_fails ? v1::SEVERITY_FAIL : v1::SEVERITY_WARN, "reliability",
               absl::StrCat(GpuWho(g), ": a row remap is pending"),
               "the remap takes effect only after a GPU reset; until then the bad row is in use",
               "reset GPU when idle (nvidia-smi -r), then confirm no remap is pending", kNvmlDoc);
  }
  if (g.pcie_width && g.pcie_max_width && *g.pcie_width < *g.pcie_max_width) {
    GpuFinding(r, g, "health.pcie_width", v1::SEVERITY_FAIL, "reliability",
               absl::StrCat(GpuWho(g), ": PCIe link x", *g.pcie_width, " of x", *g.pcie_max_width),
               "a narrow link cuts host-device bandwidth (width is judged at any load; "
               "generation only under load)",
               "drain and inspect hardware: reseat the GPU or riser, check the slot", kNvmlDoc);
  }
  if (g.pcie_replays && static_cast<int64_t>(*g.pcie_replays) >= t.pcie_replay_warn) {
    GpuFinding(r, g, "health.pcie_replays", v1::SEVERITY_WARN, "reliability",
               absl::StrCat(GpuWho(g), ": ", *g.pcie_replays,
                            " PCIe replays since the driver loaded"),
               absl::StrCat("threshold ", t.pcie_replay_warn,
                            "; DCGM judges the rate, compare the run's change"),
               "drain and inspect hardware if the count grows: reseat the GPU or riser",
               kDcgmDoc);
  }
  if (g.throttle_reasons) {
    uint64_t judged = *g.throttle_reasons & ~t.throttle_ignore_mask;
    r->Measure("gpu_throttle_reasons", static_cast<double>(*g.throttle_reasons), "bitmask",
               GpuLabels(g));
    if (judged != 0) {
      GpuFinding(r, g, "health.throttle", v1::SEVERITY_WARN, "reliability",
                 absl::StrCat(GpuWho(g), " is throttled: ", ThrottleReasonNames(judged)),
                 absl::StrCat("clock event reasons 0x", absl::Hex(*g.throttle_reasons),
                              " (GpuIdle and application-clock bits masked)"),
                 "check cooling and power delivery; drain and inspect hardware if a hardware "
                 "slowdown persists at idle",
                 kNvmlDoc);
    }
  }
  if (g.temperature_c && g.slowdown_temperature_c && *g.slowdown_temperature_c > 0) {
    int64_t temp = static_cast<int64_t>(*g.temperature_c);
    int64_t slow = static_cast<int64_t>(*g.slowdown_temperature_c);
    if (temp >= slow || temp >= slow - t.temperature_margin_c) {
      bool over = temp >= slow;
      GpuFinding(r, g, "health.temperature", over ? v1::SEVERITY_FAIL : v1::SEVERITY_WARN,
                 "reliability",
                 absl::StrCat(GpuWho(g), " at ", temp, " C, slowdown threshold ", slow, " C"),
                 over ? std::string("at or above the GPU's own slowdown threshold")
                      : absl::StrCat("within ", t.temperature_margin_c,
                                     " C of the GPU's own slowdown threshold"),
                 "check cooling (fans, airflow, inlet temperature)", kNvmlDoc);
    }
  }
  if (t.persistence_off_warn && g.persistence_mode && !*g.persistence_mode) {
    GpuFinding(r, g, "health.persistence_off", v1::SEVERITY_WARN, "reliability",
               absl::StrCat("persistence mode is off on ", GpuWho(g)),
               "the driver tears the GPU down between jobs: slow starts, lost state",
               "enable nvidia-persistenced (or nvidia-smi -pm 1)", kNvmlDoc);
  }
  if (g.mig_enabled && *g.mig_enabled) {
    GpuFinding(r, g, "health.mig_enabled", v1::SEVERITY_WARN, "compute",
               absl::StrCat("MIG mode is on for ", GpuWho(g)),
               "benchmarks see a slice of the GPU: measurements would be meaningless",
               "disable MIG (nvidia-smi -mig 0) and reset the GPU before benchmarking", kNvmlDoc);
  }
  if (g.recovery_action) CheckRecoveryAction(g, r);
  if (g.compute_processes && *g.compute_processes > 0) {
    GpuFinding(r, g, "health.gpu_busy", v1::SEVERITY_WARN, "compute",
               absl::StrCat(*g.compute_processes, " other compute process(es) on ", GpuWho(g)),
               "other work on the GPU makes benchmark measurements meaningless",
               "check the application: stop or drain the other jobs before benchmarking",
               kNvmlDoc);
  }
}

}  // namespace

std::string GpuSubject(const GpuState& g) { return absl::StrCat("gpu:", g.index); }

std::map<std::string, std::string> GpuLabels(const GpuState& g) {
  std::map<std::string, std::string> l = {{"gpu", absl::StrCat(g.index)}};
  if (!g.uuid.empty()) l["uuid"] = g.uuid;
  if (!g.pci_bus_id.empty()) l["pci_bus_id"] = g.pci_bus_id;
  if (!g.name.empty()) l["model"] = g.name;
  return l;
}

std::string GpuWho(const GpuState& g) {
  return absl::StrCat("GPU ", g.index, g.uuid.empty() ? "" : " " + g.uuid,
                      g.pci_bus_id.empty() ? "" : " (" + g.pci_bus_id + ")");
}

v1::Finding& GpuFinding(HealthResult* r, const GpuState& g, const std::string& id,
                        v1::Severity sev, const std::string& category, const std::string& title,
                        const std::string& detail, const std::string& action,
                        const std::string& link) {
  v1::Finding& f = r->Find(id, sev, category, GpuSubject(g), title, detail, action);
  for (const auto& [k, v] : GpuLabels(g)) (*f.mutable_labels())[k] = v;
  if (!link.empty()) f.add_links(link);
  return f;
}

std::string ThrottleReasonNames(uint64_t mask) {
  // nvmlClocksEventReasons bits, from the NVML API reference.
  static const std::pair<uint64_t, const char*> kBits[] = {
      {0x1, "GpuIdle"},           {0x2, "ApplicationsClocksSetting"},
      {0x4, "SwPowerCap"},        {0x8, "HwSlowdown"},
      {0x10, "SyncBoost"},        {0x20, "SwThermalSlowdown"},
      {0x40, "HwThermalSlowdown"}, {0x80, "HwPowerBrakeSlowdown"},
      {0x100, "DisplayClockSetting"}};
  std::vector<std::string> names;
  uint64_t known = 0;
  for (const auto& [bit, name] : kBits) {
    known |= bit;
    if (mask & bit) names.push_back(name);
  }
  if (mask & ~known) names.push_back(absl::StrCat("0x", absl::Hex(mask & ~known)));
  return absl::StrJoin(names, ", ");
}

void CheckGpus(const absl::StatusOr<GpuInventory>& probed, const std::vector<PciGpu>& pci,
               const HealthThresholds& t, int expect_gpus, HealthResult* r) {
  r->Measure("gpu_pci_count", static_cast<double>(pci.size()), "count", {});
  if (expect_gpus >= 0 && static_cast<int>(pci.size()) < expect_gpus) {
    v1::Finding& f = r->Find(
        "health.gpu_count_pci", v1::SEVERITY_FAIL, "reliability", "node",
        absl::StrCat(pci.size(), " NVIDIA GPUs on the PCI bus, expected ", expect_gpus),
        "GPUs missing from the bus (fallen off, not trained, or disabled)",
        "drain and inspect hardware: reseat GPUs and risers, check power and BIOS settings");
    for (const auto& g : pci) f.add_evidence(absl::StrCat("present: ", g.address));
  }
  if (!probed.ok()) {
    if (expect_gpus == 0 && pci.empty()) {
      // The plan says this node has no GPU (a CPU node's remediation verify,
      // for one) and the bus agrees: that is the measurement, not a gap.
      r->Find("health.no_gpu", v1::SEVERITY_INFO, "reliability", "node",
              "no NVIDIA GPU on the PCI bus, as the plan expects (expect-gpus 0)",
              absl::StrCat("no NVIDIA device under /sys/bus/pci; NVML: ", probed.status().message()),
              "none");
      return;
    }
    if (absl::IsUnavailable(probed.status())) {
      r->Find("health.gpu_not_measured", v1::SEVERITY_INFO, "reliability", "node",
              "GPU health not measured: no NVML library",
              std::string(probed.status().message()),
              pci.empty() ? "none: no NVIDIA GPU on this node"
                          : "install the NVIDIA driver (libnvidia-ml.so.1) and rerun")
          .set_not_measured(true);
      r->Log("warn", absl::StrCat("GPU checks not measured: ", probed.status().message()));
    } else {
      // With GPUs on the bus a failing NVML is evidence against the node (FAIL);
      // without any, nothing about a GPU was measured (not measured).
      r->Find("health.nvml_error", pci.empty() ? v1::SEVERITY_WARN : v1::SEVERITY_FAIL,
              "reliability", "node", "NVML failed: GPU health not measured",
              std::string(probed.status().message()),
              "check the driver: is the kernel module loaded and does it match the library? "
              "Reboot if the module is wedged")
          .set_not_measured(pci.empty());
      r->Log("error", absl::StrCat("NVML: ", probed.status().message()));
    }
    return;
  }
  const GpuInventory& inv = *probed;
  r->Measure("gpu_count", static_cast<double>(inv.gpus.size()), "count",
             inv.driver_version.empty()
                 ? std::map<std::string, std::string>{}
                 : std::map<std::string, std::string>{{"driver", inv.driver_version}});
  if (expect_gpus >= 0 && static_cast<int>(inv.gpus.size()) < expect_gpus) {
    r->Find("health.gpu_count", v1::SEVERITY_FAIL, "reliability", "node",
            absl::StrCat("the driver sees ", inv.gpus.size(), " GPUs, expected ", expect_gpus),
            absl::StrCat(pci.size(), " NVIDIA GPUs on the PCI bus"),
            "drain and inspect hardware; check the kernel log for Xid 79 and the driver for "
            "GPUs it failed to initialise");
  } else if (inv.gpus.size() < pci.size()) {
    r->Find("health.gpu_count", v1::SEVERITY_FAIL, "reliability", "node",
            absl::StrCat("the driver sees ", inv.gpus.size(), " of the ", pci.size(),
                         " NVIDIA GPUs on the PCI bus"),
            "a GPU on the bus is not usable", "reset GPU or reboot; drain and inspect hardware "
            "if it stays missing");
  }
  for (const auto& g : inv.gpus) CheckOne(g, t, r);
}

}  // namespace cmax::health
