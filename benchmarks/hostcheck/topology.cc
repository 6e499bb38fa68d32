#include "benchmarks/hostcheck/topology.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace cmax::bench::hostcheck {
namespace {

namespace fs = std::filesystem;

constexpr char kPciDevices[] = "/sys/bus/pci/devices";
constexpr char kInfiniband[] = "/sys/class/infiniband";
constexpr char kIommuClass[] = "/sys/class/iommu";
constexpr char kIommuGroups[] = "/sys/kernel/iommu_groups";

// Extended capabilities start at 0x100 (PCIe Base Spec, "PCI Express Extended
// Capabilities"; pci_regs.h PCI_CFG_SPACE_SIZE = 256).
constexpr size_t kExtCapStart = 0x100;
constexpr uint16_t kExtCapIdAcs = 0x000d;  // PCI_EXT_CAP_ID_ACS
constexpr size_t kAcsCtrlOffset = 6;       // PCI_ACS_CTRL

uint32_t Le32(absl::string_view s, size_t off) {
  return static_cast<uint32_t>(static_cast<uint8_t>(s[off])) |
         static_cast<uint32_t>(static_cast<uint8_t>(s[off + 1])) << 8 |
         static_cast<uint32_t>(static_cast<uint8_t>(s[off + 2])) << 16 |
         static_cast<uint32_t>(static_cast<uint8_t>(s[off + 3])) << 24;
}

int ReadInt(const Sysroot& root, const std::string& path, int fallback) {
  int v = fallback;
  if (auto line = root.ReadLine(path)) {
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(*line), &v)) v = fallback;
  }
  return v;
}

double ReadSpeed(const Sysroot& root, const std::string& path) {
  auto line = root.ReadLine(path);
  if (!line) return 0;
  return ParseLinkSpeed(*line).value_or(0);
}

bool IsHostBridge(absl::string_view name) {
  // "pci0000:15": "pci", a 4-digit domain, ':', a 2-digit bus.
  if (!absl::ConsumePrefix(&name, "pci") || name.size() != 7 || name[4] != ':')
    return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (i != 4 && !absl::ascii_isxdigit(name[i])) return false;
  }
  return true;
}

// Length of the common prefix of two upstream chains under one host bridge;
// -1 when the host bridges differ.
int CommonDepth(const PciPlace& a, const PciPlace& b) {
  if (a.host_bridge != b.host_bridge) return -1;
  size_t n = 0;
  while (n < a.upstream.size() && n < b.upstream.size() && a.upstream[n] == b.upstream[n])
    ++n;
  return static_cast<int>(n);
}

}  // namespace

bool RdmaPort::active() const { return absl::StrContains(state, "ACTIVE"); }

const char* IommuModeName(IommuMode mode) {
  switch (mode) {
    case IommuMode::kOff:
      return "off";
    case IommuMode::kPassthrough:
      return "passthrough";
    case IommuMode::kTranslated:
      return "translated";
    case IommuMode::kUnknown:
      break;
  }
  return "unknown";
}

std::optional<double> ParseLinkSpeed(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  std::vector<absl::string_view> words = absl::StrSplit(text, ' ', absl::SkipEmpty());
  if (words.size() < 2 || words[1] != "GT/s") return std::nullopt;
  double v = 0;
  if (!absl::SimpleAtod(words[0], &v) || v <= 0) return std::nullopt;
  return v;
}

std::optional<double> ParseIbRate(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  std::vector<absl::string_view> words = absl::StrSplit(text, ' ', absl::SkipEmpty());
  if (words.size() < 2 || words[1] != "Gb/sec") return std::nullopt;
  double v = 0;
  if (!absl::SimpleAtod(words[0], &v) || v < 0) return std::nullopt;
  return v;
}

bool IsBdf(absl::string_view name) {
  if (name.size() != 12 || name[4] != ':' || name[7] != ':' || name[10] != '.')
    return false;
  for (size_t i = 0; i < name.size(); ++i) {
    if (i == 4 || i == 7 || i == 10) continue;
    if (!absl::ascii_isxdigit(name[i])) return false;
  }
  return true;
}

