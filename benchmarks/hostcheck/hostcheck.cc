// hostcheck: inventory and basic sanity of one node — NVIDIA GPUs on the PCI
// bus, the NVIDIA driver, CPUs, memory, swap, the root file system, the clock
// — against the plan's expectations. Everything is read through a Sysroot
// (--root), so it runs the same on a node and on a fixture tree.
//
// Exit codes: 0 no FAIL finding; 1 a FAIL or CRITICAL finding; 2 could not
// run (bad flags, --root missing or not a directory).
//
// --inventory prints one cmax.v1.Inventory as a JSON line and exits 0; the
// agent runs it at start-up to build its Hello.
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "benchmarks/hostcheck/host_facts.h"
#include "benchmarks/suite.h"
#include "cmax/v1/inventory.pb.h"
#include "common/args.h"
#include "common/record_io.h"
#include "common/sysroot.h"

namespace cmax::bench {
namespace {

using hostcheck::ClockState;
using hostcheck::PciGpu;

constexpr double kKibPerGib = 1024.0 * 1024.0;
// Below this free percentage of / the node fails outright (logs, checkpoints
// and container layers can no longer be written).
constexpr double kRootFreeFailPct = 2.0;
constexpr char kCategory[] = "reliability";

struct Options {
  bool jsonl = false;
  bool inventory = false;
  std::string root = "/";
  int64_t expect_gpus = -1;  // -1: no expectation
  std::string expect_gpu_model;
  int64_t min_cpu_cores = 0;
  double min_memory_gib = 0;
  double min_free_root_pct = 10;
};

// Everything hostcheck reads, gathered once.
struct Facts {
  absl::StatusOr<std::vector<PciGpu>> gpus;
  hostcheck::DriverInfo driver;
  absl::StatusOr<hostcheck::CpuCount> cpus;
  absl::StatusOr<uint64_t> mem_total_kib;
  absl::StatusOr<std::vector<hostcheck::SwapArea>> swaps;
  absl::StatusOr<int> numa_nodes;
  hostcheck::HostIdentity id;
  absl::StatusOr<hostcheck::DiskSpace> disk;
  hostcheck::ClockSync clock;
};

Facts Gather(const Sysroot& root) {
  return Facts{
      .gpus = hostcheck::ReadNvidiaGpus(root),
      .driver = hostcheck::ReadDriver(root),
      .cpus = hostcheck::ReadCpuCount(root),
      .mem_total_kib = hostcheck::ReadMemTotalKib(root),
      .swaps = hostcheck::ReadSwaps(root),
      .numa_nodes = hostcheck::CountNumaNodes(root),
      .id = hostcheck::ReadHostIdentity(root),
      .disk = hostcheck::ReadRootDiskSpace(root),
      .clock = hostcheck::ReadClockSync(root),
  };
}

// Distinct models in bus order, e.g. "NVIDIA H100 SXM5 80GB".
std::vector<std::string> DistinctModels(const std::vector<PciGpu>& gpus) {
  std::vector<std::string> models;
  for (const PciGpu& g : gpus) {
    if (std::find(models.begin(), models.end(), g.model) == models.end()) {
      models.push_back(g.model);
    }
  }
  return models;
}

std::string BusIds(const std::vector<PciGpu>& gpus) {
  std::vector<std::string> ids;
  for (const PciGpu& g : gpus) ids.push_back(g.bus_id);
  return ids.empty() ? "none" : absl::StrJoin(ids, ", ");
}

// Lower case without spaces, dashes or underscores, so "H100-SXM5" matches
// "NVIDIA H100 SXM5 80GB".
std::string NormalizeModel(absl::string_view s) {
  std::string out;
  for (char c : s) {
    if (absl::ascii_isalnum(c)) out.push_back(absl::ascii_tolower(c));
  }
  return out;
}

double Round(double v, int digits) {
  double scale = std::pow(10.0, digits);
  return std::round(v * scale) / scale;
}

v1::Inventory BuildInventory(const Facts& f) {
  v1::Inventory inv;
  inv.set_hostname(f.id.hostname);
  inv.set_kernel(f.id.kernel);
  inv.set_driver_version(f.driver.version);
  auto& facts = *inv.mutable_facts();
  if (f.gpus.ok()) {
    inv.set_gpu_count(static_cast<int32_t>(f.gpus->size()));
    inv.set_gpu_model(absl::StrJoin(DistinctModels(*f.gpus), " + "));
    std::vector<std::string> ids;
    for (const PciGpu& g : *f.gpus) ids.push_back(g.bus_id);
    facts["gpu_pci_ids"] = absl::StrJoin(ids, ",");
  }
  if (f.cpus.ok()) inv.set_cpu_cores(f.cpus->logical_cpus);
  if (f.mem_total_kib.ok()) inv.set_memory_gib(Round(*f.mem_total_kib / kKibPerGib, 3));
  if (!f.id.os.empty()) facts["os"] = f.id.os;
  if (f.numa_nodes.ok()) facts["numa_nodes"] = absl::StrCat(*f.numa_nodes);
  if (!f.id.boot_id.empty()) facts["boot_id"] = f.id.boot_id;
  return inv;
}

// One line of the human table.
struct Row {
  std::string check;
  std::string status;  // PASS, WARN, FAIL, N/M (not measured)
  std::string value;
  std::string detail;
};

// Collects the table rows and writes the Findings.
class Report {
 public:
  explicit Report(RecordWriter* out) : out_(out) {}

