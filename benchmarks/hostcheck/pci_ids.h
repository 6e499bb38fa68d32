// Names of NVIDIA data-centre GPUs by PCI device id (vendor 0x10de).
//
// The names come from the PCI ID Repository (https://pci-ids.ucw.cz/, the
// pci.ids file of github.com/pciutils/pciids, version 2026.05.24): the text in
// brackets after the chip name, prefixed with "NVIDIA". Only GPUs that
// evaluation clusters use are listed; anything else is named by its id.
#ifndef CMAX_BENCHMARKS_HOSTCHECK_PCI_IDS_H_
#define CMAX_BENCHMARKS_HOSTCHECK_PCI_IDS_H_

#include <cstdint>
#include <string>

namespace cmax::bench::hostcheck {

inline constexpr uint32_t kNvidiaVendorId = 0x10de;

// "NVIDIA H100 SXM5 80GB" for 0x2330; "NVIDIA device 0x2335"-style text
// (four lower-case hex digits) for an id not in the table.
std::string NvidiaGpuModel(uint32_t device_id);

// True when the id is in the table (the name is not a fallback).
bool IsKnownNvidiaGpu(uint32_t device_id);

// True for the GPUs of a Grace superchip, which reach their host CPU over
// NVLink-C2C, not PCIe: GH200 (0x2342, 0x2348) and GB200 (0x2941). Sources:
// the NVIDIA GH200 Grace Hopper Superchip and GB200 NVL72 datasheets
// (NVLink-C2C, 900 GB/s, between Grace and its GPUs; the facts
// reports/gpu_specs.cc records as a host link that is not PCIe).
bool IsNvlinkC2cGpu(uint32_t device_id);

}  // namespace cmax::bench::hostcheck

#endif  // CMAX_BENCHMARKS_HOSTCHECK_PCI_IDS_H_
