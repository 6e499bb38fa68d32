// GPU–NIC topology of one node, read from sysfs under a Sysroot (issue 20,
// item 1): each NVIDIA GPU's PCIe path (the chain of upstream bridges), the
// RDMA NICs (ports, link layer, rate, NUMA node), which NIC shares a PCIe
// switch with which GPU, the ACS state of the bridges between them, and the
// IOMMU mode. No NVML: everything comes from files, so fixture trees stand in
// for a node (tests/fixtures/hostcheck/topology/).
//
// Formats (cited where parsed):
//  - /sys/bus/pci/devices/<bdf>: a symlink into /sys/devices/pci<domain>:<bus>/
//    <root port>/<bridge>/.../<bdf> (Documentation/ABI/testing/sysfs-bus-pci,
//    Documentation/PCI/sysfs-pci.rst). The directories between the host
//    bridge and the device are its upstream bridges, root port first.
//  - current_link_speed / max_link_speed: "32.0 GT/s PCIe" (pci_speed_string()
//    in drivers/pci/probe.c, printed by drivers/pci/pci-sysfs.c; older kernels
//    print "8 GT/s"), "Unknown" when the link is down.
//    current_link_width / max_link_width: a decimal lane count ("16").
//  - /sys/class/infiniband/<dev>/device: the PCI function;
//    ports/<n>/state "4: ACTIVE", rate "400 Gb/sec (4X NDR)", link_layer
//    "InfiniBand" or "Ethernet" (Documentation/ABI/stable/sysfs-class-infiniband).
//  - numa_node: a decimal, -1 when the platform gives none (sysfs-bus-pci).
//  - config: the device's configuration space; 4096 bytes for PCIe when read
//    by root, only the first 64 bytes otherwise (pci_read_config() in
//    drivers/pci/pci-sysfs.c checks CAP_SYS_ADMIN).
//  - /sys/kernel/iommu_groups/<n>/type: "identity", "DMA", "DMA-FQ", "blocked"
//    (Documentation/ABI/testing/sysfs-kernel-iommu_groups).
#ifndef CMAX_BENCHMARKS_HOSTCHECK_TOPOLOGY_H_
#define CMAX_BENCHMARKS_HOSTCHECK_TOPOLOGY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "benchmarks/hostcheck/host_facts.h"
#include "common/sysroot.h"

