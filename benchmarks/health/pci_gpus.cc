#include "benchmarks/health/pci_gpus.h"

#include <initializer_list>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "benchmarks/health/kernel_log.h"

namespace cmax::health {

namespace {

// Sysfs names of NVIDIA PCI devices whose class starts with one of `classes`
// ("0x0302"), sorted by address.
std::vector<std::string> NvidiaDevices(const Sysroot& root,
                                       std::initializer_list<const char*> classes) {
  std::vector<std::string> out;
  for (const std::string& name : root.List("/sys/bus/pci/devices")) {  // sorted by address
    std::string dir = "/sys/bus/pci/devices/" + name;
    auto vendor = root.ReadLine(dir + "/vendor");
    auto cls = root.ReadLine(dir + "/class");
    if (!vendor || !cls) continue;
    if (absl::AsciiStrToLower(*vendor) != "0x10de") continue;
    std::string c = absl::AsciiStrToLower(*cls);
    for (const char* prefix : classes) {
      if (absl::StartsWith(c, prefix)) {
        out.push_back(name);
        break;
      }
    }
  }
  return out;
}

}  // namespace

std::vector<std::string> ListNvSwitches(const Sysroot& root) {
  return NvidiaDevices(root, {"0x0680"});
}

std::vector<PciGpu> ListNvidiaGpus(const Sysroot& root) {
  std::vector<PciGpu> out;
  for (const std::string& name : NvidiaDevices(root, {"0x0300", "0x0302"})) {
    PciGpu g;
    g.index = static_cast<int>(out.size());
    g.address = name;
    g.pci = NormalizePciAddress(name);
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace cmax::health
