#include "benchmarks/hostcheck/pci_ids.h"

#include <algorithm>
#include <iterator>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace cmax::bench::hostcheck {
namespace {

struct GpuName {
  uint32_t device_id;
  const char* name;
};

// Sorted by id. Source: pci.ids (PCI ID Repository, pci-ids.ucw.cz), vendor
// 10de, version 2026.05.24; the bracketed name of each device line.
constexpr GpuName kNvidiaGpus[] = {
    {0x1db1, "Tesla V100 SXM2 16GB"},
    {0x1db4, "Tesla V100 PCIe 16GB"},
    {0x1db5, "Tesla V100 SXM2 32GB"},
    {0x1db6, "Tesla V100 PCIe 32GB"},
    {0x1df6, "Tesla V100S PCIe 32GB"},
    {0x1eb8, "Tesla T4"},
    {0x20b0, "A100 SXM4 40GB"},
    {0x20b1, "A100 PCIe 40GB"},
    {0x20b2, "A100 SXM4 80GB"},
    {0x20b3, "A100-SXM-64GB"},
    {0x20b5, "A100 PCIe 80GB"},
    {0x20b7, "A30 PCIe"},
    {0x20bd, "A800 SXM4 40GB"},
    {0x20f1, "A100 PCIe 40GB"},
    {0x20f3, "A800-SXM4-80GB"},
    {0x20f5, "A800 80GB PCIe"},
    {0x2235, "A40"},
    {0x2236, "A10"},
    {0x2237, "A10G"},
    {0x2321, "H100L 94GB"},
    {0x2322, "H800 PCIe"},
    {0x2324, "H800"},
    {0x2329, "H20"},
    {0x232c, "H20 HBM3e"},
    {0x2330, "H100 SXM5 80GB"},
    {0x2331, "H100 PCIe"},
    {0x2335, "H200 SXM 141GB"},
    {0x2336, "H100"},
    {0x2337, "H100 SXM5 64GB"},
    {0x2338, "H100 SXM5 96GB"},
    {0x2339, "H100 SXM5 94GB"},
    {0x233b, "H200 NVL"},
    {0x233d, "H100 96GB"},
    {0x2342, "GH200 120GB / 480GB"},
    {0x2348, "GH200 144G HBM3e"},
    {0x26b5, "L40"},
    {0x26b7, "L20"},
    {0x26b9, "L40S"},
    {0x26ba, "L20"},
    {0x27b8, "L4"},
    {0x2901, "B200"},
    {0x2909, "HGX B200 168GB"},
    {0x2920, "TS4 / B100"},
    {0x2941, "HGX GB200"},
    {0x29bc, "B100"},
    {0x2bb5, "RTX PRO 6000 Blackwell Server Edition"},
};

constexpr bool ById(const GpuName& a, const GpuName& b) {
  return a.device_id < b.device_id;
}
static_assert(std::is_sorted(std::begin(kNvidiaGpus), std::end(kNvidiaGpus), ById),
              "kNvidiaGpus must stay sorted by device id (binary search)");

const GpuName* Lookup(uint32_t device_id) {
  auto it =
      std::lower_bound(std::begin(kNvidiaGpus), std::end(kNvidiaGpus), device_id,
                       [](const GpuName& g, uint32_t id) { return g.device_id < id; });
  if (it == std::end(kNvidiaGpus) || it->device_id != device_id) return nullptr;
  return it;
}

}  // namespace

std::string NvidiaGpuModel(uint32_t device_id) {
  if (const GpuName* g = Lookup(device_id)) return absl::StrCat("NVIDIA ", g->name);
  return absl::StrFormat("NVIDIA device 0x%04x", device_id);
}

bool IsKnownNvidiaGpu(uint32_t device_id) { return Lookup(device_id) != nullptr; }

bool IsNvlinkC2cGpu(uint32_t device_id) {
  return device_id == 0x2342 || device_id == 0x2348 || device_id == 0x2941;
}

}  // namespace cmax::bench::hostcheck