bool ParsePciPath(absl::string_view path, std::string* host_bridge,
                  std::vector<std::string>* functions) {
  host_bridge->clear();
  functions->clear();
  bool in_tree = false;
  for (absl::string_view part : absl::StrSplit(path, '/', absl::SkipEmpty())) {
    if (!in_tree) {
      if (IsHostBridge(part)) {
        *host_bridge = std::string(part);
        in_tree = true;
      }
      continue;
    }
    if (!IsBdf(part)) break;  // e.g. ".../0000:18:00.0/infiniband/mlx5_0"
    functions->emplace_back(part);
  }
  return in_tree;
}

absl::StatusOr<std::optional<uint16_t>> ParseAcsControl(absl::string_view config) {
  // Exactly 256 bytes: a conventional PCI (or PCI-X mode 1) function, which
  // has no extended configuration space (pci_regs.h PCI_CFG_SPACE_SIZE) and so
  // no ACS capability.
  if (config.size() == kExtCapStart) return std::nullopt;
  if (config.size() < kExtCapStart + 4) {
    return absl::FailedPreconditionError(absl::StrCat(
        "only ", config.size(),
        " bytes of configuration space are readable; the extended capabilities (from "
        "offset 0x100) need root (CAP_SYS_ADMIN)"));
  }
  size_t off = kExtCapStart;
  std::set<size_t> seen;
  while (off != 0) {
    if (off < kExtCapStart || off + 8 > config.size() || (off & 3) != 0) {
      return absl::InvalidArgumentError(absl::StrCat("extended capability pointer 0x",
                                                     absl::Hex(off), " out of range"));
    }
    if (!seen.insert(off).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("extended capability list loops at 0x", absl::Hex(off)));
    }
    uint32_t header = Le32(config, off);
    if (header == 0 || header == 0xffffffff) return std::nullopt;  // no capabilities
    uint16_t id = header & 0xffff;
    if (id == kExtCapIdAcs) {
      uint32_t word = Le32(config, off + 4);  // capability (low), control (high)
      static_assert(kAcsCtrlOffset == 6);
      return static_cast<uint16_t>(word >> 16);
    }
    off = header >> 20;  // PCI_EXT_CAP_NEXT
  }
  return std::nullopt;
}

std::string DescribeAcsControl(uint16_t ctrl) {
  static const std::pair<uint16_t, const char*> kBits[] = {
      {kAcsSrcValid, "SrcValid"},       {kAcsTransBlk, "TransBlk"},
      {kAcsReqRedir, "ReqRedir"},       {kAcsCmpltRedir, "CmpltRedir"},
      {kAcsUpstreamFwd, "UpstreamFwd"}, {kAcsEgressCtrl, "EgressCtrl"},
      {kAcsDirectTrans, "DirectTrans"}};
  std::vector<std::string> parts;
  for (const auto& [bit, name] : kBits)
    parts.push_back(absl::StrCat(name, ctrl & bit ? "+" : "-"));
  return absl::StrJoin(parts, " ");
}

PciPlace ReadPciPlace(const Sysroot& root, const std::string& bdf) {
  PciPlace p;
  p.bdf = bdf;
  const std::string dir = absl::StrCat(kPciDevices, "/", bdf);
  std::error_code ec;
  fs::path real = fs::canonical(root.Path(dir), ec);
  if (!ec) {
    std::vector<std::string> functions;
    if (ParsePciPath(real.string(), &p.host_bridge, &functions) && !functions.empty() &&
        functions.back() == bdf) {
      functions.pop_back();
      p.upstream = std::move(functions);
      p.path_known = true;
      p.path = absl::StrCat(p.host_bridge, p.upstream.empty() ? "" : "/",
                            absl::StrJoin(p.upstream, "/"), "/", bdf);
    } else {
      p.host_bridge.clear();
    }
  }
  p.link.speed_gts = ReadSpeed(root, dir + "/current_link_speed");
  p.link.max_speed_gts = ReadSpeed(root, dir + "/max_link_speed");
  p.link.width = ReadInt(root, dir + "/current_link_width", 0);
  p.link.max_width = ReadInt(root, dir + "/max_link_width", 0);
  p.link.described =
      root.Exists(dir + "/max_link_speed") || root.Exists(dir + "/max_link_width");
  p.numa_node = ReadInt(root, dir + "/numa_node", -1);
  if (auto v = root.ReadLine(dir + "/vendor")) p.vendor = ParseSysfsHex(*v).value_or(0);
  if (auto d = root.ReadLine(dir + "/device")) p.device = ParseSysfsHex(*d).value_or(0);
  return p;
}

