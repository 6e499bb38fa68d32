#include "benchmarks/hostcheck/host_facts.h"

#include <errno.h>
#include <string.h>
#include <sys/statvfs.h>
#include <sys/timex.h>

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "benchmarks/hostcheck/pci_ids.h"
#include "common/status_macros.h"

namespace cmax::bench::hostcheck {
namespace {

constexpr char kPciDevices[] = "/sys/bus/pci/devices";
constexpr char kNvidiaProcVersion[] = "/proc/driver/nvidia/version";
constexpr char kNvidiaModuleVersion[] = "/sys/module/nvidia/version";

bool IsVersionToken(absl::string_view token) {
  if (token.empty() || !absl::ascii_isdigit(token[0])) return false;
  bool dot = false;
  for (char c : token) {
    if (c == '.') {
      dot = true;
    } else if (!absl::ascii_isdigit(c)) {
      return false;
    }
  }
  return dot;
}

}  // namespace

std::optional<uint32_t> ParseSysfsHex(absl::string_view text) {
  text = absl::StripAsciiWhitespace(text);
  if (!absl::ConsumePrefix(&text, "0x")) absl::ConsumePrefix(&text, "0X");
  if (text.empty() || text.size() > 8) return std::nullopt;
  uint32_t value = 0;
  if (!absl::SimpleHexAtoi(text, &value)) return std::nullopt;
  return value;
}

bool IsGpuClass(uint32_t class_code) {
  uint32_t class_subclass = class_code >> 8;
  return class_subclass == 0x0300 || class_subclass == 0x0302;
}

absl::StatusOr<std::vector<PciGpu>> ReadNvidiaGpus(const Sysroot& root) {
  if (!root.Exists(kPciDevices)) {
    return absl::NotFoundError(
        absl::StrCat(root.Path(kPciDevices), ": no such directory"));
  }
  std::vector<PciGpu> gpus;
  // List() is sorted by name; bus ids are fixed-width hex, so this is bus order.
  for (const std::string& bdf : root.List(kPciDevices)) {
    std::string dir = absl::StrCat(kPciDevices, "/", bdf);
    auto vendor = root.ReadLine(dir + "/vendor");
    if (!vendor || ParseSysfsHex(*vendor) != kNvidiaVendorId) continue;
    auto cls_text = root.ReadLine(dir + "/class");
    std::optional<uint32_t> cls = cls_text ? ParseSysfsHex(*cls_text) : std::nullopt;
    if (!cls || !IsGpuClass(*cls)) continue;
    PciGpu gpu;
    gpu.bus_id = bdf;
    gpu.class_code = *cls;
    gpu.model = "NVIDIA device (id unreadable)";
    if (auto dev_text = root.ReadLine(dir + "/device")) {
      if (auto dev = ParseSysfsHex(*dev_text)) {
        gpu.device_id = *dev;
        gpu.model = NvidiaGpuModel(*dev);
      }
    }
    gpus.push_back(std::move(gpu));
  }
  return gpus;
}

absl::StatusOr<std::string> ParseNvrmVersion(absl::string_view text,
                                             bool* open_kernel_module) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::StartsWith(line, "NVRM version:")) continue;
    size_t module = line.find("Kernel Module");
    if (module == absl::string_view::npos) break;
    if (open_kernel_module)
      *open_kernel_module = absl::StrContains(line, "Open Kernel Module");
    absl::string_view rest = line.substr(module + strlen("Kernel Module"));
    // The open module says "for x86_64" before the version; the first token
    // shaped like N.N[.N] is the version in both forms.
    for (absl::string_view token : absl::StrSplit(rest, ' ', absl::SkipEmpty())) {
      if (IsVersionToken(token)) return std::string(token);
    }
    break;
  }
  return absl::InvalidArgumentError(
      "no 'NVRM version: ... Kernel Module <version>' line");
}

DriverInfo ReadDriver(const Sysroot& root) {
  DriverInfo info;
  auto proc = root.Read(kNvidiaProcVersion);
  if (proc.ok()) {
    info.loaded = true;
    bool open = false;
    if (auto v = ParseNvrmVersion(*proc, &open); v.ok()) {
      info.proc_version = *v;
      info.open_kernel_module = open;
    }
  } else if (!absl::IsNotFound(proc.status())) {
    info.loaded = true;  // the driver's proc directory is there, just unreadable
  }
  if (root.Exists("/sys/module/nvidia")) info.loaded = true;
  if (auto v = root.ReadLine(kNvidiaModuleVersion); v && IsVersionToken(*v)) {
    info.module_version = *v;
  }
  if (!info.proc_version.empty()) {
    info.version = info.proc_version;
    info.source = kNvidiaProcVersion;
  } else if (!info.module_version.empty()) {
    info.version = info.module_version;
    info.source = kNvidiaModuleVersion;
  }
  return info;
}

