// A GPU's PCIe link as Linux describes it in sysfs, and the data rate it
// allows per direction: what the memory suite's host<->device copies are
// held to (validate.sh takes a fraction of it, never a figure for one card).
//
// Sources: Linux Documentation/ABI/testing/sysfs-bus-pci (max_link_speed,
// max_link_width, current_link_speed, current_link_width: "32.0 GT/s PCIe",
// "16"); PCI-SIG base specifications for the rates and encodings: 2.5 and
// 5 GT/s with 8b/10b (gen 1, 2), 8, 16 and 32 GT/s with 128b/130b (gen 3,
// 4, 5), 64 GT/s in FLIT mode (gen 6: 242 of a FLIT's 256 bytes are TLP and
// DLLP bytes; 236 of them are TLP bytes).
//
// The max_* files are the device's own capability; the current_* ones may
// read a lower speed while the GPU idles (it lowers the link to save
// power), so the rate is taken from max_*, and a link that trained lower
// than that shows as a slow copy.
#ifndef CMAX_BENCHMARKS_GPU_COMMON_PCIE_LINK_H_
#define CMAX_BENCHMARKS_GPU_COMMON_PCIE_LINK_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace cmax::bench {

// 1..6 for "2.5 GT/s" .. "64.0 GT/s" (with or without " PCIe"); 0 for text
// this table does not know ("Unknown", empty, another rate).
int PcieGenFromSpeed(absl::string_view sysfs_speed);

// GB/s (1e9 bytes/s) one direction of a link of `gen` and `width` lanes
// carries after line encoding; 0 for an unknown gen or a width below 1.
double PcieGbPerDirection(int gen, int width);

struct PcieLink {
  int gen = 0;             // from max_link_speed
  int width = 0;           // from max_link_width
  double gbps = 0;         // PcieGbPerDirection(gen, width)
  std::string current;     // "16.0 GT/s PCIe x16" (current_*), for evidence; may be empty
};

// Reads <root>/sys/bus/pci/devices/<bdf>/{max,current}_link_{speed,width}
// (`root` "" or "/" for the host). NOT_FOUND when the device or its max_*
// files are missing (a GPU on NVLink-C2C has no PCIe link to the host CPU
// that these describe); INVALID_ARGUMENT for text this file cannot read.
absl::StatusOr<PcieLink> ReadPcieLink(const std::string& root, const std::string& bdf);

// How a GPU reaches its host, for the records of host<->device copies.
enum class HostLinkKind {
  kPcie,     // ReadPcieLink read a link
  kNotPcie,  // no PCIe link: a GPU on NVLink-C2C to a Grace CPU
  kUnknown,  // no such device, or link files this reader cannot read
};
struct HostLink {
  HostLinkKind kind = HostLinkKind::kUnknown;
  PcieLink pcie;    // kPcie only
  std::string why;  // kNotPcie, kUnknown: what was found
};

// kPcie with the link; kNotPcie when <root>/sys/bus/pci/devices/<bdf>
// exists without max_link_speed/max_link_width (Linux creates them only for
// PCI Express functions, drivers/pci/pci-sysfs.c); kUnknown otherwise.
HostLink ReadHostLink(const std::string& root, const std::string& bdf);

// Labels for a measurement over that link: host_link "pcie" with pcie_gen,
// pcie_width, pcie_gbps ("%.2f") and pcie_current (when read); host_link
// "not_pcie" or "unknown" with host_link_note (`why`) and no pcie_* label,
// so no PCIe floor is applied to the copy (benchmarks/cuda/validate.sh says
// "no figure" instead).
std::map<std::string, std::string> HostLinkLabels(const HostLink& link);

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_GPU_COMMON_PCIE_LINK_H_