absl::StatusOr<std::optional<uint16_t>> ReadAcsControl(const Sysroot& root,
                                                       const std::string& bdf) {
  const std::string path = absl::StrCat(kPciDevices, "/", bdf, "/config");
  absl::StatusOr<std::string> config = root.Read(path);
  if (!config.ok()) return config.status();
  absl::StatusOr<std::optional<uint16_t>> acs = ParseAcsControl(*config);
  if (!acs.ok()) {
    return absl::Status(acs.status().code(),
                        absl::StrCat(root.Path(path), ": ", acs.status().message()));
  }
  return acs;
}

IommuInfo ReadIommu(const Sysroot& root, const std::vector<RdmaNic>& nics) {
  IommuInfo info;
  std::vector<std::string> how;
  std::string cmdline = root.ReadLine("/proc/cmdline").value_or("");
  bool cmd_pt = false, cmd_on = false, cmd_off = false;
  std::vector<std::string> cmd_words;
  for (absl::string_view w : absl::StrSplit(cmdline, ' ', absl::SkipEmpty())) {
    // Documentation/admin-guide/kernel-parameters.txt: iommu=pt|off|...,
    // iommu.passthrough=0|1, intel_iommu=on|off, amd_iommu=on|off|....
    if (w == "iommu=pt" || w == "iommu.passthrough=1") cmd_pt = true;
    if (w == "iommu=off" || w == "intel_iommu=off" || w == "amd_iommu=off")
      cmd_off = true;
    if (w == "intel_iommu=on" || w == "amd_iommu=on" || w == "iommu.passthrough=0" ||
        w == "iommu=force")
      cmd_on = true;
    if (absl::StrContains(w, "iommu")) cmd_words.emplace_back(w);
  }
  if (!cmd_words.empty()) {
    how.push_back(absl::StrCat("/proc/cmdline: ", absl::StrJoin(cmd_words, " ")));
  }

  // Group types: the NICs' own groups first (what RDMA DMA goes through).
  std::map<std::string, int> types;  // type -> groups
  for (const RdmaNic& nic : nics) {
    if (nic.pci.bdf.empty()) continue;
    if (auto t = root.ReadLine(
            absl::StrCat(kPciDevices, "/", nic.pci.bdf, "/iommu_group/type"))) {
      ++types[*t];
    }
  }
  std::string source = "the RDMA NICs' iommu_group/type";
  if (types.empty()) {
    for (const std::string& g : root.List(kIommuGroups)) {
      if (auto t = root.ReadLine(absl::StrCat(kIommuGroups, "/", g, "/type")))
        ++types[*t];
    }
    source = absl::StrCat(kIommuGroups, "/*/type");
  }
  std::vector<std::string> iommus = root.List(kIommuClass);
  if (!types.empty()) {
    std::vector<std::string> counts;
    for (const auto& [t, n] : types) counts.push_back(absl::StrCat(t, " x", n));
    how.insert(how.begin(), absl::StrCat(source, ": ", absl::StrJoin(counts, ", ")));
    if (types.count("DMA") || types.count("DMA-FQ")) {
      info.mode = IommuMode::kTranslated;
    } else if (types.count("identity")) {
      info.mode = IommuMode::kPassthrough;
    }
  } else if (iommus.empty()) {
    info.mode = IommuMode::kOff;
    how.insert(how.begin(),
               absl::StrCat("no IOMMU under ", kIommuClass, " and no iommu groups"));
  } else {
    how.insert(how.begin(), absl::StrCat(kIommuClass, ": ", absl::StrJoin(iommus, ", "),
                                         "; no readable iommu group type"));
    if (cmd_pt) {
      info.mode = IommuMode::kPassthrough;
    } else if (cmd_off) {
      info.mode = IommuMode::kOff;
    } else if (cmd_on) {
      info.mode = IommuMode::kTranslated;
    }
  }
  info.how = absl::StrJoin(how, "; ");
  return info;
}

