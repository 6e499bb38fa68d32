// hostcheck: inventory and basic sanity of one node — NVIDIA GPUs on the PCI
// bus, the NVIDIA driver, CPUs, memory, swap, the root file system, the clock
// — against the plan's expectations, and the node's GPU–NIC topology (PCIe
// paths, RDMA NICs, ACS, IOMMU; benchmarks/hostcheck/topology.h). Everything
// is read through a Sysroot (--root), so it runs the same on a node and on a
// fixture tree. The topology findings are category networking, the rest
// reliability.
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
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "benchmarks/health/fabric_domain.h"
#include "benchmarks/hostcheck/cpu_topology.h"
#include "benchmarks/hostcheck/host_facts.h"
#include "benchmarks/hostcheck/pci_ids.h"
#include "benchmarks/hostcheck/topology.h"
#include "benchmarks/suite.h"
#include "cmax/v1/inventory.pb.h"
#include "common/suite_flags.h"
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
// The topology checks judge the paths RDMA traffic takes.
constexpr char kNetworking[] = "networking";
// NCCL user guide, "Troubleshooting": "PCI Access Control Services (ACS)" and
// the IOMMU advice next to it.
constexpr char kNcclAcsDoc[] =
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"
    "#pci-access-control-services-acs";

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
  absl::StatusOr<hostcheck::CpuModel> cpu_model;
  absl::StatusOr<hostcheck::CpuSockets> sockets;
  absl::StatusOr<uint64_t> mem_total_kib;
  absl::StatusOr<std::vector<hostcheck::SwapArea>> swaps;
  absl::StatusOr<hostcheck::NumaTopology> numa;
  hostcheck::HostIdentity id;
  absl::StatusOr<hostcheck::DiskSpace> disk;
  hostcheck::ClockSync clock;
  absl::StatusOr<hostcheck::Topology> topo;
};