  void Pass(const std::string& check, const std::string& value,
            const std::string& detail) {
    rows_.push_back({check, "PASS", value, detail});
  }

  // A Finding hostcheck.<check>; `severity` INFO means "not measured": the
  // finding then carries not_measured (record.proto), never a pass.
  void Find(const std::string& check, v1::Severity severity, const std::string& value,
            const std::string& title, const std::string& detail,
            const std::string& action, const std::vector<std::string>& evidence = {},
            const std::string& subject = "node") {
    v1::Finding f;
    f.set_check_id(absl::StrCat("hostcheck.", check));
    f.set_severity(severity);
    f.set_not_measured(severity == v1::SEVERITY_INFO);
    f.set_category(kCategory);
    f.set_subject(subject);
    f.set_title(title);
    f.set_detail(detail);
    f.set_action(action);
    for (const auto& e : evidence) f.add_evidence(e);
    out_->Find(std::move(f));
    std::string status = severity == v1::SEVERITY_INFO   ? "N/M"
                         : severity == v1::SEVERITY_WARN ? "WARN"
                                                         : "FAIL";
    rows_.push_back(
        {check, status, value,
         absl::StartsWith(detail, title) ? detail : absl::StrCat(title, ": ", detail)});
  }

  void NotMeasured(const std::string& check, const std::string& what,
                   const absl::Status& why, const std::string& action) {
    Find(check, v1::SEVERITY_INFO, "-", absl::StrCat(what, " not measured"),
         std::string(why.message()), action);
  }

  const std::vector<Row>& rows() const { return rows_; }