absl::StatusOr<Topology> ReadTopology(const Sysroot& root) {
  Topology t;
  absl::StatusOr<std::vector<PciGpu>> gpus = ReadNvidiaGpus(root);
  if (!gpus.ok()) return gpus.status();
  t.gpus = *std::move(gpus);
  for (const PciGpu& g : t.gpus) t.gpu_pci.push_back(ReadPciPlace(root, g.bus_id));

  t.rdma_class_present = root.Exists(kInfiniband);
  for (const std::string& name : root.List(kInfiniband)) {
    RdmaNic nic;
    nic.name = name;
    const std::string dir = absl::StrCat(kInfiniband, "/", name);
    std::error_code ec;
    fs::path dev = fs::canonical(root.Path(dir + "/device"), ec);
    if (!ec && IsBdf(dev.filename().string())) {
      nic.pci = ReadPciPlace(root, dev.filename().string());
      nic.netdevs = root.List(dir + "/device/net");
    }
    for (const std::string& p : root.List(dir + "/ports")) {
      RdmaPort port;
      if (!absl::SimpleAtoi(p, &port.port)) continue;
      const std::string pdir = absl::StrCat(dir, "/ports/", p);
      port.state = root.ReadLine(pdir + "/state").value_or("");
      port.rate = root.ReadLine(pdir + "/rate").value_or("");
      port.rate_gbps = ParseIbRate(port.rate).value_or(0);
      port.link_layer = root.ReadLine(pdir + "/link_layer").value_or("");
      nic.ports.push_back(std::move(port));
    }
    std::sort(nic.ports.begin(), nic.ports.end(),
              [](const RdmaPort& a, const RdmaPort& b) { return a.port < b.port; });
    t.nics.push_back(std::move(nic));
  }
  t.iommu = ReadIommu(root, t.nics);
  return t;
}

std::vector<GpuNicPair> PairGpusWithNics(const Topology& t) {
  std::vector<GpuNicPair> pairs;
  std::map<const RdmaNic*, int> uses;
  for (size_t i = 0; i < t.gpus.size(); ++i) {
    const PciPlace& g = t.gpu_pci[i];
    GpuNicPair pair;
    pair.gpu_bdf = t.gpus[i].bus_id;
    pair.gpu_numa = g.numa_node;
    int best_depth = -2;
    for (const RdmaNic& nic : t.nics) {
      if (!nic.pci.path_known) continue;
      int depth = CommonDepth(g, nic.pci);
      bool better = false;
      if (pair.nic == nullptr || depth > best_depth) {
        better = true;
      } else if (depth == best_depth) {
        int u = uses[&nic], bu = uses[pair.nic];
        bool numa = nic.pci.numa_node == g.numa_node;
        bool bnuma = pair.nic->pci.numa_node == g.numa_node;
        // The same NUMA node first (a NIC across the socket crosses the CPU
        // interconnect), then the NIC with fewer GPUs; equal otherwise: the
        // first by name (t.nics is sorted) stays.
        better = (numa && !bnuma) || (numa == bnuma && u < bu);
      }
      if (better) {
        pair.nic = &nic;
        best_depth = depth;
      }
    }
    if (pair.nic != nullptr) {
      ++uses[pair.nic];
      // upstream[0] is the root port: a common bridge below it is a switch port.
      pair.shared_switch = best_depth >= 2;
      if (best_depth >= 1) pair.common_bridge = g.upstream[best_depth - 1];
      if (pair.shared_switch) {
        pair.bridges_between.push_back(pair.common_bridge);
        for (size_t k = best_depth; k < g.upstream.size(); ++k)
          pair.bridges_between.push_back(g.upstream[k]);
        for (size_t k = best_depth; k < pair.nic->pci.upstream.size(); ++k)
          pair.bridges_between.push_back(pair.nic->pci.upstream[k]);
      }
    }
    pairs.push_back(std::move(pair));
  }
  return pairs;
}

std::string GpuNicMapFact(const std::vector<GpuNicPair>& pairs) {
  std::vector<std::string> parts;
  for (const GpuNicPair& p : pairs) {
    parts.push_back(absl::StrCat(p.gpu_bdf, "=", p.nic ? p.nic->name : "none"));
  }
  return absl::StrJoin(parts, ",");
}

}  // namespace cmax::bench::hostcheck
