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

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_GPU_COMMON_PCIE_LINK_H_
