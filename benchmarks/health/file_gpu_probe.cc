#include "benchmarks/health/file_gpu_probe.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "yaml-cpp/yaml.h"

namespace cmax::health {
namespace {

template <typename T>
void Opt(const YAML::Node& n, const char* key, std::optional<T>* out) {
  if (n[key]) *out = n[key].as<T>();
}

std::optional<FabricState> ParseFabricState(const std::string& name) {
  if (name == "NOT_SUPPORTED") return FabricState::kNotSupported;
  if (name == "NOT_STARTED") return FabricState::kNotStarted;
  if (name == "IN_PROGRESS") return FabricState::kInProgress;
  if (name == "COMPLETED") return FabricState::kCompleted;
  return std::nullopt;
}

// nvlinks: [{link: 0, active: true, replay: 0, recovery: 0, crc_flit: 0, crc_data: 0}, ...]
// (NVLink5 GPUs: {link, active, recovery, effective_errors})
absl::Status ParseNvLinks(const YAML::Node& list, GpuState* s) {
  if (!list) return absl::OkStatus();
  if (!list.IsSequence()) return absl::InvalidArgumentError("nvlinks: not a list");
  for (size_t i = 0; i < list.size(); ++i) {
    const YAML::Node& n = list[i];
    NvLinkState l;
    l.link = n["link"] ? n["link"].as<int>() : static_cast<int>(i);
    if (!n["active"]) {
      return absl::InvalidArgumentError(absl::StrCat("nvlinks[", i, "]: no 'active'"));
    }
    l.active = n["active"].as<bool>();
    Opt(n, "replay", &l.replay);
    Opt(n, "recovery", &l.recovery);
    Opt(n, "crc_flit", &l.crc_flit);
    Opt(n, "crc_data", &l.crc_data);
    Opt(n, "effective_errors", &l.effective_errors);
    Opt(n, "speed_mbps", &l.speed_mbps);
    s->nvlinks.push_back(l);
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<GpuInventory> FileGpuProbe::ParseYaml(const std::string& text) {
  GpuInventory inv;
  try {
    YAML::Node root = YAML::Load(text);
    if (root["driver_version"]) inv.driver_version = root["driver_version"].as<std::string>();
    YAML::Node gpus = root["gpus"];
    if (gpus && !gpus.IsSequence()) return absl::InvalidArgumentError("gpus: not a list");
    for (size_t i = 0; gpus && i < gpus.size(); ++i) {
      const YAML::Node& g = gpus[i];
      GpuState s;
      s.index = g["index"] ? g["index"].as<int>() : static_cast<int>(i);
      if (g["name"]) s.name = g["name"].as<std::string>();
      if (g["uuid"]) s.uuid = g["uuid"].as<std::string>();
      if (g["pci_bus_id"]) s.pci_bus_id = g["pci_bus_id"].as<std::string>();
      Opt(g, "ecc_enabled", &s.ecc_enabled);
      Opt(g, "volatile_sbe", &s.volatile_sbe);
      Opt(g, "volatile_dbe", &s.volatile_dbe);
      Opt(g, "aggregate_sbe", &s.aggregate_sbe);
      Opt(g, "aggregate_dbe", &s.aggregate_dbe);
      Opt(g, "retired_pages_sbe", &s.retired_pages_sbe);
      Opt(g, "retired_pages_dbe", &s.retired_pages_dbe);
      Opt(g, "remapped_rows_correctable", &s.remapped_rows_correctable);
      Opt(g, "remapped_rows_uncorrectable", &s.remapped_rows_uncorrectable);
      Opt(g, "remap_pending", &s.remap_pending);
      Opt(g, "remap_failed", &s.remap_failed);
      Opt(g, "pcie_width", &s.pcie_width);
      Opt(g, "pcie_max_width", &s.pcie_max_width);
      Opt(g, "pcie_replays", &s.pcie_replays);
      Opt(g, "throttle_reasons", &s.throttle_reasons);
      Opt(g, "temperature_c", &s.temperature_c);
      Opt(g, "slowdown_temperature_c", &s.slowdown_temperature_c);
      Opt(g, "shutdown_temperature_c", &s.shutdown_temperature_c);
      Opt(g, "persistence_mode", &s.persistence_mode);
      Opt(g, "mig_enabled", &s.mig_enabled);
      Opt(g, "compute_processes", &s.compute_processes);
      Opt(g, "violation_power_ns", &s.violation_power_ns);
      Opt(g, "violation_thermal_ns", &s.violation_thermal_ns);
      Opt(g, "recovery_action", &s.recovery_action);
      if (g["lost"]) s.lost = g["lost"].as<bool>();
      if (auto st = ParseNvLinks(g["nvlinks"], &s); !st.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("gpu ", s.index, ": ", st.message()));
      }
      if (g["fabric_state"]) {
        std::string name = g["fabric_state"].as<std::string>();
        s.fabric_state = ParseFabricState(name);
        if (!s.fabric_state) {
          return absl::InvalidArgumentError(absl::StrCat(
              "gpu ", s.index, ": fabric_state '", name,
              "' (NOT_SUPPORTED, NOT_STARTED, IN_PROGRESS or COMPLETED)"));
        }
      }
      Opt(g, "fabric_status", &s.fabric_status);
      if (g["fabric_cluster_uuid"]) {
        s.fabric_cluster_uuid = g["fabric_cluster_uuid"].as<std::string>();
      }
      Opt(g, "fabric_clique_id", &s.fabric_clique_id);
      Opt(g, "fabric_health_mask", &s.fabric_health_mask);
      inv.gpus.push_back(std::move(s));
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("gpu fixture: ", e.what()));
  }
  return inv;
}

absl::StatusOr<GpuInventory> FileGpuProbe::Probe() {
  std::ifstream in(path_);
  if (!in) return absl::NotFoundError(absl::StrCat(path_, ": cannot open"));
  std::ostringstream ss;
  ss << in.rdbuf();
  auto inv = ParseYaml(ss.str());
  if (!inv.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": ", inv.status().message()));
  }
  return inv;
}

}  // namespace cmax::health