Facts Gather(const Sysroot& root) {
  return Facts{
      .gpus = hostcheck::ReadNvidiaGpus(root),
      .driver = hostcheck::ReadDriver(root),
      .cpus = hostcheck::ReadCpuCount(root),
      .cpu_model = hostcheck::ReadCpuModel(root),
      .sockets = hostcheck::ReadCpuSockets(root),
      .mem_total_kib = hostcheck::ReadMemTotalKib(root),
      .swaps = hostcheck::ReadSwaps(root),
      .numa = hostcheck::ReadNumaTopology(root),
      .id = hostcheck::ReadHostIdentity(root),
      .disk = hostcheck::ReadRootDiskSpace(root),
      .clock = hostcheck::ReadClockSync(root),
      .topo = hostcheck::ReadTopology(root),
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
  if (f.cpu_model.ok()) facts["cpu_model"] = f.cpu_model->name;
  if (f.sockets.ok()) facts["cpu_sockets"] = absl::StrCat(f.sockets->sockets);
  if (f.mem_total_kib.ok()) inv.set_memory_gib(Round(*f.mem_total_kib / kKibPerGib, 3));
  if (!f.id.os.empty()) facts["os"] = f.id.os;
  if (f.numa.ok()) {
    facts["numa_nodes"] = absl::StrCat(f.numa->nodes.size());
    facts["numa_nodes_cpu"] = absl::StrCat(f.numa->WithCpus());
    facts["numa_nodes_memory_only"] = absl::StrCat(f.numa->MemoryOnly());
    if (f.numa->MemoryOnly() > 0) {
      if (auto host = f.numa->CpuNodeMemKib()) {
        facts["memory_cpu_nodes_gib"] = absl::StrCat(Round(*host / kKibPerGib, 3));
      }
    }
  }
  if (!f.id.boot_id.empty()) facts["boot_id"] = f.id.boot_id;
  // The GPU→NIC map for the suites that pick a NIC per GPU (rdma, NCCL): only
  // when every GPU's PCIe path is known and there are RDMA NICs to map to.
  if (f.topo.ok() && !f.topo->gpus.empty() &&
      std::any_of(f.topo->nics.begin(), f.topo->nics.end(),
                  [](const hostcheck::RdmaNic& n) { return n.pci.path_known; }) &&
      std::all_of(f.topo->gpu_pci.begin(), f.topo->gpu_pci.end(),
                  [](const hostcheck::PciPlace& p) { return p.path_known; })) {
    facts["gpu_nic_map"] = hostcheck::GpuNicMapFact(hostcheck::PairGpusWithNics(*f.topo));
  }
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
            const std::string& subject = "node", const std::string& category = kCategory,
            const std::map<std::string, std::string>& labels = {},
            const std::vector<std::string>& links = {}) {
    v1::Finding f;
    f.set_check_id(absl::StrCat("hostcheck.", check));
    f.set_severity(severity);
    f.set_not_measured(severity == v1::SEVERITY_INFO);
    f.set_category(category);
    f.set_subject(subject);
    for (const auto& [k, v] : labels) (*f.mutable_labels())[k] = v;
    for (const auto& l : links) f.add_links(l);
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

  // A fact the table shows that no check judges (no finding).
  void Note(const std::string& check, const std::string& value,
            const std::string& detail) {
    rows_.push_back({check, "INFO", value, detail});
  }

  void NotMeasured(const std::string& check, const std::string& what,
                   const absl::Status& why, const std::string& action,
                   const std::string& category = kCategory) {
    Find(check, v1::SEVERITY_INFO, "-", absl::StrCat(what, " not measured"),
         std::string(why.message()), action, {}, "node", category);
  }

  const std::vector<Row>& rows() const { return rows_; }

 private:
  RecordWriter* out_;
  std::vector<Row> rows_;
};

std::string Gts(double v) { return absl::StrFormat("%.1f GT/s", v); }

// A function without max_link_* files describes no PCIe link: what a GPU on
// NVLink-C2C (GH200, GB200, GB300 on Grace) looks like; never a slow link.
constexpr char kNotPcie[] = "not a PCIe link (no max_link_* files)";

std::string LinkText(const hostcheck::PcieLink& l) {
  if (!l.described) return kNotPcie;
  if (l.width == 0 && l.speed_gts == 0) return "link unknown";
  return absl::StrCat("x", l.width, " at ", Gts(l.speed_gts), " (max x", l.max_width,
                      " at ", Gts(l.max_speed_gts), ")");
}

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
  // How each GPU reaches the host (topology.h reads the link files of the
  // same GPUs, in the same order): "nvlink_c2c" for a Grace superchip's GPU
  // (by its id, whatever link files it has), "pcie" where sysfs describes a
  // PCIe link, "not_pcie" where it describes none. No PCIe expectation
  // applies to the last two.
  const bool links_read = f.topo.ok() && f.topo->gpu_pci.size() == gpus.size();
  std::vector<std::string> not_pcie;
  for (int i = 0; i < n; ++i) {
    std::map<std::string, std::string> labels = {
        {"gpu", absl::StrCat(i)},
        {"pci_bus_id", gpus[i].bus_id},
        {"model", gpus[i].model},
        {"device_id", absl::StrFormat("0x%04x", gpus[i].device_id)}};
    const bool c2c = hostcheck::IsNvlinkC2cGpu(gpus[i].device_id);
    if (links_read || c2c) {
      const bool described = links_read && f.topo->gpu_pci[i].link.described;
      labels["host_link"] = c2c ? "nvlink_c2c" : described ? "pcie" : "not_pcie";
      if (links_read) labels["pcie_link"] = LinkText(f.topo->gpu_pci[i].link);
      if (c2c || !described) {
        not_pcie.push_back(absl::StrCat(gpus[i].bus_id, c2c ? " (NVLink-C2C)" : ""));
      }
    }
    out.Measure("gpu_present", 1, "count", labels);
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
  if (!not_pcie.empty()) {
    r.Note("gpu_host_link", absl::StrCat(not_pcie.size(), "/", n, " not PCIe"),
           absl::StrCat(absl::StrJoin(not_pcie, ", "),
                        ": not a PCIe link to the host (a Grace superchip's GPU reaches "
                        "its CPU over NVLink-C2C; a function without "
                        "max_link_speed/max_link_width describes no PCIe link); no PCIe "
                        "expectation is measured against them"));
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

// GPUDirect RDMA between the GPUs and the RDMA NICs. ClusterMAX's Slurm
// expectations ask for the dma_buf path of the open kernel module; the
// out-of-tree nvidia_peermem is deprecated and does not pass on its own
// (docs/clustermax-criteria.md). Whether the kernel was built with dma-buf
// is not read here. No driver or no RDMA NIC: nothing to judge (a note).
void CheckGpuDirectRdma(const Sysroot& root, const Facts& f, Report& r) {
  const std::vector<std::string> nics = root.List("/sys/class/infiniband");
  if (!f.driver.loaded || nics.empty()) {
    r.Note("gpudirect_rdma", "-", !f.driver.loaded ? "no NVIDIA driver" : "no RDMA NIC in /sys/class/infiniband");
    return;
  }
  if (f.driver.proc_version.empty()) {
    r.NotMeasured("gpudirect_rdma", "GPUDirect RDMA",
                  absl::FailedPreconditionError(
                      "/proc/driver/nvidia/version has no readable NVRM line: whether the open "
                      "kernel module (dma_buf) is loaded cannot be told"),
                  "check `cat /proc/driver/nvidia/version`", kNetworking);
    return;
  }
  const bool peermem = root.Exists("/sys/module/nvidia_peermem");
  const std::string about = absl::StrCat(nics.size(), " RDMA NICs (", absl::StrJoin(nics, ", "), ")");
  if (f.driver.open_kernel_module) {
    r.Pass("gpudirect_rdma", "dma_buf",
           absl::StrCat("open kernel module: GPUDirect RDMA through dma_buf for ", about,
                        peermem ? "; nvidia_peermem is loaded too" : ""));
    return;
  }
  const std::string title = peermem ? "GPUDirect RDMA only through the deprecated nvidia_peermem"
                                    : "no GPUDirect RDMA path: proprietary kernel module, no nvidia_peermem";
  r.Find("gpudirect_rdma", v1::SEVERITY_WARN, peermem ? "nvidia_peermem" : "none", title,
         absl::StrCat(about, "; the NVRM line names the proprietary kernel module",
                      peermem ? ", and /sys/module/nvidia_peermem exists"
                              : " and /sys/module/nvidia_peermem does not exist: NICs read GPU "
                                "memory through host memory"),
         "install the open kernel module flavour of the driver (nvidia-open), whose dma_buf "
         "support the RDMA stack uses without nvidia_peermem",
         {absl::StrCat("/proc/driver/nvidia/version: ", f.driver.proc_version,
                       " (proprietary kernel module)")},
         "node", kNetworking, {},
         {"https://docs.nvidia.com/cuda/gpudirect-rdma/"});
}

// GDRCopy (low-latency GPU memory copies for NCCL's LL protocols and
// NVSHMEM, a ClusterMAX expectation: docs/clustermax-criteria.md): its gdrdrv
// kernel module on a GPU node with RDMA NICs. Same gating as GPUDirect RDMA.
void CheckGdrcopy(const Sysroot& root, const Facts& f, Report& r) {
  if (!f.driver.loaded || root.List("/sys/class/infiniband").empty()) {
    r.Note("gdrcopy", "-", !f.driver.loaded ? "no NVIDIA driver" : "no RDMA NIC in /sys/class/infiniband");
    return;
  }
  if (root.List("/sys/module").empty()) {
    r.NotMeasured("gdrcopy", "GDRCopy",
                  absl::NotFoundError("/sys/module lists no modules: which are loaded cannot be told"),
                  "check `lsmod | grep gdrdrv`", kNetworking);
    return;
  }
  if (root.Exists("/sys/module/gdrdrv")) {
    r.Pass("gdrcopy", "gdrdrv", "the GDRCopy kernel module gdrdrv is loaded");
    return;
  }
  r.Find("gdrcopy", v1::SEVERITY_WARN, "none", "GDRCopy not loaded",
         "GPU node with RDMA NICs but no /sys/module/gdrdrv: NCCL and NVSHMEM go without "
         "GDRCopy's low-latency copies",
         "install GDRCopy and load its gdrdrv module (`modprobe gdrdrv`)", {}, "node", kNetworking,
         {}, {"https://github.com/NVIDIA/gdrcopy"});
}

// Profiling access for users (docs/clustermax-criteria.md): perf for
// unprivileged users (kernel.perf_event_paranoid above 2, a Debian/Ubuntu
// patch, refuses them every event) and the GPU's performance counters for
// Nsight Compute and CUPTI (the driver's RestrictProfilingToAdminUsers: 1
// gives users ERR_NVGPUCTRPERM). Sets `restricted` and `unknown` lines.
void ReadProfilingAccess(const Sysroot& root, const Facts& f, std::vector<std::string>& restricted,
                         std::vector<std::string>& unknown, std::vector<std::string>& evidence) {
  auto paranoid = root.ReadLine("/proc/sys/kernel/perf_event_paranoid");
  int level = 0;
  if (!paranoid || !absl::SimpleAtoi(absl::StripAsciiWhitespace(*paranoid), &level)) {
    unknown.push_back("/proc/sys/kernel/perf_event_paranoid unreadable");
  } else {
    evidence.push_back(absl::StrCat("kernel.perf_event_paranoid = ", level));
    if (level > 2) restricted.push_back(absl::StrCat("perf: kernel.perf_event_paranoid is ", level));
  }
  if (!f.driver.loaded) return;
  auto params = root.Read("/proc/driver/nvidia/params");
  const std::string key = "RestrictProfilingToAdminUsers:";
  const size_t at = params.ok() ? params->find(key) : std::string::npos;
  if (at == std::string::npos) {
    unknown.push_back("RestrictProfilingToAdminUsers not found in /proc/driver/nvidia/params");
    return;
  }
  const std::string value(absl::StripAsciiWhitespace(
      absl::string_view(*params).substr(at + key.size(), params->find('\n', at) - at - key.size())));
  evidence.push_back(absl::StrCat("/proc/driver/nvidia/params: ", key, " ", value));
  if (value != "0") restricted.push_back("GPU counters (Nsight Compute, CUPTI): RestrictProfilingToAdminUsers is " + value);
}

void CheckProfilingAccess(const Sysroot& root, const Facts& f, Report& r) {
  std::vector<std::string> restricted, unknown, evidence;
  ReadProfilingAccess(root, f, restricted, unknown, evidence);
  if (!restricted.empty()) {
    r.Find("profiling_access", v1::SEVERITY_WARN, "restricted", "profiling restricted to root",
           absl::StrJoin(restricted, "; ") +
               (unknown.empty() ? "" : absl::StrCat(" (", absl::StrJoin(unknown, "; "), ")")),
           "let users profile: sysctl kernel.perf_event_paranoid=2 (or lower), and the nvidia "
           "module option NVreg_RestrictProfilingToAdminUsers=0",
           evidence, "node", kCategory, {},
           {"https://developer.nvidia.com/nvidia-development-tools-solutions-err_nvgpuctrperm-permission-issue-performance-counters"});
    return;
  }
  if (!unknown.empty()) {
    r.NotMeasured("profiling_access", "profiling access",
                  absl::NotFoundError(absl::StrJoin(unknown, "; ")),
                  "check `sysctl kernel.perf_event_paranoid` and /proc/driver/nvidia/params");
    return;
  }
  r.Pass("profiling_access", "users", absl::StrJoin(evidence, "; "));
}

void CheckCpus(const Options& o, const Facts& f, RecordWriter& out, Report& r) {
  if (!f.cpus.ok()) {
    r.NotMeasured(
        "cpu_cores", "CPU count", f.cpus.status(),
        "check that /sys/devices/system/cpu/online or /proc/cpuinfo is readable");
  } else {
    int cores = f.cpus->logical_cpus;
    std::map<std::string, std::string> labels = {{"source", f.cpus->source}};
    if (f.cpu_model.ok()) labels["model"] = f.cpu_model->name;
    out.Measure("cpu_cores", cores, "count", labels);
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
  // The model: x86 writes a "model name"; arm64 (Grace) only the MIDR
  // implementer and part, named through common/cpuinfo.h's table.
  if (!f.cpu_model.ok()) {
    r.NotMeasured("cpu_model", "CPU model", f.cpu_model.status(),
                  "check that /proc/cpuinfo is readable");
  } else {
    r.Pass("cpu_model", f.cpu_model->name, f.cpu_model->source);
  }
  // Sockets from the physical package ids (sysfs, every architecture), not
  // from x86's "physical id" lines, which arm64 does not write.
  if (!f.sockets.ok()) {
    r.NotMeasured("cpu_sockets", "CPU sockets", f.sockets.status(),
                  "check that /sys/devices/system/cpu/cpu*/topology is readable");
  } else {
    std::map<std::string, std::string> labels = {{"source", f.sockets->source}};
    if (f.cpu_model.ok()) labels["model"] = f.cpu_model->name;
    out.Measure("cpu_sockets", f.sockets->sockets, "count", labels);
    r.Pass("cpu_sockets", absl::StrCat(f.sockets->sockets),
           absl::StrCat("distinct physical_package_id of ", f.sockets->cpus_read,
                        " online CPUs"));
  }
}

void CheckMemory(const Options& o, const Facts& f, RecordWriter& out, Report& r) {
  if (!f.mem_total_kib.ok()) {
    r.NotMeasured("memory", "memory size", f.mem_total_kib.status(),
                  "check that /proc/meminfo is readable");
    return;
  }
  const double total_gib = *f.mem_total_kib / kKibPerGib;
  out.Measure("memory_total_gib", total_gib, "GiB");
  // What --min-memory-gib is held to: MemTotal, which on a Grace host in NUMA
  // mode (CDMM off) also counts the GPUs' HBM onlined on memory-only NUMA
  // nodes. There the host's memory is what its CPU nodes hold.
  double gib = total_gib;
  std::string what =
      "MemTotal of /proc/meminfo (installed memory less what firmware and the kernel "
      "reserve)";
  const hostcheck::NumaTopology* numa = f.numa.ok() ? &*f.numa : nullptr;
  if (numa != nullptr && numa->MemoryOnly() > 0) {
    const double device_gib = numa->MemoryOnlyKib() / kKibPerGib;
    if (auto host_kib = numa->CpuNodeMemKib()) {
      gib = *host_kib / kKibPerGib;
      out.Measure("memory_cpu_nodes_gib", gib, "GiB",
                  {{"memory_only_nodes", absl::StrCat(numa->MemoryOnly())},
                   {"memory_only_gib", absl::StrFormat("%.1f", device_gib)}});
      what = absl::StrFormat(
          "MemTotal of the %d NUMA nodes with CPUs "
          "(/sys/devices/system/node/node*/meminfo); /proc/meminfo's MemTotal, %.1f GiB, "
          "also counts %.1f GiB on %d memory-only NUMA nodes (device memory, such as a "
          "GPU's HBM on NVLink-C2C), which is not the host's",
          numa->WithCpus(), total_gib, device_gib, numa->MemoryOnly());
    } else {
      what = absl::StrFormat(
          "MemTotal of /proc/meminfo, which also counts %.1f GiB on %d memory-only NUMA "
          "nodes (device memory): the meminfo of the nodes with CPUs is unreadable",
          device_gib, numa->MemoryOnly());
    }
  }
  const std::string value = absl::StrFormat("%.1f GiB", gib);
  if (gib < o.min_memory_gib) {
    r.Find("memory", v1::SEVERITY_FAIL, value,
           absl::StrFormat("%.1f GiB of memory, expected at least %.1f GiB", gib,
                           o.min_memory_gib),
           what,
           "check for failed DIMMs (`dmidecode -t memory`, BMC event log, EDAC counters) "
           "and memory reserved by kernel parameters (hugepages, crashkernel)");
  } else {
    r.Pass("memory", value, what);
  }
}

// "node0 (CPUs 0-71, 445.6 GiB)" for the human table and evidence.
std::string DescribeNode(const hostcheck::NumaNode& n) {
  std::string mem = n.mem_total_kib
                        ? absl::StrFormat("%.1f GiB", *n.mem_total_kib / kKibPerGib)
                        : "memory unreadable";
  if (n.has_cpus())
    return absl::StrCat("node", n.id, " (CPUs ", n.cpulist, ", ", mem, ")");
  return absl::StrCat("node", n.id, " (", mem, ")");
}

void CheckNuma(const Facts& f, RecordWriter& out, Report& r) {
  if (!f.numa.ok()) {
    r.NotMeasured("numa_nodes", "NUMA nodes", f.numa.status(),
                  "check that /sys/devices/system/node is readable");
    return;
  }
  const hostcheck::NumaTopology& t = *f.numa;
  const int with_cpus = t.WithCpus(), memory_only = t.MemoryOnly(), empty = t.Empty();
  out.Measure("numa_nodes", static_cast<double>(t.nodes.size()), "count");
  out.Measure("numa_nodes_cpu", with_cpus, "count");
  out.Measure(
      "numa_nodes_memory_only", memory_only, "count",
      {{"memory_only_gib", absl::StrFormat("%.1f", t.MemoryOnlyKib() / kKibPerGib)}});
  std::vector<std::string> cpu_nodes, device_nodes;
  for (const auto& n : t.nodes) {
    if (n.has_cpus()) cpu_nodes.push_back(DescribeNode(n));
    if (n.memory_only()) device_nodes.push_back(DescribeNode(n));
  }
  std::string value = absl::StrCat(with_cpus, " with CPUs");
  std::string detail =
      absl::StrCat("node* under /sys/devices/system/node; with CPUs: ",
                   cpu_nodes.empty() ? "none" : absl::StrJoin(cpu_nodes, ", "));
  if (memory_only > 0) {
    absl::StrAppend(&value, ", ", memory_only, " memory-only");
    absl::StrAppend(&detail,
                    "; memory-only (device memory such as a GPU's HBM on NVLink-C2C, "
                    "not a socket): ",
                    absl::StrJoin(device_nodes, ", "));
  }
  if (empty > 0) {
    absl::StrAppend(&value, ", ", empty, " empty");
    absl::StrAppend(&detail, "; ", empty, " with neither CPUs nor memory");
  }
  r.Pass("numa_nodes", value, detail);

  // Only the nodes with CPUs are compared: a memory-only node is not an
  // unbalanced socket.
  std::vector<std::string> imbalances = hostcheck::NumaImbalances(t);
  if (!imbalances.empty()) {
    r.Find("numa_balance", v1::SEVERITY_WARN, "unbalanced",
           "NUMA nodes with CPUs are unbalanced", absl::StrJoin(imbalances, "; "),
           "check for CPUs taken offline on one socket and for failed or missing DIMMs "
           "(`numactl -H`, `dmidecode -t memory`, the BMC event log): ranks bound to the "
           "smaller node run slower",
           imbalances);
  } else if (with_cpus >= 2) {
    const bool mem_known = t.CpuNodeMemKib().has_value();
    r.Pass(
        "numa_balance", "balanced",
        absl::StrCat(with_cpus, " NUMA nodes with CPUs have equal CPU counts",
                     mem_known ? absl::StrFormat(" and memory within %.0f%%",
                                                 100 * (1 - hostcheck::kMinNodeMemRatio))
                               : " (memory per node not readable)",
                     memory_only > 0 ? "; memory-only nodes are not compared" : ""));
  }
}

void CheckCpuMemory(const Options& o, const Facts& f, RecordWriter& out, Report& r) {
  CheckCpus(o, f, out, r);
  CheckMemory(o, f, out, r);
  CheckNuma(f, out, r);
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

// ---- GPU–NIC topology (issue 20, item 1) ----------------------------------

// The value most items have; ties go to the larger.
template <typename T>
T Majority(const std::vector<T>& values) {
  std::map<T, int> n;
  for (const T& v : values) ++n[v];
  T best = values.front();
  int best_n = 0;
  for (const auto& [v, c] : n) {
    if (c >= best_n) {
      best = v;
      best_n = c;
    }
  }
  return best;
}

// Peers: NICs of one PCI vendor:device and one role, GPU-side (sharing a
// PCIe switch with a GPU: the compute rails) or not (storage, in-band), so a
// 200 Gb/s storage NIC is never compared with the 400 Gb/s rails.
struct NicGroup {
  uint32_t vendor = 0, device = 0;
  bool gpu_side = false;
  std::string link_layer;  // ports only
  auto Key() const { return std::make_tuple(vendor, device, gpu_side, link_layer); }
  bool operator<(const NicGroup& o) const { return Key() < o.Key(); }
  std::string Words() const {
    return absl::StrFormat("%s%04x:%04x NICs", gpu_side ? "GPU-side " : "", vendor,
                           device);
  }
};

// A NIC whose active ports run slower, or whose PCIe link is narrower or
// slower, than most of its peers (the value most of them have).
void CheckNicLinks(const hostcheck::Topology& t, const std::set<std::string>& gpu_side,
                   Report& r) {
  if (t.nics.empty()) return;
  // Port rates.
  std::map<NicGroup,
           std::vector<std::pair<const hostcheck::RdmaNic*, const hostcheck::RdmaPort*>>>
      by_layer;
  for (const auto& nic : t.nics) {
    for (const auto& p : nic.ports) {
      if (!p.active() || p.rate_gbps <= 0) continue;
      by_layer[{nic.pci.vendor, nic.pci.device, gpu_side.count(nic.name) > 0,
                p.link_layer}]
          .push_back({&nic, &p});
    }
  }
  int compared = 0, slow = 0;
  for (const auto& [group, ports] : by_layer) {
    const std::string& layer = group.link_layer;
    if (ports.size() < 2) continue;
    std::vector<double> rates;
    for (const auto& np : ports) rates.push_back(np.second->rate_gbps);
    const double ref = Majority(rates);
    int at_ref = static_cast<int>(std::count(rates.begin(), rates.end(), ref));
    compared += static_cast<int>(ports.size());
    for (const auto& [nic, p] : ports) {
      if (p->rate_gbps >= ref) continue;
      ++slow;
      r.Find(
          "nic_rate", v1::SEVERITY_WARN, absl::StrFormat("%g/%g Gb/s", p->rate_gbps, ref),
          absl::StrFormat("%s port %d at %g Gb/s, its peers at %g Gb/s", nic->name,
                          p->port, p->rate_gbps, ref),
          absl::StrFormat("%s port %d (%s, PCI %s) reports rate '%s'; %d of %d active %s "
                          "ports of the %s report %g Gb/s",
                          nic->name, p->port, layer, nic->pci.bdf, p->rate, at_ref,
                          ports.size(), layer, group.Words(), ref),
          "check the cable/transceiver and the switch port's speed setting (`ibstat`, "
          "`mlxlink -d <dev>`): a port that trained at a lower rate slows every "
          "collective that uses its rail",
          {absl::StrCat("/sys/class/infiniband/", nic->name, "/ports/", p->port,
                        "/rate: ", p->rate)},
          absl::StrCat("nic:", nic->name), kNetworking,
          {{"nic", nic->name},
           {"port", absl::StrCat(p->port)},
           {"nic_bdf", nic->pci.bdf}});
    }
  }
  if (slow == 0 && compared > 0) {
    r.Pass("nic_rate", absl::StrCat(compared, " ports"),
           "every active RDMA port runs at its peers' rate");
  }

  // PCIe links.
  std::map<NicGroup, std::vector<const hostcheck::RdmaNic*>> by_model;
  for (const auto& nic : t.nics) {
    if (!nic.pci.bdf.empty() && nic.pci.link.width > 0 && nic.pci.link.speed_gts > 0) {
      by_model[{nic.pci.vendor, nic.pci.device, gpu_side.count(nic.name) > 0, ""}]
          .push_back(&nic);
    }
  }
  compared = 0;
  slow = 0;
  for (const auto& [group, nics] : by_model) {
    if (nics.size() < 2) continue;
    std::vector<int> widths;
    std::vector<double> speeds;
    for (const auto* n : nics) {
      widths.push_back(n->pci.link.width);
      speeds.push_back(n->pci.link.speed_gts);
    }
    const int ref_w = Majority(widths);
    const double ref_s = Majority(speeds);
    compared += static_cast<int>(nics.size());
    for (const auto* n : nics) {
      const auto& l = n->pci.link;
      if (l.width >= ref_w && l.speed_gts >= ref_s) continue;
      ++slow;
      r.Find(
          "nic_pcie", v1::SEVERITY_WARN,
          absl::StrCat("x", l.width, " ", Gts(l.speed_gts)),
          absl::StrCat(n->name, " PCIe link x", l.width, " at ", Gts(l.speed_gts),
                       ", its peers x", ref_w, " at ", Gts(ref_s)),
          absl::StrFormat("%s (PCI %s, %04x:%04x): current_link_width %d, "
                          "current_link_speed %s, max_link_width %d, max_link_speed %s; "
                          "%d %s, most at x%d %s",
                          n->name, n->pci.bdf, n->pci.vendor, n->pci.device, l.width,
                          Gts(l.speed_gts), l.max_width, Gts(l.max_speed_gts),
                          nics.size(), group.Words(), ref_w, Gts(ref_s)),
          absl::StrCat("reseat the NIC or its riser, check the slot's bifurcation in "
                       "the BIOS, compare LnkCap and LnkSta in `lspci -vv -s ",
                       n->pci.bdf,
                       "`: a narrower or slower link caps the NIC below its port rate"),
          {absl::StrCat("/sys/bus/pci/devices/", n->pci.bdf, ": ", LinkText(l))},
          absl::StrCat("nic:", n->name), kNetworking,
          {{"nic", n->name}, {"nic_bdf", n->pci.bdf}});
    }
  }
  if (slow == 0 && compared > 0) {
    r.Pass("nic_pcie", absl::StrCat(compared, " NICs"),
           "every RDMA NIC's PCIe link matches its peers'");
  }
}

void CheckAcs(const Sysroot& root, const std::vector<hostcheck::GpuNicPair>& pairs,
              Report& r) {
  // Bridge -> the GPU–NIC pairs whose peer-to-peer traffic crosses it.
  std::map<std::string, std::vector<std::string>> bridges;
  for (const auto& p : pairs) {
    if (!p.shared_switch) continue;
    for (const auto& b : p.bridges_between) {
      bridges[b].push_back(absl::StrCat(p.gpu_bdf, " <-> ", p.nic->name));
    }
  }
  if (bridges.empty()) return;
  std::vector<std::string> unreadable;
  std::string first_error;
  int redirecting = 0, checked = 0;
  for (const auto& [bdf, between] : bridges) {
    absl::StatusOr<std::optional<uint16_t>> acs = hostcheck::ReadAcsControl(root, bdf);
    if (!acs.ok()) {
      unreadable.push_back(bdf);
      if (first_error.empty()) first_error = std::string(acs.status().message());
      continue;
    }
    ++checked;
    if (!acs->has_value()) continue;  // no ACS capability: nothing redirects
    const uint16_t ctrl = **acs;
    if ((ctrl & (hostcheck::kAcsReqRedir | hostcheck::kAcsCmpltRedir)) == 0) continue;
    ++redirecting;
    const std::string acs_text = hostcheck::DescribeAcsControl(ctrl);
    r.Find("pcie_acs", v1::SEVERITY_FAIL, absl::StrFormat("ACSCtl 0x%04x", ctrl),
           absl::StrCat("ACS redirect enabled on bridge ", bdf, " between GPU and NIC"),
           absl::StrCat(
               "ACSCtl: ", acs_text, " on ", bdf, ", which the peer-to-peer path of ",
               absl::StrJoin(between, ", "),
               " crosses: ReqRedir/CmpltRedir send GPUDirect RDMA traffic up to the "
               "root complex instead of across the switch (slow, or hangs)"),
           absl::StrCat(
               "disable ACS redirection on ", bdf,
               ": in the BIOS (PCIe ACS off), or as root `setpci -s ", bdf,
               " ECAP_ACS+0x6.w=0000` (lost at reboot); see the NCCL troubleshooting "
               "guide, 'PCI Access Control Services (ACS)'"),
           {absl::StrFormat("/sys/bus/pci/devices/%s/config: ACS Control 0x%04x (%s)",
                            bdf, ctrl, acs_text)},
           absl::StrCat("bridge:", bdf), kNetworking, {{"bridge_bdf", bdf}},
           {kNcclAcsDoc});
  }
  if (!unreadable.empty()) {
    r.Find("pcie_acs", v1::SEVERITY_INFO, "-",
           absl::StrCat("ACS not measured on ", unreadable.size(), " of ", bridges.size(),
                        " bridges between GPUs and NICs"),
           absl::StrCat(first_error, " (bridges: ", absl::StrJoin(unreadable, ", "), ")"),
           "run hostcheck as root so it can read the ACS capability from the PCI "
           "configuration space (or check `sudo lspci -vvv | grep ACSCtl`)",
           {}, "node", kNetworking);
  }
  if (redirecting == 0 && checked > 0) {
    r.Pass("pcie_acs", absl::StrCat(checked, " bridges"),
           "no ACS request/completion redirect between any GPU and its NIC");
  }
}

void CheckIommu(const hostcheck::Topology& t, Report& r) {
  if (t.nics.empty()) return;
  const auto& io = t.iommu;
  switch (io.mode) {
    case hostcheck::IommuMode::kTranslated:
      r.Find(
          "iommu", v1::SEVERITY_WARN, "translated",
          "IOMMU translating DMA while GPUDirect RDMA NICs are present",
          absl::StrCat(io.how,
                       ". With the IOMMU in DMA (translated) mode, peer-to-peer DMA "
                       "between NIC and GPU is remapped or blocked and GPUDirect RDMA "
                       "loses bandwidth (NCCL troubleshooting guide)"),
          "on bare metal boot with iommu=pt (passthrough), e.g. `intel_iommu=on "
          "iommu=pt` or `amd_iommu=on iommu=pt`; in a VM keep the IOMMU and enable ATS",
          {}, "node", kNetworking, {}, {kNcclAcsDoc});
      break;
    case hostcheck::IommuMode::kUnknown:
      r.Find("iommu", v1::SEVERITY_INFO, "-", "IOMMU mode not measured", io.how,
             "check `cat /sys/kernel/iommu_groups/*/type` and /proc/cmdline", {}, "node",
             kNetworking);
      break;
    default:
      r.Pass("iommu", hostcheck::IommuModeName(io.mode), io.how);
  }
}

void CheckTopology(const Sysroot& root, const Facts& f, RecordWriter& out, Report& r) {
  if (!f.topo.ok()) {
    r.Find("topology", v1::SEVERITY_INFO, "-", "GPU-NIC topology not measured",
           std::string(f.topo.status().message()),
           "run hostcheck where /sys is mounted (in a container: mount the host's /sys)",
           {}, "node", kNetworking);
    return;
  }
  const hostcheck::Topology& t = *f.topo;
  // Pairs where the GPUs' paths are known (a GPU without one pairs with no
  // switch); the NICs that share a switch with a GPU are the GPU-side peers.
  std::set<std::string> gpu_side;
  if (!t.gpus.empty() && !t.nics.empty()) {
    for (const auto& p : hostcheck::PairGpusWithNics(t)) {
      if (p.shared_switch) gpu_side.insert(p.nic->name);
    }
  }
  CheckNicLinks(t, gpu_side, r);
  for (size_t i = 0; i < t.gpus.size(); ++i) {
    const auto& p = t.gpu_pci[i];
    if (!p.path_known) continue;
    out.Measure("gpu_pcie_path", static_cast<double>(p.upstream.size()), "bridges",
                {{"gpu", absl::StrCat(i)},
                 {"gpu_bdf", p.bdf},
                 {"path", p.path},
                 {"link", LinkText(p.link)},
                 {"numa", absl::StrCat(p.numa_node)}});
  }
  if (t.gpus.empty()) {
    r.Pass("gpu_nic_affinity", "no GPU",
           "no NVIDIA GPU on the PCI bus: no GPU-NIC affinity to check");
    CheckIommu(t, r);
    return;
  }
  if (t.nics.empty()) {
    r.Find("gpu_nic_affinity", v1::SEVERITY_INFO, "-", "GPU-NIC affinity not measured",
           absl::StrCat(
               t.gpus.size(), " GPUs on the PCI bus but no RDMA device (",
               root.Path("/sys/class/infiniband"),
               t.rdma_class_present ? " is empty" : " does not exist",
               "): no NIC to pair them with. If the node has InfiniBand or RoCE NICs, "
               "their RDMA driver (mlx5_ib) is not loaded"),
           "load the RDMA drivers (`modprobe mlx5_ib`, `rdma link`); on a node without "
           "RDMA NICs GPU-NIC affinity does not apply",
           {}, "node", kNetworking);
    return;
  }
  std::vector<std::string> soft;  // RDMA devices on no PCI function (rxe, siw)
  for (const auto& nic : t.nics) {
    if (!nic.pci.path_known) soft.push_back(nic.name);
  }
  if (soft.size() == t.nics.size()) {
    r.Find("gpu_nic_affinity", v1::SEVERITY_INFO, "-", "GPU-NIC affinity not measured",
           absl::StrCat(t.gpus.size(),
                        " GPUs on the PCI bus, but no RDMA device sits on a "
                        "PCI function (",
                        absl::StrJoin(soft, ", "),
                        ": software RDMA such as soft-RoCE, or `device` does not resolve "
                        "into /sys/devices): no NIC to pair them with"),
           "check `rdma link` and the NICs' RDMA driver (mlx5_ib); software RDMA has no "
           "PCIe place and no GPU affinity",
           {}, "node", kNetworking);
    return;
  }
  std::vector<std::string> unknown;
  for (const auto& p : t.gpu_pci) {
    if (!p.path_known) unknown.push_back(p.bdf);
  }
  if (!unknown.empty()) {
    r.Find("gpu_nic_affinity", v1::SEVERITY_INFO, "-", "GPU-NIC affinity not measured",
           absl::StrCat("the PCIe path of ", unknown.size(), " GPUs is unknown (",
                        absl::StrJoin(unknown, ", "),
                        "): /sys/bus/pci/devices/<bdf> does not resolve into "
                        "/sys/devices/pci<domain>:<bus>/..."),
           "run hostcheck on the node's own /sys (a copied tree loses the symlinks)", {},
           "node", kNetworking);
    return;
  }
  std::vector<hostcheck::GpuNicPair> pairs = hostcheck::PairGpusWithNics(t);
  int shared = 0;
  for (size_t i = 0; i < pairs.size(); ++i) {
    const auto& p = pairs[i];
    shared += p.shared_switch;
    std::map<std::string, std::string> labels = {
        {"gpu", absl::StrCat(i)},
        {"gpu_bdf", p.gpu_bdf},
        {"nic", p.nic ? p.nic->name : "none"},
        {"shared_switch", p.shared_switch ? "yes" : "no"},
        {"numa", absl::StrCat(p.gpu_numa)}};
    if (p.nic) {
      labels["nic_bdf"] = p.nic->pci.bdf;
      labels["nic_numa"] = absl::StrCat(p.nic->pci.numa_node);
      if (!p.common_bridge.empty()) labels["common_bridge"] = p.common_bridge;
    }
    out.Measure("gpu_nic_map", p.shared_switch ? 1 : 0, "shared switch", labels);
  }
  // The rule: on HGX/DGX-style nodes every PCIe switch that carries GPUs also
  // carries their RDMA NICs (one NIC per GPU, or one per GPU pair). It is
  // applied where at least one GPU has a NIC under its switch, so the node is
  // built that way; a GPU whose switch has no NIC then sends its RDMA traffic
  // across the root complex (or the CPU interconnect).
  if (shared == 0) {
    r.Pass("gpu_nic_affinity", absl::StrCat("0/", pairs.size()),
           "no GPU shares a PCIe switch with a NIC (NICs on their own root ports): the "
           "NIC-under-every-GPU-switch rule does not apply to this layout");
  } else if (shared == static_cast<int>(pairs.size())) {
    r.Pass("gpu_nic_affinity", absl::StrCat(shared, "/", pairs.size()),
           absl::StrCat("every GPU shares a PCIe switch with an RDMA NIC: ",
                        hostcheck::GpuNicMapFact(pairs)));
  } else {
    for (const auto& p : pairs) {
      if (p.shared_switch || p.nic == nullptr) continue;  // every GPU has one here
      const auto& g = *std::find_if(t.gpu_pci.begin(), t.gpu_pci.end(),
                                    [&](const auto& x) { return x.bdf == p.gpu_bdf; });
      r.Find(
          "gpu_nic_affinity", v1::SEVERITY_WARN, "no NIC on switch",
          absl::StrCat("GPU ", p.gpu_bdf, " has no RDMA NIC under its PCIe switch"),
          absl::StrCat(
              "GPU ", p.gpu_bdf, " (", g.path, ", NUMA ", g.numa_node,
              "): its nearest NIC is ", p.nic->name, " (", p.nic->pci.path, ", NUMA ",
              p.nic->pci.numa_node, ")",
              p.common_bridge.empty()
                  ? ", on another host bridge"
                  : absl::StrCat(", joined only at root port ", p.common_bridge),
              "; ", shared, " of ", pairs.size(),
              " GPUs on this node share a switch with a NIC (rule: every GPU switch "
              "carries a NIC, one per GPU or per GPU pair)"),
          "check that the NIC of this GPU's switch is present and its RDMA driver bound "
          "(`lspci -tv`, `rdma link`, `ibstat`); a NIC in the wrong slot makes "
          "GPUDirect RDMA cross the CPU",
          {absl::StrCat("gpu ", p.gpu_bdf, ": ", g.path),
           absl::StrCat("nearest nic ", p.nic->name, ": ", p.nic->pci.path)},
          absl::StrCat("gpu:", p.gpu_bdf), kNetworking,
          {{"gpu_bdf", p.gpu_bdf}, {"nic", p.nic->name}});
    }
  }
  CheckAcs(root, pairs, r);
  CheckIommu(t, r);
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
  std::printf(
      "\nN/M = not measured; INFO = a fact no check judges. Exit 0: no FAIL; "
      "1: a FAIL; 2: could not run.\n");
}

}  // namespace

int RunHostcheck(int argc, char** argv) {
  Options o;
  SuiteFlags flags("hostcheck", "cmax-bench");
  flags.Bind("expect-gpus", &o.expect_gpus);
  flags.Bind("expect-gpu-model", &o.expect_gpu_model);
  flags.Bind("min-cpu-cores", &o.min_cpu_cores);
  flags.Bind("min-memory-gib", &o.min_memory_gib);
  flags.Bind("min-free-root-pct", &o.min_free_root_pct);
  ArgParser& args = flags.extra();
  args.AddFlag("jsonl", &o.jsonl, "write cmax.v1.Record JSON lines instead of a table");
  args.AddFlag("inventory", &o.inventory, "print the node's Inventory as one JSON line");
  args.AddString("root", &o.root,
                 "system root to read /sys, /proc and /etc under (default /)");
  if (auto rc = flags.Parse(argc, argv)) return *rc;
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
    v1::Inventory inv = BuildInventory(f);
    // The node's NVLink domain (rack) for the scheduler and the scorecard:
    // nvlink_domain (cluster UUID), nvlink_clique (clique ids).
    for (const auto& [k, v] : health::ProbeFabricInventoryFacts(root)) {
      (*inv.mutable_facts())[k] = v;
    }
    std::printf("%s\n", MessageToJsonLine(inv).c_str());
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
  CheckGpuDirectRdma(root, f, report);
  CheckGdrcopy(root, f, report);
  CheckProfilingAccess(root, f, report);
  CheckCpuMemory(o, f, out, report);
  CheckSwap(f, out, report);
  CheckRootDisk(o, f, out, report);
  CheckClock(f, report);
  CheckTopology(root, f, out, report);

  if (!o.jsonl) PrintTable(f, o, report.rows());
  return out.findings_at_or_above(v1::SEVERITY_FAIL) > 0 ? kExitFoundFailures
                                                         : kExitPassed;
}

}  // namespace cmax::bench
