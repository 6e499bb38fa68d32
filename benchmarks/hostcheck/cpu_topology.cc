#include "benchmarks/hostcheck/cpu_topology.h"

#include <algorithm>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/cpuinfo.h"
#include "common/status_macros.h"

namespace cmax::bench::hostcheck {
namespace {

constexpr char kNodes[] = "/sys/devices/system/node";
constexpr char kCpus[] = "/sys/devices/system/cpu";
constexpr double kKibPerGib = 1024.0 * 1024.0;

// The CPUs of a kernel CPU list ("0-3,8"), in order; nullopt when malformed.
std::optional<std::vector<int>> ExpandCpuList(absl::string_view list) {
  std::vector<int> cpus;
  list = absl::StripAsciiWhitespace(list);
  if (list.empty()) return cpus;
  for (absl::string_view part : absl::StrSplit(list, ',')) {
    std::pair<absl::string_view, absl::string_view> range = absl::StrSplit(part, '-');
    int first = 0, last = 0;
    if (!absl::SimpleAtoi(range.first, &first)) return std::nullopt;
    last = first;
    if (!range.second.empty() && !absl::SimpleAtoi(range.second, &last))
      return std::nullopt;
    if (first < 0 || last < first || last - first > (1 << 20)) return std::nullopt;
    for (int c = first; c <= last; ++c) cpus.push_back(c);
  }
  return cpus;
}

std::string Gib(uint64_t kib) { return absl::StrFormat("%.1f GiB", kib / kKibPerGib); }

}  // namespace

absl::StatusOr<CpuModel> ReadCpuModel(const Sysroot& root) {
  CMAX_ASSIGN_OR_RETURN(std::string text, root.Read("/proc/cpuinfo"));
  CpuinfoSummary s = ParseCpuinfo(text);
  CpuModel m;
  m.name = CpuModelName(s);
  if (m.name.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(root.Path("/proc/cpuinfo"),
                     ": neither a 'model name' nor 'CPU implementer'/'CPU part' lines"));
  }
  if (s.arm_cores.empty()) {
    m.source = "model name of /proc/cpuinfo";
  } else {
    std::vector<std::string> ids;
    for (const ArmCoreType& c : s.arm_cores) {
      ids.push_back(absl::StrFormat("CPU implementer 0x%02x, CPU part 0x%03x (%d CPUs)",
                                    c.implementer, c.part, c.processors));
    }
    m.source = absl::StrCat(absl::StrJoin(ids, "; "), " of /proc/cpuinfo");
  }
  return m;
}

absl::StatusOr<CpuSockets> ReadCpuSockets(const Sysroot& root) {
  const std::string online_path = absl::StrCat(kCpus, "/online");
  auto online = root.ReadLine(online_path);
  if (!online) {
    return absl::NotFoundError(absl::StrCat(root.Path(online_path), ": not readable"));
  }
  std::optional<std::vector<int>> cpus = ExpandCpuList(*online);
  if (!cpus || cpus->empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat(root.Path(online_path), ": bad CPU list '", *online, "'"));
  }
  std::set<long> packages;
  CpuSockets s;
  for (int cpu : *cpus) {
    auto id =
        root.ReadLine(absl::StrCat(kCpus, "/cpu", cpu, "/topology/physical_package_id"));
    long v = 0;
    if (!id || !absl::SimpleAtoi(absl::StripAsciiWhitespace(*id), &v)) continue;
    packages.insert(v);
    ++s.cpus_read;
  }
  if (s.cpus_read == 0) {
    return absl::NotFoundError(absl::StrCat(
        root.Path(kCpus), "/cpu*/topology/physical_package_id: none readable"));
  }
  s.sockets = static_cast<int>(packages.size());
  s.source = absl::StrCat(kCpus, "/cpu*/topology/physical_package_id");
  return s;
}

int NumaTopology::WithCpus() const {
  return static_cast<int>(std::count_if(nodes.begin(), nodes.end(),
                                        [](const NumaNode& n) { return n.has_cpus(); }));
}

int NumaTopology::MemoryOnly() const {
  return static_cast<int>(std::count_if(
      nodes.begin(), nodes.end(), [](const NumaNode& n) { return n.memory_only(); }));
}

int NumaTopology::Empty() const {
  return static_cast<int>(nodes.size()) - WithCpus() - MemoryOnly();
}

std::optional<uint64_t> NumaTopology::CpuNodeMemKib() const {
  uint64_t sum = 0;
  for (const NumaNode& n : nodes) {
    if (!n.has_cpus()) continue;
    if (!n.mem_total_kib) return std::nullopt;
    sum += *n.mem_total_kib;
  }
  return sum;
}

