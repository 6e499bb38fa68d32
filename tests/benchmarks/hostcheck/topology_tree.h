// Builds a sysfs-shaped tree from a compact topology description
// (tests/fixtures/hostcheck/topology/*.topo; the line format and the source
// of every file's format are in that folder's README.md).
#ifndef CMAX_TESTS_BENCHMARKS_HOSTCHECK_TOPOLOGY_TREE_H_
#define CMAX_TESTS_BENCHMARKS_HOSTCHECK_TOPOLOGY_TREE_H_

#include <catch2/catch.hpp>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace cmax::testing {

struct TopologyTreeOptions {
  // Write every config file as its first 64 bytes, what a non-root reader gets.
  bool header_only_config = false;
};

inline std::string TopologyFixture(const std::string& name) {
  return std::string(CMAX_SOURCE_DIR) + "/tests/fixtures/hostcheck/topology/" + name +
         ".topo";
}

namespace topology_tree_internal {

namespace fs = std::filesystem;

inline void WriteText(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

// A relative symlink at `link` to `target` (both under the tree), the way
// sysfs links are relative.
inline void Link(const fs::path& link, const fs::path& target) {
  fs::create_directories(link.parent_path());
  fs::create_directories(target);
  fs::create_symlink(fs::relative(target, link.parent_path()), link);
}

inline void Put16(std::string* s, size_t off, uint16_t v) {
  (*s)[off] = static_cast<char>(v & 0xff);
  (*s)[off + 1] = static_cast<char>(v >> 8);
}
inline void Put32(std::string* s, size_t off, uint32_t v) {
  for (int i = 0; i < 4; ++i) (*s)[off + i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

// 4096 bytes of a type-1 (bridge) configuration space: AER at 0x100, then
// ACS at 0x148 when `acs` is set (PCIe Base Spec extended capability header:
// id bits 15:0, version 19:16, next pointer 31:20).
inline std::string BridgeConfig(uint16_t vendor, uint16_t device, bool has_acs,
                                uint16_t acs) {
  std::string c(4096, '\0');
  Put16(&c, 0x00, vendor);
  Put16(&c, 0x02, device);
  c[0x0b] = 0x06;  // class: bridge
  c[0x0a] = 0x04;  // subclass: PCI-to-PCI
  c[0x0e] = 0x01;  // header type 1
  Put32(&c, 0x100, 0x0001 | (2u << 16) | ((has_acs ? 0x148u : 0u) << 20));  // AER v2
  if (has_acs) {
    Put32(&c, 0x148, 0x000d | (1u << 16));  // ACS v1, last in the list
    Put16(&c, 0x14c, 0x005f);               // ACS Capability: SV TB RR CR UF (EC) DT
    Put16(&c, 0x14e, acs);                  // ACS Control
  }
  return c;
}

inline std::string RateText(const std::string& gbps) {
  // drivers/infiniband/core/sysfs.c rate_show: "%d%s Gb/sec (%dX%s)".
  static const std::map<std::string, std::string> kNames = {
      {"400", "400 Gb/sec (4X NDR)"},
      {"200", "200 Gb/sec (4X HDR)"},
      {"100", "100 Gb/sec (4X EDR)"},
      {"800", "800 Gb/sec (4X XDR)"}};
  auto it = kNames.find(gbps);
  return it == kNames.end() ? gbps + " Gb/sec (4X)" : it->second;
}

}  // namespace topology_tree_internal

// Builds `description` (a .topo file) under `root`. Fails the test on a
// malformed line.
inline void BuildTopologyTree(const std::string& description, const std::string& root,
                              const TopologyTreeOptions& options = {}) {
  namespace fs = std::filesystem;
  using namespace topology_tree_internal;
  std::ifstream in(description);
  REQUIRE(in.good());
  const fs::path r(root);
  const fs::path devices = r / "sys/devices";
  const fs::path bus = r / "sys/bus/pci/devices";
  fs::create_directories(bus);
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    absl::string_view text = absl::StripAsciiWhitespace(line);
    if (text.empty() || text[0] == '#') continue;
    std::vector<std::string> w = absl::StrSplit(text, ' ', absl::SkipEmpty());
    INFO(description << ":" << lineno << ": " << line);
    const std::string& kind = w[0];
    if (kind == "file") {
      REQUIRE(w.size() >= 2);
      absl::string_view rest = text.substr(text.find(w[1]) + w[1].size());
      WriteText(r / w[1].substr(1), std::string(absl::StripAsciiWhitespace(rest)) + "\n");
      continue;
    }
    if (kind == "iommu") {
      REQUIRE(w.size() == 2);
      fs::create_directories(r / "sys/class/iommu" / w[1]);
      continue;
    }
    if (kind == "iommu_group") {
      REQUIRE(w.size() >= 3);
      const fs::path group = r / "sys/kernel/iommu_groups" / w[1];
      WriteText(group / "type", w[2] + "\n");
      for (size_t i = 3; i < w.size(); ++i) {
        const fs::path dev = fs::canonical(bus / w[i]);
        Link(group / "devices" / w[i], dev);
        Link(dev / "iommu_group", group);
      }
      continue;
    }
    REQUIRE((kind == "bridge" || kind == "gpu" || kind == "nic"));
    size_t at = 1;
    std::string nic_name;
    if (kind == "nic") nic_name = w[at++];
    REQUIRE(w.size() > at);
    const std::string path = w[at++];
    std::map<std::string, std::string> kv;
    for (; at < w.size(); ++at) {
      std::pair<std::string, std::string> p =
          absl::StrSplit(w[at], absl::MaxSplits('=', 1));
      if (!p.second.empty()) kv[p.first] = p.second;  // bare words are notes
    }
    auto get = [&](const std::string& k, const std::string& d) {
      auto it = kv.find(k);
      return it == kv.end() ? d : it->second;
    };
    const fs::path dir = devices / path;
    const std::string bdf = dir.filename().string();
    fs::create_directories(dir);
    std::string vendor = "0x1000", device = "0xc030",
                cls = "0x060400";  // PEX890xx switch port
    if (kind == "gpu") vendor = "0x10de", device = "0x2330", cls = "0x030200";
    if (kind == "nic") vendor = "0x15b3", device = "0x1021", cls = "0x020700";
    WriteText(dir / "vendor", vendor + "\n");
    WriteText(dir / "device", device + "\n");
    WriteText(dir / "class", cls + "\n");
    WriteText(dir / "numa_node", get("numa", "-1") + "\n");
    const std::string speed = get("speed", "32.0") + " GT/s PCIe";
    WriteText(dir / "current_link_speed", speed + "\n");
    WriteText(dir / "max_link_speed", "32.0 GT/s PCIe\n");
    WriteText(dir / "current_link_width", get("width", "16") + "\n");
    WriteText(dir / "max_link_width", "16\n");
    if (kind == "bridge") {
      uint32_t acs = 0;
      const bool has_acs = kv.count("acs") > 0;
      if (has_acs) REQUIRE(absl::SimpleHexAtoi(kv["acs"], &acs));
      std::string config =
          BridgeConfig(0x1000, 0xc030, has_acs, static_cast<uint16_t>(acs));
      if (options.header_only_config) config.resize(64);
      WriteText(dir / "config", config);
    }
    Link(bus / bdf, dir);
    if (kind == "nic") {
      const fs::path ib = dir / "infiniband" / nic_name;
      Link(ib / "device", dir);
      Link(r / "sys/class/infiniband" / nic_name, ib);
      WriteText(ib / "ports/1/state", "4: ACTIVE\n");
      WriteText(ib / "ports/1/rate", RateText(get("rate", "400")) + "\n");
      WriteText(ib / "ports/1/link_layer", get("layer", "InfiniBand") + "\n");
      if (kv.count("netdev")) fs::create_directories(dir / "net" / kv["netdev"]);
    }
  }
}

}  // namespace cmax::testing

#endif  // CMAX_TESTS_BENCHMARKS_HOSTCHECK_TOPOLOGY_TREE_H_
