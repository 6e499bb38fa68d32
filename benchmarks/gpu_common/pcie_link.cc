#include "benchmarks/gpu_common/pcie_link.h"

#include <sys/stat.h>

#include <fstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"

namespace cmax::bench {
namespace {

struct GenRow {
  double gts;         // transfers per second per lane, in GT/s
  double efficiency;  // payload bits per line bit
};

// Index = generation (pcie_link.h has the sources).
constexpr GenRow kGens[] = {
    {0, 0},                    // unused
    {2.5, 8.0 / 10.0},         // gen 1, 8b/10b
    {5.0, 8.0 / 10.0},         // gen 2, 8b/10b
    {8.0, 128.0 / 130.0},      // gen 3, 128b/130b
    {16.0, 128.0 / 130.0},     // gen 4
    {32.0, 128.0 / 130.0},     // gen 5
    {64.0, 242.0 / 256.0},     // gen 6, FLIT mode
};
constexpr int kMaxGen = 6;

// The first line of a file, trimmed; false when it cannot be read.
bool ReadLine(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return false;
  std::string line;
  std::getline(in, line);
  *out = std::string(absl::StripAsciiWhitespace(line));
  return true;
}

}  // namespace

int PcieGenFromSpeed(absl::string_view sysfs_speed) {
  absl::string_view s = absl::StripAsciiWhitespace(sysfs_speed);
  s = absl::StripSuffix(s, "PCIe");
  s = absl::StripAsciiWhitespace(s);
  if (!absl::ConsumeSuffix(&s, "GT/s")) return 0;
  double gts = 0;
  if (!absl::SimpleAtod(absl::StripAsciiWhitespace(s), &gts)) return 0;
  for (int g = 1; g <= kMaxGen; ++g) {
    if (gts > kGens[g].gts - 0.05 && gts < kGens[g].gts + 0.05) return g;
  }
  return 0;
}

double PcieGbPerDirection(int gen, int width) {
  if (gen < 1 || gen > kMaxGen || width < 1) return 0;
  return kGens[gen].gts * kGens[gen].efficiency * width / 8.0;
}

absl::StatusOr<PcieLink> ReadPcieLink(const std::string& root, const std::string& bdf) {
  std::string base = root;
  while (!base.empty() && base.back() == '/') base.pop_back();
  const std::string dir = absl::StrCat(base, "/sys/bus/pci/devices/", bdf, "/");
  std::string speed, width;
  if (!ReadLine(dir + "max_link_speed", &speed) || !ReadLine(dir + "max_link_width", &width)) {
    return absl::NotFoundError(
        absl::StrCat(dir, "max_link_speed / max_link_width not readable: no PCIe link is "
                          "described for ", bdf));
  }
  PcieLink link;
  link.gen = PcieGenFromSpeed(speed);
  if (link.gen == 0 || !absl::SimpleAtoi(width, &link.width) || link.width < 1) {
    return absl::InvalidArgumentError(absl::StrCat(dir, "max_link_speed '", speed,
                                                   "', max_link_width '", width,
                                                   "': not a PCIe rate and lane count"));
  }
  link.gbps = PcieGbPerDirection(link.gen, link.width);
  std::string cur_speed, cur_width;
  if (ReadLine(dir + "current_link_speed", &cur_speed) &&
      ReadLine(dir + "current_link_width", &cur_width)) {
    link.current = absl::StrCat(cur_speed, " x", cur_width);
  }
  return link;
}

HostLink ReadHostLink(const std::string& root, const std::string& bdf) {
  HostLink out;
  absl::StatusOr<PcieLink> link = ReadPcieLink(root, bdf);
  if (link.ok()) {
    out.kind = HostLinkKind::kPcie;
    out.pcie = *link;
    return out;
  }
  std::string base = root;
  while (!base.empty() && base.back() == '/') base.pop_back();
  const std::string dir = absl::StrCat(base, "/sys/bus/pci/devices/", bdf);
  struct stat st;
  if (absl::IsNotFound(link.status()) && stat(dir.c_str(), &st) == 0 &&
      S_ISDIR(st.st_mode)) {
    out.kind = HostLinkKind::kNotPcie;
    out.why = absl::StrCat(dir,
                           " has no max_link_speed/max_link_width: not a PCIe link "
                           "(a GPU on NVLink-C2C to a Grace CPU)");
    return out;
  }
  out.kind = HostLinkKind::kUnknown;
  out.why = std::string(link.status().message());
  return out;
}

std::map<std::string, std::string> HostLinkLabels(const HostLink& link) {
  std::map<std::string, std::string> labels;
  switch (link.kind) {
    case HostLinkKind::kPcie:
      labels["host_link"] = "pcie";
      labels["pcie_gen"] = absl::StrCat(link.pcie.gen);
      labels["pcie_width"] = absl::StrCat(link.pcie.width);
      labels["pcie_gbps"] = absl::StrFormat("%.2f", link.pcie.gbps);
      if (!link.pcie.current.empty()) labels["pcie_current"] = link.pcie.current;
      break;
    case HostLinkKind::kNotPcie:
      labels["host_link"] = "not_pcie";
      labels["host_link_note"] = link.why;
      break;
    case HostLinkKind::kUnknown:
      labels["host_link"] = "unknown";
      labels["host_link_note"] = link.why;
      break;
  }
  return labels;
}

}  // namespace cmax::bench
