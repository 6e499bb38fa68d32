// NVIDIA GPUs on the PCI bus, from <root>/sys/bus/pci/devices: vendor 0x10de
// with class 0x0300xx (VGA) or 0x0302xx (3D controller); NVSwitches (bridge
// class 0x0680xx, ListNvSwitches) are not GPUs. Indexed in PCI bus order, which is the order
// NVML and CUDA (with CUDA_DEVICE_ORDER=PCI_BUS_ID) use.
#ifndef CMAX_BENCHMARKS_HEALTH_PCI_GPUS_H_
#define CMAX_BENCHMARKS_HEALTH_PCI_GPUS_H_

#include <string>
#include <vector>

#include "common/sysroot.h"

namespace cmax::health {

struct PciGpu {
  int index = -1;
  std::string address;  // sysfs name, "0000:18:00.0"
  std::string pci;      // normalised "0000:18:00" (kernel_log.h)
};

std::vector<PciGpu> ListNvidiaGpus(const Sysroot& root);

// NVSwitches on the PCI bus: vendor 0x10de with class 0x0680xx ("other
// bridge"; lspci shows "Bridge: NVIDIA Corporation GH100 [H100 NVSwitch]").
// Their sysfs names ("0000:05:00.0"), sorted. NVL72 compute trays do not see
// their switches (they sit in separate switch trays).
std::vector<std::string> ListNvSwitches(const Sysroot& root);

}  // namespace cmax::health

#endif  // CMAX_BENCHMARKS_HEALTH_PCI_GPUS_H_