uint64_t NumaTopology::MemoryOnlyKib() const {
  uint64_t sum = 0;
  for (const NumaNode& n : nodes) {
    if (n.memory_only()) sum += *n.mem_total_kib;
  }
  return sum;
}

absl::StatusOr<uint64_t> ParseNodeMemTotalKib(absl::string_view meminfo, int node) {
  const std::string key = absl::StrCat("Node ", node, " MemTotal:");
  for (absl::string_view line : absl::StrSplit(meminfo, '\n')) {
    line = absl::StripLeadingAsciiWhitespace(line);
    if (!absl::ConsumePrefix(&line, key)) continue;
    std::vector<absl::string_view> words =
        absl::StrSplit(line, ' ', absl::SkipWhitespace());
    uint64_t v = 0;
    if (words.empty() || !absl::SimpleAtoi(words[0], &v) ||
        (words.size() > 1 && words[1] != "kB")) {
      return absl::InvalidArgumentError(
          absl::StrCat("malformed node meminfo line '", key, line, "'"));
    }
    return v;
  }
  return absl::NotFoundError(absl::StrCat("no '", key, "' line"));
}

absl::StatusOr<NumaTopology> ReadNumaTopology(const Sysroot& root) {
  if (!root.Exists(kNodes)) {
    return absl::NotFoundError(absl::StrCat(root.Path(kNodes), ": no such directory"));
  }
  NumaTopology t;
  for (const std::string& name : root.List(kNodes)) {
    absl::string_view rest = name;
    NumaNode n;
    if (!absl::ConsumePrefix(&rest, "node") || !absl::SimpleAtoi(rest, &n.id)) continue;
    const std::string dir = absl::StrCat(kNodes, "/", name);
    // A missing cpulist reads as no CPUs: the kernel always writes one, so
    // only a partial tree lacks it.
    n.cpulist = root.ReadLine(dir + "/cpulist").value_or("");
    std::optional<std::vector<int>> cpus = ExpandCpuList(n.cpulist);
    if (!cpus) {
      return absl::InvalidArgumentError(
          absl::StrCat(root.Path(dir + "/cpulist"), ": bad CPU list '", n.cpulist, "'"));
    }
    n.cpus = static_cast<int>(cpus->size());
    if (auto meminfo = root.Read(dir + "/meminfo"); meminfo.ok()) {
      if (auto kib = ParseNodeMemTotalKib(*meminfo, n.id); kib.ok())
        n.mem_total_kib = *kib;
    }
    t.nodes.push_back(std::move(n));
  }
  std::sort(t.nodes.begin(), t.nodes.end(),
            [](const NumaNode& a, const NumaNode& b) { return a.id < b.id; });
  return t;
}

std::vector<std::string> NumaImbalances(const NumaTopology& topology) {
  std::vector<const NumaNode*> cpu_nodes;
  for (const NumaNode& n : topology.nodes) {
    if (n.has_cpus()) cpu_nodes.push_back(&n);
  }
  std::vector<std::string> out;
  if (cpu_nodes.size() < 2) return out;

  auto [fewest, most] = std::minmax_element(
      cpu_nodes.begin(), cpu_nodes.end(),
      [](const NumaNode* a, const NumaNode* b) { return a->cpus < b->cpus; });
  if ((*fewest)->cpus != (*most)->cpus) {
    std::vector<std::string> each;
    for (const NumaNode* n : cpu_nodes) {
      each.push_back(absl::StrCat("node", n->id, " ", n->cpus, " (", n->cpulist, ")"));
    }
    out.push_back(absl::StrCat("CPUs per NUMA node differ: ", absl::StrJoin(each, ", ")));
  }

  if (std::all_of(cpu_nodes.begin(), cpu_nodes.end(),
                  [](const NumaNode* n) { return n->mem_total_kib.has_value(); })) {
    auto [least, largest] = std::minmax_element(
        cpu_nodes.begin(), cpu_nodes.end(), [](const NumaNode* a, const NumaNode* b) {
          return *a->mem_total_kib < *b->mem_total_kib;
        });
    const double lo = static_cast<double>(*(*least)->mem_total_kib);
    const double hi = static_cast<double>(*(*largest)->mem_total_kib);
    if (hi > 0 && lo < kMinNodeMemRatio * hi) {
      std::vector<std::string> each;
      for (const NumaNode* n : cpu_nodes) {
        each.push_back(absl::StrCat("node", n->id, " ", Gib(*n->mem_total_kib)));
      }
      out.push_back(absl::StrFormat(
          "memory per NUMA node with CPUs differs: node%d has %.0f%% of node%d's (%s)",
          (*least)->id, 100 * lo / hi, (*largest)->id, absl::StrJoin(each, ", ")));
    }
  }
  return out;
}

}  // namespace cmax::bench::hostcheck
