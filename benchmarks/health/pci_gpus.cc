#include "benchmarks/health/pci_gpus.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "benchmarks/health/kernel_log.h"

namespace cmax::health {

std::vector<PciGpu> ListNvidiaGpus(const Sysroot& root) {
  std::vector<PciGpu> out;
  for (const std::string& name : root.List("/sys/bus/pci/devices")) {  // sorted by address
    std::string dir = "/sys/bus/pci/devices/" + name;
    auto vendor = root.ReadLine(dir + "/vendor");
    auto cls = root.ReadLine(dir + "/class");
    if (!vendor || !cls) continue;
    if (absl::AsciiStrToLower(*vendor) != "0x10de") continue;
    std::string c = absl::AsciiStrToLower(*cls);
    if (!absl::StartsWith(c, "0x0300") && !absl::StartsWith(c, "0x0302")) continue;
    PciGpu g;
    g.index = static_cast<int>(out.size());
    g.address = name;
    g.pci = NormalizePciAddress(name);
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace cmax::health
