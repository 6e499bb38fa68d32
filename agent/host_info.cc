#include "agent/host_info.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/cpuinfo.h"
#include "common/subprocess.h"
#include "common/suite_declaration.h"
#include "common/sysroot.h"
#include "google/protobuf/util/json_util.h"

namespace cmax::agent {

absl::StatusOr<v1::Inventory> ParseInventoryOutput(const std::string& out) {
  std::vector<std::string> lines = absl::StrSplit(out, '\n', absl::SkipWhitespace());
  std::string last_error = "no output";
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    v1::Inventory inventory;
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = true;
    auto status = google::protobuf::util::JsonStringToMessage(*it, &inventory, options);
    if (status.ok()) return inventory;
    last_error = absl::StrCat("not a cmax.v1.Inventory: ", std::string(status.message()));
  }
  return absl::InvalidArgumentError(last_error);
}

v1::Inventory MinimalInventory(const std::string& root) {
  Sysroot sys(root.empty() ? "/" : root);
  v1::Inventory inv;
  char host[256] = {0};
  if (gethostname(host, sizeof(host) - 1) == 0) inv.set_hostname(host);
  if (absl::StatusOr<std::string> cpuinfo = sys.Read("/proc/cpuinfo"); cpuinfo.ok()) {
    // The same reading as hostcheck's on x86 and on arm64 (Grace), whose
    // file has no "model name" (common/cpuinfo.h).
    CpuinfoSummary summary = ParseCpuinfo(*cpuinfo);
    inv.set_cpu_cores(summary.processors);
    if (std::string model = CpuModelName(summary); !model.empty()) {
      (*inv.mutable_facts())["cpu_model"] = model;
    }
  }
  if (absl::StatusOr<std::string> meminfo = sys.Read("/proc/meminfo"); meminfo.ok()) {
    for (absl::string_view line : absl::StrSplit(*meminfo, '\n')) {
      if (!absl::ConsumePrefix(&line, "MemTotal:")) continue;
      line = absl::StripAsciiWhitespace(line);
      absl::ConsumeSuffix(&line, "kB");
      int64_t kib = 0;
      if (absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &kib)) {
        inv.set_memory_gib(static_cast<double>(kib) / (1024.0 * 1024.0));
      }
    }
  }
  if (auto kernel = sys.ReadLine("/proc/sys/kernel/osrelease")) inv.set_kernel(*kernel);
  return inv;
}

v1::Inventory GatherInventory(const std::string& bench_dir, const std::string& root,
                              std::chrono::milliseconds timeout) {
  // The suite that declares itself the inventory's (hostcheck).
  const SuiteInfo* suite = InventorySuite();
  const std::string name = suite != nullptr ? suite->name : "";
  std::vector<std::string> argv = {
      absl::StrCat(bench_dir, "/", suite != nullptr ? SuiteBinary(*suite, {}) : "cmax-bench"), name,
      "--inventory"};
  if (!root.empty()) argv.push_back(absl::StrCat("--root=", root));
  std::string error;
  absl::StatusOr<CommandResult> result =
      suite != nullptr ? RunCommand(argv, timeout)
                       : absl::StatusOr<CommandResult>(absl::NotFoundError(
                             "no registered suite declares itself the inventory's"));
  if (!result.ok()) {
    error = std::string(result.status().message());
  } else if (result->timed_out) {
    error = absl::StrCat(argv[0], " ", name, " --inventory timed out after ",
                         timeout.count(), " ms");
  } else {
    absl::StatusOr<v1::Inventory> inv = ParseInventoryOutput(result->out);
    if (inv.ok()) return *std::move(inv);
    // The last non-empty line of stderr says why, usually.
    std::vector<std::string> err_lines =
        absl::StrSplit(result->err, '\n', absl::SkipWhitespace());
    std::string err_tail = err_lines.empty() ? "" : err_lines.back().substr(0, 300);
    error = absl::StrCat(argv[0], " ", name, " --inventory (", result->exit.Describe(),
                         "): ", inv.status().message(),
                         err_tail.empty() ? "" : absl::StrCat("; stderr: ", err_tail));
  }
  v1::Inventory inv = MinimalInventory(root);
  (*inv.mutable_facts())["inventory_error"] = error;
  return inv;
}

std::vector<std::string> ReachableAddresses() {
  std::vector<std::string> others, loopback;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) != 0) return {};
  for (ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
    if (ifa->ifa_addr == nullptr || !(ifa->ifa_flags & IFF_UP)) continue;
    char text[INET6_ADDRSTRLEN] = {0};
    const int family = ifa->ifa_addr->sa_family;
    if (family == AF_INET) {
      auto* sin = reinterpret_cast<sockaddr_in*>(ifa->ifa_addr);
      inet_ntop(AF_INET, &sin->sin_addr, text, sizeof(text));
    } else if (family == AF_INET6) {
      auto* sin6 = reinterpret_cast<sockaddr_in6*>(ifa->ifa_addr);
      if (IN6_IS_ADDR_LINKLOCAL(&sin6->sin6_addr)) continue;
      inet_ntop(AF_INET6, &sin6->sin6_addr, text, sizeof(text));
    } else {
      continue;
    }
    std::vector<std::string>& sink = (ifa->ifa_flags & IFF_LOOPBACK) ? loopback : others;
    if (std::find(sink.begin(), sink.end(), text) == sink.end()) sink.push_back(text);
  }
  freeifaddrs(list);
  return others.empty() ? loopback : others;
}

namespace {

bool IsHostName(absl::string_view name) {
  if (name.empty() || name.size() > 253) return false;
  std::vector<absl::string_view> labels = absl::StrSplit(name, '.');
  for (absl::string_view label : labels) {
    if (label.empty() || label.size() > 63) return false;
    if (label.front() == '-' || label.back() == '-') return false;
    for (char ch : label) {
      if (!absl::ascii_isalnum(static_cast<unsigned char>(ch)) && ch != '-') return false;
    }
  }
  // "10.0.0.300" is a mistyped address, not a name: no top-level label is
  // all digits (RFC 3696, section 2).
  absl::string_view last = labels.back();
  return !std::all_of(last.begin(), last.end(),
                      [](char ch) { return absl::ascii_isdigit(static_cast<unsigned char>(ch)); });
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ParseAdvertiseList(const std::string& list) {
  std::vector<std::string> out;
  for (absl::string_view raw : absl::StrSplit(list, ',')) {
    const std::string entry(absl::StripAsciiWhitespace(raw));
    if (entry.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--advertise '", list.substr(0, 200), "' has an empty entry"));
    }
    in_addr v4;
    in6_addr v6;
    const bool literal = inet_pton(AF_INET, entry.c_str(), &v4) == 1 ||
                         inet_pton(AF_INET6, entry.c_str(), &v6) == 1;
    if (!literal && !IsHostName(entry)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--advertise: '", entry.substr(0, 200),
          "' is neither an IPv4 or IPv6 address nor a host name"));
    }
    if (std::find(out.begin(), out.end(), entry) == out.end()) out.push_back(entry);
  }
  return out;
}

}  // namespace cmax::agent