absl::StatusOr<int> CountCpuList(absl::string_view list) {
  list = absl::StripAsciiWhitespace(list);
  if (list.empty()) return absl::InvalidArgumentError("empty CPU list");
  int count = 0;
  for (absl::string_view part : absl::StrSplit(list, ',')) {
    std::pair<absl::string_view, absl::string_view> range = absl::StrSplit(part, '-');
    int first = 0, last = 0;
    if (!absl::SimpleAtoi(range.first, &first)) {
      return absl::InvalidArgumentError(absl::StrCat("bad CPU list '", list, "'"));
    }
    last = first;
    if (!range.second.empty() && !absl::SimpleAtoi(range.second, &last)) {
      return absl::InvalidArgumentError(absl::StrCat("bad CPU list '", list, "'"));
    }
    if (first < 0 || last < first) {
      return absl::InvalidArgumentError(absl::StrCat("bad CPU range '", part, "'"));
    }
    count += last - first + 1;
  }
  return count;
}

int CountCpuinfoProcessors(absl::string_view cpuinfo) {
  int count = 0;
  for (absl::string_view line : absl::StrSplit(cpuinfo, '\n')) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(line, ':');
    if (absl::StripAsciiWhitespace(kv.first) == "processor") ++count;
  }
  return count;
}

absl::StatusOr<CpuCount> ReadCpuCount(const Sysroot& root) {
  constexpr char kOnline[] = "/sys/devices/system/cpu/online";
  if (auto online = root.ReadLine(kOnline)) {
    if (auto n = CountCpuList(*online); n.ok()) return CpuCount{*n, kOnline};
  }
  CMAX_ASSIGN_OR_RETURN(std::string cpuinfo, root.Read("/proc/cpuinfo"));
  int n = CountCpuinfoProcessors(cpuinfo);
  if (n == 0) {
    return absl::InvalidArgumentError(
        absl::StrCat(root.Path("/proc/cpuinfo"), ": no 'processor' lines"));
  }
  return CpuCount{n, "/proc/cpuinfo"};
}

absl::StatusOr<uint64_t> ParseMeminfoKib(absl::string_view meminfo,
                                         absl::string_view key) {
  for (absl::string_view line : absl::StrSplit(meminfo, '\n')) {
    size_t colon = line.find(':');
    if (colon == absl::string_view::npos || line.substr(0, colon) != key) continue;
    std::vector<absl::string_view> words =
        absl::StrSplit(line.substr(colon + 1), ' ', absl::SkipWhitespace());
    uint64_t value = 0;
    if (words.empty() || !absl::SimpleAtoi(words[0], &value) ||
        (words.size() > 1 && words[1] != "kB")) {
      return absl::InvalidArgumentError(
          absl::StrCat("malformed meminfo line '", line, "'"));
    }
    return value;
  }
  return absl::NotFoundError(absl::StrCat("no ", key, " in meminfo"));
}

absl::StatusOr<uint64_t> ReadMemTotalKib(const Sysroot& root) {
  CMAX_ASSIGN_OR_RETURN(std::string meminfo, root.Read("/proc/meminfo"));
  return ParseMeminfoKib(meminfo, "MemTotal");
}

absl::StatusOr<std::vector<SwapArea>> ParseSwaps(absl::string_view text) {
  std::vector<SwapArea> areas;
  bool header = true;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    if (header) {
      header = false;
      if (absl::StartsWith(line, "Filename")) continue;
    }
    std::vector<absl::string_view> f =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    SwapArea a;
    if (f.size() < 4 || !absl::SimpleAtoi(f[2], &a.size_kib) ||
        !absl::SimpleAtoi(f[3], &a.used_kib)) {
      return absl::InvalidArgumentError(
          absl::StrCat("malformed /proc/swaps line '", line, "'"));
    }
    a.name = std::string(f[0]);
    a.type = std::string(f[1]);
    areas.push_back(std::move(a));
  }
  return areas;
}

absl::StatusOr<std::vector<SwapArea>> ReadSwaps(const Sysroot& root) {
  CMAX_ASSIGN_OR_RETURN(std::string text, root.Read("/proc/swaps"));
  return ParseSwaps(text);
}