namespace cmax::bench::hostcheck {

// The PCIe link of one function; 0 where the file is absent or "Unknown".
struct PcieLink {
  double speed_gts = 0;  // current_link_speed in GT/s
  int width = 0;         // current_link_width in lanes
  double max_speed_gts = 0;
  int max_width = 0;
  // max_link_speed or max_link_width exists. Linux creates them only for PCI
  // Express functions (drivers/pci/pci-sysfs.c), so a function without them
  // describes no PCIe link: never a slow one.
  bool described = false;
};

// Where a PCI function sits.
struct PciPlace {
  std::string bdf;          // "0000:18:00.0"
  std::string host_bridge;  // "pci0000:15"; empty when the path is unknown
  // Upstream bridges, root port first, the device's parent last. Empty with
  // path_known for a device directly on the host bridge.
  std::vector<std::string> upstream;
  bool path_known = false;  // /sys/bus/pci/devices/<bdf> resolved into /sys/devices
  std::string path;         // the resolved path from "pci0000:15/..." on
  PcieLink link;
  int numa_node = -1;
  uint32_t vendor = 0, device = 0;
};

struct RdmaPort {
  int port = 0;
  std::string state;       // "4: ACTIVE"
  std::string rate;        // "400 Gb/sec (4X NDR)"
  double rate_gbps = 0;    // 400; 0 when unreadable
  std::string link_layer;  // "InfiniBand", "Ethernet"
  bool active() const;
};

struct RdmaNic {
  std::string name;  // "mlx5_0"
  PciPlace pci;      // pci.bdf empty when `device` is no PCI function
  std::vector<RdmaPort> ports;
  std::vector<std::string> netdevs;  // device/net/*, e.g. "ibp24s0"
};

enum class IommuMode { kOff, kPassthrough, kTranslated, kUnknown };
const char* IommuModeName(IommuMode mode);

struct IommuInfo {
  IommuMode mode = IommuMode::kUnknown;
  std::string how;  // the files and values it was decided from
};

struct Topology {
  std::vector<PciGpu> gpus;         // ReadNvidiaGpus order
  std::vector<PciPlace> gpu_pci;    // same order
  bool rdma_class_present = false;  // /sys/class/infiniband exists
  std::vector<RdmaNic> nics;        // by name
  IommuInfo iommu;
};

// ---- parsers (pure) ----

// "32.0 GT/s PCIe", "8 GT/s", "2.5 GT/s PCIe" -> GT/s; nullopt for "Unknown"
// or anything else.
std::optional<double> ParseLinkSpeed(absl::string_view text);
// "400 Gb/sec (4X NDR)" -> 400; nullopt when malformed.
std::optional<double> ParseIbRate(absl::string_view text);
// A resolved sysfs path ".../devices/pci0000:15/0000:15:01.0/0000:16:00.0" ->
// host bridge "pci0000:15" and the functions below it in order (the device
// last). False when there is no pci<domain>:<bus> component.
bool ParsePciPath(absl::string_view path, std::string* host_bridge,
                  std::vector<std::string>* functions);
// True for "dddd:bb:dd.f" in hex.
bool IsBdf(absl::string_view name);

// The ACS Control register of a configuration space image: the extended
// capability list from offset 0x100 is walked for capability id 0x000d (ACS);
// the control register is at +6 (PCI Express Base Specification, "ACS
// Extended Capability"; Linux include/uapi/linux/pci_regs.h PCI_EXT_CAP_ID_ACS
// = 0x0d, PCI_ACS_CTRL = 0x06). nullopt: the device has no ACS capability
// (also a 256-byte image: conventional PCI, no extended space).
// FAILED_PRECONDITION when the image is shorter than 256 bytes (read without
// root, only the header is visible); INVALID_ARGUMENT for a looping or
// out-of-range list.
absl::StatusOr<std::optional<uint16_t>> ParseAcsControl(absl::string_view config);

// ACS Control bits (pci_regs.h PCI_ACS_SV .. PCI_ACS_DT).
inline constexpr uint16_t kAcsSrcValid = 1 << 0;
inline constexpr uint16_t kAcsTransBlk = 1 << 1;
inline constexpr uint16_t kAcsReqRedir = 1 << 2;
inline constexpr uint16_t kAcsCmpltRedir = 1 << 3;
inline constexpr uint16_t kAcsUpstreamFwd = 1 << 4;
inline constexpr uint16_t kAcsEgressCtrl = 1 << 5;
inline constexpr uint16_t kAcsDirectTrans = 1 << 6;
// "SrcValid+ TransBlk- ReqRedir+ ..." the way lspci prints ACSCtl.
std::string DescribeAcsControl(uint16_t ctrl);

// ---- readers ----

// Where /sys/bus/pci/devices/<bdf> is, its link, NUMA node and ids.
PciPlace ReadPciPlace(const Sysroot& root, const std::string& bdf);

// GPUs (ReadNvidiaGpus), RDMA NICs under /sys/class/infiniband, IOMMU mode.
// NOT_FOUND when /sys/bus/pci/devices does not exist.
absl::StatusOr<Topology> ReadTopology(const Sysroot& root);

// /sys/bus/pci/devices/<bdf>/config through ParseAcsControl; NOT_FOUND when
// the file is absent, PERMISSION_DENIED when unreadable, FAILED_PRECONDITION
// when only the header could be read (not root).
absl::StatusOr<std::optional<uint16_t>> ReadAcsControl(const Sysroot& root,
                                                       const std::string& bdf);

// IOMMU mode: the iommu group type of the RDMA NICs (device/iommu_group/type)
// where readable, else of every group under /sys/kernel/iommu_groups; no
// IOMMU registered under /sys/class/iommu and no groups: off; /proc/cmdline
// (iommu=pt, iommu.passthrough=1, intel_iommu=on, amd_iommu=...) as evidence
// and as the answer when no group type is readable.
IommuInfo ReadIommu(const Sysroot& root, const std::vector<RdmaNic>& nics);

// ---- analysis (pure) ----

// The NIC paired with one GPU: among the RDMA NICs with a known path, the one
// whose deepest common upstream bridge with the GPU is deepest; ties go to the
// NIC on the GPU's NUMA node, then the one paired with fewer GPUs so far, then
// the name.
struct GpuNicPair {
  std::string gpu_bdf;
  const RdmaNic* nic = nullptr;  // nullptr: no NIC with a known path
  // The deepest common upstream bridge is below the root port, i.e. inside a
  // PCIe switch (a root port is a port of the CPU's root complex).
  bool shared_switch = false;
  std::string common_bridge;  // empty when they share no bridge
  // Bridges a peer-to-peer transfer between them crosses: the common bridge
  // and everything below it on both sides (only when shared_switch).
  std::vector<std::string> bridges_between;
  int gpu_numa = -1;
};

// One pair a GPU, in `t.gpus` order. REQUIRES every GPU's path is known.
std::vector<GpuNicPair> PairGpusWithNics(const Topology& t);

// "0000:18:00.0=mlx5_0,0000:1a:00.0=mlx5_1": the inventory fact gpu_nic_map;
// a GPU without a NIC maps to "none".
std::string GpuNicMapFact(const std::vector<GpuNicPair>& pairs);

}  // namespace cmax::bench::hostcheck

#endif  // CMAX_BENCHMARKS_HOSTCHECK_TOPOLOGY_H_
