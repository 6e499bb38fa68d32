// The NVLink domain a node's GPUs belong to, read from each GPU's fabric
// registration (nvmlGpuFabricInfo: cluster UUID, clique id, health mask), and
// the IMEX service that multi-node NVLink domains need.
//
// CheckFabricDomain, per GPU that reports a fabric registration:
//  - measures `nvlink_fabric` (1 registered: COMPLETED with status success,
//    else 0) labelled cluster_uuid, clique_id, fabric_state (and
//    nvlink_domain_gpus where the platform gives a domain size): what the
//    scorecard's NVLink domain judge groups by (reports/judges/
//    nvlink_domain_judge.cc);
//  - decodes the health mask (v2/v3 struct): bandwidth degraded, route
//    recovery in progress, access timeout recovery -> warn; route unhealthy,
//    an incorrect configuration -> fail (health.fabric_health, label
//    `condition`), the GPU named.
// Multi-node domain (some GPU with a non-zero cluster UUID and no NVSwitch on
// this node's PCI bus, as on a GB200 / GB300 NVL72 compute tray): the IMEX
// daemon must run (a process nvidia-imex under <root>/proc, else FAIL
// health.imex_down) and its node list (<root>/etc/nvidia-imex/nodes_config.cfg:
// one address a line; the IMEX domain) must be readable (else WARN
// health.imex_config); measures imex_running and imex_domain_nodes.
// Could not run: the probe failed (no NVML) with NVIDIA GPUs on the PCI bus,
// or no GPU answered the fabric query on a node with NVLinks or NVSwitches ->
// health.nvlink_fabric_not_measured (not_measured, with the reason), never a
// pass. A node without NVIDIA GPUs gets nothing: there is no fabric to join.
#ifndef CMAX_BENCHMARKS_HEALTH_FABRIC_DOMAIN_H_
#define CMAX_BENCHMARKS_HEALTH_FABRIC_DOMAIN_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/health/gpu_probe.h"
#include "benchmarks/health/health_result.h"
#include "benchmarks/health/nvlink_platforms.h"
#include "common/sysroot.h"

namespace cmax::health {

// NVIDIA's IMEX service for NVLink networks, as seen under a system root.
struct ImexState {
  std::optional<int> pid;  // the running nvidia-imex, if any
  // The addresses in nodes_config.cfg (comments and blank lines dropped);
  // nullopt when the file is not readable, then `config_error` says why.
  std::optional<std::vector<std::string>> nodes;
  std::string config_error;
};

inline constexpr char kImexNodesConfig[] = "/etc/nvidia-imex/nodes_config.cfg";

ImexState ReadImex(const Sysroot& root);

// True for "", and for a UUID of zeros only (no multi-node domain).
bool IsZeroClusterUuid(const std::string& uuid);

// `switches`: NVSwitch PCI addresses on this node (ListNvSwitches);
// `pci_gpus`: NVIDIA GPUs on its PCI bus (ListNvidiaGpus).
void CheckFabricDomain(const std::vector<std::string>& switches, size_t pci_gpus,
                       const absl::StatusOr<GpuInventory>& gpus, const ImexState& imex,
                       const NvLinkPlatforms& platforms, HealthResult* r);

// Inventory facts naming the node's NVLink domain: nvlink_domain = the
// cluster UUID(s) of its registered GPUs, nvlink_clique = their clique
// id(s), each a comma-separated list of the distinct values in GPU order.
// Empty when no GPU reports a non-zero cluster UUID.
std::map<std::string, std::string> FabricInventoryFacts(const GpuInventory& inv);

// FabricInventoryFacts of the GPUs under `root`, asked only where a
// multi-node NVLink domain can be: NVIDIA GPUs on the PCI bus and no NVSwitch
// on it (HGX boards with their own NVSwitches are a domain of one node, and
// their NVML initialisation is not worth the inventory's time). The GPUs come
// from the fixture's cmax-fixture/gpus.yaml where it has one, else NVML
// (fabric query only) on the real root. A probe that fails gives no facts
// (no guess).
std::map<std::string, std::string> ProbeFabricInventoryFacts(const Sysroot& root);

}  // namespace cmax::health

#endif  // CMAX_BENCHMARKS_HEALTH_FABRIC_DOMAIN_H_
