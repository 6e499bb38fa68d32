#include "benchmarks/health/fabric_domain.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "benchmarks/gpu_common/nvml_api.h"
#include "benchmarks/health/fabric_checks.h"
#include "benchmarks/health/file_gpu_probe.h"
#include "benchmarks/health/gpu_checks.h"
#include "benchmarks/health/nvml_loader.h"
#include "benchmarks/health/pci_gpus.h"

namespace cmax::health {
namespace {

constexpr char kFabricInfoDoc[] =
    "https://docs.nvidia.com/deploy/nvml-api/api/structnvmlGpuFabricInfo__v2__t.html";
// NVIDIA's IMEX guide: "Getting Started" (systemd service nvidia-imex; it
// aborts on a driver stack it is not compatible with) and "Config Options"
// (IMEX_NODE_CONFIG_FILE, default /etc/nvidia-imex/nodes_config.cfg: the IP
// addresses of the nodes in this IMEX domain).
constexpr char kImexDoc[] =
    "https://docs.nvidia.com/multi-node-nvlink-systems/imex-guide/gettingstarted.html";
constexpr char kImexConfigDoc[] =
    "https://docs.nvidia.com/multi-node-nvlink-systems/imex-guide/config.html";
constexpr char kStartImex[] =
    "start the IMEX service on every compute tray of the NVLink domain: systemctl "
    "enable --now nvidia-imex (its version must match the driver's, else it aborts), "
    "check journalctl -u nvidia-imex and that /etc/nvidia-imex/nodes_config.cfg lists "
    "every tray of the domain, then rerun health; until then CUDA cannot share memory "
    "across the trays over NVLink";
constexpr char kFabricHealthAction[] =
    "drain the node from multi-node NVLink jobs, check the rack's NVLink management "
    "(NMX-M / NMX-C, the switch trays' fabric manager) for the link or route, reset the "
    "GPU or reboot the tray once idle, then rerun health; if it stays, inspect the "
    "tray's NVLink cabling and switch trays with the provider";

struct MaskBit {
  unsigned shift;
  const char* condition;  // label value
  const char* what;       // title text
  v1::Severity severity;
};

// nvml_api.h kFabricHealthShift*: each 2-bit field TRUE (1) when the
// condition holds.
constexpr MaskBit kMaskBits[] = {
    {nvml::kFabricHealthShiftDegradedBw, "degraded_bandwidth",
     "NVLink fabric bandwidth degraded", v1::SEVERITY_WARN},
    {nvml::kFabricHealthShiftRouteRecovery, "route_recovery",
     "NVLink fabric route recovery in progress", v1::SEVERITY_WARN},
    {nvml::kFabricHealthShiftRouteUnhealthy, "route_unhealthy",
     "NVLink fabric route unhealthy", v1::SEVERITY_FAIL},
    {nvml::kFabricHealthShiftAccessTimeoutRecovery, "access_timeout_recovery",
     "NVLink fabric access timeout recovery in progress", v1::SEVERITY_WARN},
};

const char* IncorrectConfigName(unsigned v) {
  switch (v) {
    case 2:
      return "incorrect system GUID";
    case 3:
      return "incorrect chassis serial number";
    case 4:
      return "no partition";
    case 5:
      return "insufficient NVLinks";
  }
  return "unknown";
}

bool Registered(const GpuState& g) {
  return g.fabric_state == FabricState::kCompleted && g.fabric_status.value_or(0) == 0;
}

bool Reports(const GpuState& g) {
  return !g.lost && g.fabric_state && *g.fabric_state != FabricState::kNotSupported;
}

void CheckHealthMask(const GpuState& g, HealthResult* r) {
  if (!g.fabric_health_mask) return;
  const uint32_t mask = *g.fabric_health_mask;
  auto add = [&](const char* condition, v1::Severity sev, const std::string& title,
                 const std::string& value) {
    v1::Finding& f = GpuFinding(
        r, g, "health.fabric_health", sev, "reliability",
        absl::StrCat(GpuWho(g), ": ", title),
        absl::StrCat("nvmlDeviceGetGpuFabricInfoV healthMask 0x", absl::Hex(mask), ": ",
                     value,
                     "; the GPU stays registered but its NVLink traffic is impaired"),
        kFabricHealthAction, kFabricInfoDoc);
    (*f.mutable_labels())["condition"] = condition;
    (*f.mutable_labels())["health_mask"] = absl::StrCat(mask);
    if (!g.fabric_cluster_uuid.empty()) {
      (*f.mutable_labels())["cluster_uuid"] = g.fabric_cluster_uuid;
    }
  };
  for (const MaskBit& b : kMaskBits) {
    if (((mask >> b.shift) & nvml::kFabricHealthWidth2) == nvml::kFabricHealthTrue) {
      add(b.condition, b.severity, b.what, absl::StrCat(b.condition, " = TRUE"));
    }
  }
  const unsigned config = (mask >> nvml::kFabricHealthShiftIncorrectConfig) &
                          nvml::kFabricHealthWidthIncorrectConfig;
  if (config > nvml::kFabricConfigNone) {
    add("incorrect_configuration", v1::SEVERITY_FAIL,
        absl::StrCat("NVLink fabric configuration incorrect (",
                     IncorrectConfigName(config), ")"),
        absl::StrCat("incorrect_configuration = ", config));
  }
}

void CheckImex(const ImexState& imex, const std::string& domain, HealthResult* r) {
  r->Measure("imex_running", imex.pid ? 1 : 0, "bool", {{"cluster_uuid", domain}});
  if (imex.nodes) {
    r->Measure("imex_domain_nodes", static_cast<double>(imex.nodes->size()), "count",
               {{"cluster_uuid", domain}});
  }
  if (!imex.pid) {
    v1::Finding& f = r->Find(
        "health.imex_down", v1::SEVERITY_FAIL, "reliability", "node",
        "multi-node NVLink domain but no IMEX service running",
        absl::StrCat(
            "GPUs report NVLink domain ", domain,
            " and no NVSwitch is on this node's PCI bus (a multi-node NVLink domain), "
            "but no process named nvidia-imex runs (an agent in its own pid namespace "
            "cannot see host processes: then run it in the host's)"),
        kStartImex);
    f.add_links(kImexDoc);
    (*f.mutable_labels())["cluster_uuid"] = domain;
    if (imex.nodes) {
      f.add_evidence(absl::StrCat(kImexNodesConfig, ": ", imex.nodes->size(), " nodes"));
    }
  }
  if (!imex.nodes) {
    v1::Finding& f = r->Find(
        "health.imex_config", v1::SEVERITY_WARN, "reliability", "node",
        absl::StrCat("IMEX node list ", kImexNodesConfig, " not readable"),
        absl::StrCat(
            imex.config_error,
            ": the IMEX domain (the compute trays that share GPU "
            "memory over NVLink) is defined by this file; without it nvidia-imex "
            "does not start"),
        "write the IP address of every compute tray of the NVLink domain, one a line, to "
        "/etc/nvidia-imex/nodes_config.cfg (the same file on every tray), then systemctl "
        "restart nvidia-imex");
    f.add_links(kImexConfigDoc);
    (*f.mutable_labels())["cluster_uuid"] = domain;
  }
}

}  // namespace

bool IsZeroClusterUuid(const std::string& uuid) {
  for (char c : uuid) {
    if (c != '0' && c != '-') return false;
  }
  return true;
}

ImexState ReadImex(const Sysroot& root) {
  ImexState s;
  s.pid = FindProcessByName(root, "nvidia-imex");
  absl::StatusOr<std::string> text = root.Read(kImexNodesConfig);
  if (!text.ok()) {
    s.config_error = std::string(text.status().message());
    return s;
  }
  std::vector<std::string> nodes;
  for (absl::string_view line : absl::StrSplit(*text, '\n')) {
    line = absl::StripAsciiWhitespace(line);
    if (line.empty() || line[0] == '#') continue;
    nodes.emplace_back(line);
  }
  s.nodes = std::move(nodes);
  return s;
}

void CheckFabricDomain(const std::vector<std::string>& switches, size_t pci_gpus,
                       const absl::StatusOr<GpuInventory>& gpus, const ImexState& imex,
                       const NvLinkPlatforms& platforms, HealthResult* r) {
  if (!gpus.ok()) {
    if (pci_gpus == 0) return;  // no NVIDIA GPU here: no fabric to join
    v1::Finding& f = r->Find(
        "health.nvlink_fabric_not_measured", v1::SEVERITY_INFO, "reliability", "node",
        "NVLink fabric (domain, clique, health mask) not measured: no NVML answer",
        absl::StrCat(pci_gpus,
                     " NVIDIA GPUs on the PCI bus but no GPU answer to read their "
                     "fabric registration from: ",
                     gpus.status().message()),
        "install the NVIDIA driver (libnvidia-ml.so.1) or run health where it is, then "
        "rerun");
    f.set_not_measured(true);
    return;
  }
  std::string domain;  // the first non-zero cluster UUID
  bool any = false;
  for (const GpuState& g : gpus->gpus) {
    if (!Reports(g)) continue;
    any = true;
    std::map<std::string, std::string> labels = GpuLabels(g);
    labels["fabric_state"] = FabricStateName(*g.fabric_state);
    if (!g.fabric_cluster_uuid.empty()) labels["cluster_uuid"] = g.fabric_cluster_uuid;
    if (g.fabric_clique_id) labels["clique_id"] = absl::StrCat(*g.fabric_clique_id);
    if (const NvLinkPlatform* p = platforms.Find(g.name); p && p->domain_gpus > 0) {
      labels["nvlink_domain_gpus"] = absl::StrCat(p->domain_gpus);
      labels["platform"] = p->name;
    }
    r->Measure("nvlink_fabric", Registered(g) ? 1 : 0, "bool", labels);
    if (domain.empty() && !IsZeroClusterUuid(g.fabric_cluster_uuid)) {
      domain = g.fabric_cluster_uuid;
    }
    CheckHealthMask(g, r);
  }
  if (!any) {
    bool nvlinks = !switches.empty();
    for (const GpuState& g : gpus->gpus) nvlinks = nvlinks || !g.nvlinks.empty();
    if (!nvlinks) return;  // no NVLink here: nothing a fabric could join
    v1::Finding& f = r->Find(
        "health.nvlink_fabric_not_measured", v1::SEVERITY_INFO, "reliability", "node",
        "NVLink fabric (domain, clique, health mask) not measured: no fabric query",
        "the GPUs have NVLinks but none answered the fabric query "
        "(nvmlDeviceGetGpuFabricInfo[V] NOT_SUPPORTED or missing: a GPU before Hopper, "
        "or a "
        "driver without the query)",
        "nothing to do on GPUs before Hopper; on Hopper or later, update the driver and "
        "rerun");
    f.set_not_measured(true);
    return;
  }
  if (switches.empty() && !domain.empty()) CheckImex(imex, domain, r);
}

std::map<std::string, std::string> FabricInventoryFacts(const GpuInventory& inv) {
  std::vector<std::string> domains, cliques;
  auto add = [](std::vector<std::string>* v, const std::string& s) {
    if (std::find(v->begin(), v->end(), s) == v->end()) v->push_back(s);
  };
  for (const GpuState& g : inv.gpus) {
    if (!Reports(g) || IsZeroClusterUuid(g.fabric_cluster_uuid)) continue;
    add(&domains, g.fabric_cluster_uuid);
    if (g.fabric_clique_id) add(&cliques, absl::StrCat(*g.fabric_clique_id));
  }
  if (domains.empty()) return {};
  std::map<std::string, std::string> facts = {
      {"nvlink_domain", absl::StrJoin(domains, ",")}};
  if (!cliques.empty()) facts["nvlink_clique"] = absl::StrJoin(cliques, ",");
  return facts;
}

std::map<std::string, std::string> ProbeFabricInventoryFacts(const Sysroot& root) {
  if (ListNvidiaGpus(root).empty() || !ListNvSwitches(root).empty()) return {};
  absl::StatusOr<GpuInventory> inv = absl::UnavailableError("no GPU probe");
  if (root.Exists("/cmax-fixture/gpus.yaml")) {
    inv = FileGpuProbe(root.Path("/cmax-fixture/gpus.yaml")).Probe();
  } else if (root.is_real()) {
    inv = NvmlGpuProbe("libnvidia-ml.so.1", /*fabric_only=*/true).Probe();
  }
  if (!inv.ok()) return {};
  return FabricInventoryFacts(*inv);
}

}  // namespace cmax::health