 private:
  RecordWriter* out_;
  std::vector<Row> rows_;
};

void CheckGpus(const Options& o, const Facts& f, RecordWriter& out, Report& r) {
  if (!f.gpus.ok()) {
    const char* action =
        "run hostcheck where /sys is mounted (in a container: mount the host's /sys)";
    if (o.expect_gpus > 0) {
      // An expectation that cannot be checked is not met.
      r.Find(
          "gpu_count", v1::SEVERITY_FAIL, "-",
          absl::StrCat("expected ", o.expect_gpus, " GPUs, could not read the PCI bus"),
          std::string(f.gpus.status().message()), action);
    } else {
      r.NotMeasured("gpu_count", "GPUs on the PCI bus", f.gpus.status(), action);
    }
    return;
  }
  const std::vector<PciGpu>& gpus = *f.gpus;
  int n = static_cast<int>(gpus.size());
  out.Measure("gpu_count", n, "count");
  for (int i = 0; i < n; ++i) {
    out.Measure("gpu_present", 1, "count",
                {{"gpu", absl::StrCat(i)},
                 {"pci_bus_id", gpus[i].bus_id},
                 {"model", gpus[i].model},
                 {"device_id", absl::StrFormat("0x%04x", gpus[i].device_id)}});
  }
  std::vector<std::string> evidence;
  for (int i = 0; i < n; ++i) {
    evidence.push_back(absl::StrFormat("gpu %d: %s %s (10de:%04x, class 0x%06x)", i,
                                       gpus[i].bus_id, gpus[i].model, gpus[i].device_id,
                                       gpus[i].class_code));
  }
  std::string found = absl::StrCat(n, " NVIDIA GPU", n == 1 ? "" : "s", " on the PCI bus",
                                   n ? absl::StrCat(": ", BusIds(gpus)) : "");
  if (o.expect_gpus >= 0 && n < o.expect_gpus) {
    r.Find(
        "gpu_count", v1::SEVERITY_FAIL, absl::StrCat(n, "/", o.expect_gpus),
        absl::StrCat("expected ", o.expect_gpus, " GPUs, found ", n),
        absl::StrCat(found, " (", o.expect_gpus - n, " missing)"),
        "find the missing GPU: compare `lspci -d 10de:` with a healthy node of the same "
        "model, check the kernel log for Xid 79 / 'fallen off the bus', then reseat the "
        "GPU or its baseboard; drain the node until it is back",
        evidence);
  } else if (o.expect_gpus >= 0 && n > o.expect_gpus) {
    r.Find("gpu_count", v1::SEVERITY_WARN, absl::StrCat(n, "/", o.expect_gpus),
           absl::StrCat("expected ", o.expect_gpus, " GPUs, found ", n, " (more)"), found,
           "check the plan's expect-gpus against the node type", evidence);
  } else {
    r.Pass("gpu_count",
           o.expect_gpus >= 0 ? absl::StrCat(n, "/", o.expect_gpus) : absl::StrCat(n),
           found);
  }

  std::vector<std::string> models = DistinctModels(gpus);
  if (!o.expect_gpu_model.empty()) {
    std::string want = NormalizeModel(o.expect_gpu_model);
    std::vector<std::string> wrong;
    for (int i = 0; i < n; ++i) {
      if (!absl::StrContains(NormalizeModel(gpus[i].model), want)) {
        wrong.push_back(
            absl::StrCat("gpu ", i, " ", gpus[i].bus_id, ": ", gpus[i].model));
      }
    }
    if (n == 0) {
      r.Find("gpu_model", v1::SEVERITY_FAIL, "none",
             absl::StrCat("expected GPU model '", o.expect_gpu_model, "', found no GPU"),
             "no NVIDIA GPU on the PCI bus", "see hostcheck.gpu_count");
    } else if (!wrong.empty()) {
      r.Find(
          "gpu_model", v1::SEVERITY_FAIL, absl::StrJoin(models, " + "),
          absl::StrCat("expected GPU model '", o.expect_gpu_model, "', ", wrong.size(),
                       " of ", n, " GPUs differ"),
          absl::StrJoin(wrong, "; "),
          "check the node type against the order; an unknown id ('NVIDIA device 0x....') "
          "may be a model newer than cmax's table: compare with `lspci -nn -d 10de:`",
          wrong);
    } else {
      r.Pass("gpu_model", absl::StrJoin(models, " + "),
             absl::StrCat("every GPU matches '", o.expect_gpu_model, "'"));
    }
  } else if (models.size() > 1) {
    r.Find("gpu_model", v1::SEVERITY_WARN, absl::StrJoin(models, " + "),
           "GPUs of different models on one node", BusIds(gpus),
           "check the node against its order; collectives run at the slowest GPU's pace",
           evidence);
  } else if (n > 0) {
    r.Pass("gpu_model", models[0],
           absl::StrCat("device id ", absl::StrFormat("0x%04x", gpus[0].device_id)));
  }
}

void CheckDriver(const Facts& f, Report& r) {
  const hostcheck::DriverInfo& d = f.driver;
  int n = f.gpus.ok() ? static_cast<int>(f.gpus->size()) : 0;
  if (!d.loaded) {
    if (n > 0) {
      r.Find(
          "nvidia_driver", v1::SEVERITY_FAIL, "none",
          "GPUs present but no NVIDIA driver loaded",
          absl::StrCat(n,
                       " NVIDIA GPUs on the PCI bus but neither "
                       "/proc/driver/nvidia/version nor /sys/module/nvidia exists"),
          "load the driver (`modprobe nvidia`; see `dmesg | grep -i nvrm` for why it did "
          "not load: a kernel update without a rebuilt DKMS module, Secure Boot, or "
          "nouveau bound first)");
    } else {
      r.Pass("nvidia_driver", "none", "no NVIDIA GPU and no NVIDIA driver");
    }
    return;
  }
  if (d.version.empty()) {
    r.Find("nvidia_driver", v1::SEVERITY_WARN, "unknown",
           "NVIDIA driver loaded but its version is unreadable",
           "neither /proc/driver/nvidia/version nor /sys/module/nvidia/version gave a "
           "version",
           "check `cat /proc/driver/nvidia/version` and `modinfo nvidia`");
    return;
  }
  if (!d.proc_version.empty() && !d.module_version.empty() &&
      d.proc_version != d.module_version) {
    r.Find("nvidia_driver", v1::SEVERITY_WARN, d.proc_version,
           "NVIDIA driver versions disagree",
           absl::StrCat("/proc/driver/nvidia/version says ", d.proc_version,
                        ", /sys/module/nvidia/version says ", d.module_version),
           "reboot or reload the nvidia modules so one driver version is loaded");
    return;
  }
  r.Pass("nvidia_driver", d.version,
         absl::StrCat(d.open_kernel_module ? "open kernel module" : "kernel module",
                      ", from ", d.source));
}

void CheckCpuMemory(const Options& o, const Facts& f, RecordWriter& out, Report& r) {
  if (!f.cpus.ok()) {
    r.NotMeasured(
        "cpu_cores", "CPU count", f.cpus.status(),
        "check that /sys/devices/system/cpu/online or /proc/cpuinfo is readable");
  } else {
    int cores = f.cpus->logical_cpus;
    out.Measure("cpu_cores", cores, "count", {{"source", f.cpus->source}});
    std::string detail = absl::StrCat("logical CPUs online, from ", f.cpus->source);
    if (cores < o.min_cpu_cores) {
      r.Find("cpu_cores", v1::SEVERITY_FAIL, absl::StrCat(cores),
             absl::StrCat(cores, " CPUs online, expected at least ", o.min_cpu_cores),
             detail,
             "check for CPUs taken offline (/sys/devices/system/cpu/cpu*/online), SMT "
             "disabled in firmware, or a smaller node type than ordered");
    } else {
      r.Pass("cpu_cores", absl::StrCat(cores), detail);
    }
  }
  if (!f.mem_total_kib.ok()) {
    r.NotMeasured("memory", "memory size", f.mem_total_kib.status(),
                  "check that /proc/meminfo is readable");
  } else {
    double gib = *f.mem_total_kib / kKibPerGib;
    out.Measure("memory_total_gib", gib, "GiB");
    std::string value = absl::StrFormat("%.1f GiB", gib);
    if (gib < o.min_memory_gib) {
      r.Find(
          "memory", v1::SEVERITY_FAIL, value,
          absl::StrFormat("%.1f GiB of memory, expected at least %.1f GiB", gib,
                          o.min_memory_gib),
          "MemTotal of /proc/meminfo (installed memory less what firmware and the kernel "
          "reserve)",
          "check for failed DIMMs (`dmidecode -t memory`, BMC event log, EDAC counters) "
          "and memory reserved by kernel parameters (hugepages, crashkernel)");
    } else {
      r.Pass("memory", value, "MemTotal of /proc/meminfo");
    }
  }
  if (!f.numa_nodes.ok()) {
    r.NotMeasured("numa_nodes", "NUMA nodes", f.numa_nodes.status(),
                  "check that /sys/devices/system/node is readable");
  } else {
    out.Measure("numa_nodes", *f.numa_nodes, "count");
    r.Pass("numa_nodes", absl::StrCat(*f.numa_nodes),
           "node* under /sys/devices/system/node");
  }
}

void CheckSwap(const Facts& f, RecordWriter& out, Report& r) {
  if (!f.swaps.ok()) {
    r.NotMeasured("swap", "swap", f.swaps.status(), "check that /proc/swaps is readable");
    return;
  }
  uint64_t total_kib = 0;
  std::vector<std::string> areas;
  for (const auto& a : *f.swaps) {
    total_kib += a.size_kib;
    areas.push_back(absl::StrFormat("%s (%s, %.1f GiB, %.1f GiB used)", a.name, a.type,
                                    a.size_kib / kKibPerGib, a.used_kib / kKibPerGib));
  }
  double gib = total_kib / kKibPerGib;
  out.Measure("swap_total_gib", gib, "GiB");
  if (!f.swaps->empty()) {
    r.Find("swap", v1::SEVERITY_WARN, absl::StrFormat("%.1f GiB", gib), "swap enabled",
           absl::StrCat(
               areas.size(), " swap area(s) in /proc/swaps: ", absl::StrJoin(areas, "; "),
               ". Training nodes should not swap: a node that pages stalls every "
               "rank of its job"),
           "swapoff -a and remove swap from /etc/fstab (and disable zram/swap units)",
           areas);
  } else {
    r.Pass("swap", "off", "no swap area in /proc/swaps");
  }
}

void CheckRootDisk(const Options& o, const Facts& f, RecordWriter& out, Report& r) {
  if (!f.disk.ok()) {
    r.NotMeasured("root_disk", "free space on /", f.disk.status(), "check `df -h /`");
    return;
  }
  const auto& d = *f.disk;
  out.Measure("root_free_pct", d.free_pct, "%", {{"path", d.path}});
  std::string value = absl::StrFormat("%.1f%% free", d.free_pct);
  std::string detail = absl::StrFormat("statvfs(%s): %.1f of %.1f GiB available", d.path,
                                       d.avail_bytes / (kKibPerGib * 1024),
                                       d.total_bytes / (kKibPerGib * 1024));
  const char* action =
      "free space on / (`du -xh --max-depth=1 /`: logs under /var/log, container images, "
      "core dumps, /tmp) or move data to a data volume";
  if (d.free_pct < kRootFreeFailPct) {
    r.Find("root_disk", v1::SEVERITY_FAIL, value,
           absl::StrFormat("root file system nearly full (below %.0f%% free)",
                           kRootFreeFailPct),
           detail, action);
  } else if (d.free_pct < o.min_free_root_pct) {
    r.Find("root_disk", v1::SEVERITY_WARN, value,
           absl::StrFormat("root file system below %.1f%% free", o.min_free_root_pct),
           detail, action);
  } else {
    r.Pass("root_disk", value, detail);
  }
}

void CheckClock(const Facts& f, Report& r) {
  switch (f.clock.state) {
    case ClockState::kSynchronized:
      r.Pass("clock_sync", "synchronised", f.clock.how);
      break;
    case ClockState::kUnsynchronized:
      r.Find("clock_sync", v1::SEVERITY_WARN, "unsynchronised", "clock not synchronised",
             f.clock.how,
             "enable a time service and check it (`chronyc tracking`, `timedatectl "
             "timesync-status`): skewed clocks break barriers, logs and certificates");
      break;
    case ClockState::kNotMeasured:
      r.Find("clock_sync", v1::SEVERITY_INFO, "-", "clock sync not measured", f.clock.how,
             "run hostcheck on the real root (--root /) to measure it");
      break;
  }
}

void PrintTable(const Facts& f, const Options& o, const std::vector<Row>& rows) {
  std::printf("hostcheck: %s (root %s)\n",
              f.id.hostname.empty() ? "?" : f.id.hostname.c_str(), o.root.c_str());
  std::printf("  os %s, kernel %s, NVIDIA driver %s\n\n",
              f.id.os.empty() ? "?" : f.id.os.c_str(),
              f.id.kernel.empty() ? "?" : f.id.kernel.c_str(),
              f.driver.version.empty() ? "none" : f.driver.version.c_str());
  size_t wc = 5, wv = 5;
  for (const Row& row : rows) {
    wc = std::max(wc, row.check.size());
    wv = std::max(wv, row.value.size());
  }
  wv = std::min<size_t>(wv, 28);
  std::printf("%-*s  %-6s  %-*s  %s\n", static_cast<int>(wc), "CHECK", "STATUS",
              static_cast<int>(wv), "VALUE", "DETAIL");
  for (const Row& row : rows) {
    std::printf("%-*s  %-6s  %-*s  %s\n", static_cast<int>(wc), row.check.c_str(),
                row.status.c_str(), static_cast<int>(wv), row.value.c_str(),
                row.detail.c_str());
  }
  std::printf("\nN/M = not measured. Exit 0: no FAIL; 1: a FAIL; 2: could not run.\n");
}

}  // namespace

int RunHostcheck(int argc, char** argv) {
  Options o;
  ArgParser args(
      "cmax-bench hostcheck [--jsonl] [--root DIR] [--expect-gpus N] [--expect-gpu-model "
      "S] "
      "[--min-cpu-cores N] [--min-memory-gib X] [--min-free-root-pct X] [--inventory]",
      "Inventory and sanity of this node: NVIDIA GPUs on the PCI bus, the NVIDIA "
      "driver,\n"
      "CPUs, memory, swap, free space on /, clock synchronisation. Reads everything\n"
      "under --root (default /), so it also runs on a copied or fixture tree.\n"
      "--inventory prints one cmax.v1.Inventory JSON line instead of checking.");
  args.AddFlag("jsonl", &o.jsonl, "write cmax.v1.Record JSON lines instead of a table");
  args.AddFlag("inventory", &o.inventory, "print the node's Inventory as one JSON line");
  args.AddString("root", &o.root,
                 "system root to read /sys, /proc and /etc under (default /)");
  args.AddInt("expect-gpus", &o.expect_gpus, "GPUs expected; fewer fail the node");
  args.AddString("expect-gpu-model", &o.expect_gpu_model,
                 "text every GPU's model must contain (case, spaces and dashes ignored)");
  args.AddInt("min-cpu-cores", &o.min_cpu_cores, "minimum logical CPUs online");
  args.AddDouble("min-memory-gib", &o.min_memory_gib, "minimum MemTotal in GiB");
  args.AddDouble("min-free-root-pct", &o.min_free_root_pct,
                 "warn below this free percentage of / (default 10; below 2 fails)");
  if (auto rc = ParseSuiteFlags(args, "hostcheck", argc, argv)) return *rc;
  if (!args.positional().empty()) {
    std::fprintf(stderr, "hostcheck: unexpected argument '%s'\n",
                 args.positional()[0].c_str());
    return kExitCouldNotRun;
  }
  RecordWriter out("hostcheck", o.jsonl && !o.inventory ? stdout : nullptr);

  struct stat st;
  if (o.root.empty() || stat(o.root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    std::string why =
        absl::StrCat("root '", o.root, "' is not a directory; nothing measured");
    std::fprintf(stderr, "hostcheck: %s\n", why.c_str());
    out.Log("error", absl::StrCat("hostcheck could not run: ", why));
    out.NotMeasured("hostcheck.not_measured", kCategory, "node",
                    "not measured: hostcheck could not run", why,
                    "point --root at a system root (default /)");
    return kExitCouldNotRun;
  }
  Sysroot root(o.root);
  Facts f = Gather(root);

  if (o.inventory) {
    std::printf("%s\n", MessageToJsonLine(BuildInventory(f)).c_str());
    return kExitPassed;
  }

  // A root with none of /sys/bus/pci, /proc/meminfo and a CPU count is not a
  // Linux system root: nothing here could be judged.
  if (!f.gpus.ok() && !f.mem_total_kib.ok() && !f.cpus.ok()) {
    std::string why =
        absl::StrCat("nothing readable under '", o.root, "': ", f.gpus.status().message(),
                     "; ", f.mem_total_kib.status().message());
    std::fprintf(stderr, "hostcheck: %s\n", why.c_str());
    out.Log("error", absl::StrCat("hostcheck could not run: ", why));
    out.NotMeasured("hostcheck.not_measured", kCategory, "node",
                    "not measured: hostcheck could not run", why,
                    "point --root at a system root (default /)");
    return kExitCouldNotRun;
  }

  Report report(&out);
  CheckGpus(o, f, out, report);
  CheckDriver(f, report);
  CheckCpuMemory(o, f, out, report);
  CheckSwap(f, out, report);
  CheckRootDisk(o, f, out, report);
  CheckClock(f, report);

  if (!o.jsonl) PrintTable(f, o, report.rows());
  return out.findings_at_or_above(v1::SEVERITY_FAIL) > 0 ? kExitFoundFailures
                                                         : kExitPassed;
}

}  // namespace cmax::bench