absl::StatusOr<int> CountNumaNodes(const Sysroot& root) {
  constexpr char kNodes[] = "/sys/devices/system/node";
  if (!root.Exists(kNodes)) {
    return absl::NotFoundError(absl::StrCat(root.Path(kNodes), ": no such directory"));
  }
  int count = 0;
  for (const std::string& name : root.List(kNodes)) {
    absl::string_view rest = name;
    int index = 0;
    if (absl::ConsumePrefix(&rest, "node") && absl::SimpleAtoi(rest, &index)) ++count;
  }
  return count;
}

std::string ParseOsReleasePrettyName(absl::string_view text) {
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    if (!absl::ConsumePrefix(&line, "PRETTY_NAME=")) continue;
    line = absl::StripAsciiWhitespace(line);
    if (line.size() >= 2 && (line.front() == '"' || line.front() == '\'') &&
        line.back() == line.front()) {
      line = line.substr(1, line.size() - 2);
    }
    return std::string(line);
  }
  return "";
}

HostIdentity ReadHostIdentity(const Sysroot& root) {
  HostIdentity id;
  id.hostname = root.ReadLine("/proc/sys/kernel/hostname").value_or("");
  id.kernel = root.ReadLine("/proc/sys/kernel/osrelease").value_or("");
  id.boot_id = root.ReadLine("/proc/sys/kernel/random/boot_id").value_or("");
  for (const char* path : {"/etc/os-release", "/usr/lib/os-release"}) {
    if (auto text = root.Read(path); text.ok()) {
      id.os = ParseOsReleasePrettyName(*text);
      if (!id.os.empty()) break;
    }
  }
  return id;
}

absl::StatusOr<DiskSpace> ReadRootDiskSpace(const Sysroot& root) {
  DiskSpace d;
  d.path = root.Path("/");
  struct statvfs st;
  if (statvfs(d.path.c_str(), &st) != 0) {
    int e = errno;
    return absl::InternalError(absl::StrCat("statvfs(", d.path, "): ", strerror(e)));
  }
  d.total_bytes = static_cast<uint64_t>(st.f_blocks) * st.f_frsize;
  d.avail_bytes = static_cast<uint64_t>(st.f_bavail) * st.f_frsize;
  if (d.total_bytes == 0) {
    return absl::FailedPreconditionError(
        absl::StrCat(d.path, ": file system reports 0 bytes"));
  }
  d.free_pct =
      100.0 * static_cast<double>(d.avail_bytes) / static_cast<double>(d.total_bytes);
  return d;
}

ClockSync InterpretAdjtimex(int return_value, int status, long maxerror_us) {
  ClockSync c;
  std::string facts =
      absl::StrFormat("adjtimex() returned %d%s, status 0x%04x%s, maxerror %ld us",
                      return_value, return_value == TIME_ERROR ? " (TIME_ERROR)" : "",
                      status, (status & STA_UNSYNC) ? " (STA_UNSYNC)" : "", maxerror_us);
  if (return_value < 0) {
    c.state = ClockState::kNotMeasured;
    c.how = facts;
  } else if (return_value == TIME_ERROR || (status & STA_UNSYNC)) {
    c.state = ClockState::kUnsynchronized;
    c.how = facts;
  } else {
    c.state = ClockState::kSynchronized;
    c.how = facts;
  }
  return c;
}

ClockSync ReadClockSync(const Sysroot& root) {
  if (root.is_real()) {
    struct timex tx;
    memset(&tx, 0, sizeof(tx));  // modes 0: read the state, change nothing
    int rc = adjtimex(&tx);
    if (rc < 0) {
      int e = errno;
      return {ClockState::kNotMeasured, absl::StrCat("adjtimex() failed: ", strerror(e))};
    }
    return InterpretAdjtimex(rc, tx.status, tx.maxerror);
  }
  constexpr char kSeam[] = "/run/cmax-test/clock_synchronized";
  auto line = root.ReadLine(kSeam);
  if (!line) {
    return {
        ClockState::kNotMeasured,
        absl::StrCat("clock sync not measured under a fixture root (", root.root(),
                     "): adjtimex() would describe this machine, not the tree, and the "
                     "test seam file ",
                     kSeam, " is absent")};
  }
  std::string v = absl::AsciiStrToLower(*line);
  std::string how =
      absl::StrCat("fixture file ", root.Path(kSeam), " says '", *line, "'");
  if (v == "1" || v == "yes" || v == "true") return {ClockState::kSynchronized, how};
  if (v == "0" || v == "no" || v == "false") return {ClockState::kUnsynchronized, how};
  return {ClockState::kNotMeasured,
          absl::StrCat(how, ": expected 1/0, yes/no or true/false")};
}

}  // namespace cmax::bench::hostcheck
