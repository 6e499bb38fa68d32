// health: passive, one-shot node health — GPUs through NVML (with NVLinks
// against the platform, fabric registration, the NVLink domain and fabric
// health mask), NVSwitches and the Fabric Manager, IMEX on multi-node NVLink
// trays, NVIDIA Xid and SXid events in the kernel log, InfiniBand and RoCE
// ports from sysfs.
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "benchmarks/health/fabric_checks.h"
#include "benchmarks/health/fabric_domain.h"
#include "benchmarks/health/file_gpu_probe.h"
#include "benchmarks/health/gpu_checks.h"
#include "benchmarks/health/health_result.h"
#include "benchmarks/health/health_run.h"
#include "benchmarks/health/ib_ports.h"
#include "benchmarks/health/kernel_log.h"
#include "benchmarks/health/nvlink_checks.h"
#include "benchmarks/health/nvlink_platforms.h"
#include "benchmarks/health/nvml_loader.h"
#include "benchmarks/health/pci_gpus.h"
#include "benchmarks/health/thresholds.h"
#include "benchmarks/health/xid_catalog.h"
#include "benchmarks/health/xid_checks.h"
#include "benchmarks/suite.h"
#include "common/allowed_files.h"
#include "common/suite_flags.h"
#include "common/record_io.h"
#include "common/sysroot.h"

namespace cmax::health {

HealthRun RunHealthChecks(const Sysroot& root, const XidCatalog& catalog,
                          const HealthOptions& options, GpuProbe* probe) {
  HealthRun run;
  HealthResult& result = run.result;

  // GPUs.
  std::vector<PciGpu> pci = ListNvidiaGpus(root);
  run.pci_gpus = pci.size();
  std::unique_ptr<GpuProbe> owned;
  if (!probe && root.is_real()) {
    owned = std::make_unique<NvmlGpuProbe>();
  } else if (!probe && root.Exists("/cmax-fixture/gpus.yaml")) {
    owned = std::make_unique<FileGpuProbe>(root.Path("/cmax-fixture/gpus.yaml"));
  }
  if (!probe) probe = owned.get();
  absl::StatusOr<GpuInventory> inventory =
      probe ? probe->Probe()
            : absl::UnavailableError(absl::StrCat(
                  "root ", root.root(),
                  " has no cmax-fixture/gpus.yaml and NVML describes only the real machine"));
  CheckGpus(inventory, pci, options.thresholds, options.expect_gpus, &result);
  run.gpus_measured = inventory.ok();

  // NVLinks, NVSwitches and the Fabric Manager.
  std::vector<std::string> switches = ListNvSwitches(root);
  const NvLinkPlatforms& platforms = NvLinkPlatforms::Default();
  if (inventory.ok()) {
    for (const auto& g : inventory->gpus) {
      CheckNvLinks(g, options.thresholds, !switches.empty(), &result);
      CheckNvLinkPlatform(g, platforms.Find(g.name), &result);
    }
  }
  CheckFabric(switches, FindProcessByName(root, "nv-fabricmanager"), inventory, &result);
  // The NVLink domain (cluster UUID, clique, health mask) and IMEX.
  CheckFabricDomain(switches, pci.size(), inventory, ReadImex(root), platforms, &result);

  // Kernel log.
  auto log = ReadKernelLog(root, options.kernel_log);
  run.kernel_log_measured = log.ok();
  if (!log.ok()) {
    v1::Finding& f = result.Find(
        "health.kernel_log_unreadable", v1::SEVERITY_WARN, "reliability", "node",
        "kernel log not readable: Xids not measured", std::string(log.status().message()),
        "give the agent CAP_SYSLOG (or run it as root) or membership of systemd-journal/adm, or "
        "set kernel.dmesg_restrict=0; until then Xids on this node are unknown");
    // Xids were not looked for: not measured, never "no Xids" (the WARN
    // severity stays as a hint for readers of the raw records).
    f.set_not_measured(true);
    f.add_evidence(std::string(log.status().message()));
    result.Log("warn", absl::StrCat("Xids not measured: ", log.status().message()));
  } else {
    XidContext ctx;
    ctx.gpus = pci;
    ctx.uuids = ParseGpuUuidLines(log->lines);
    if (inventory.ok()) {
      for (const auto& g : inventory->gpus) {
        std::string p = NormalizePciAddress(g.pci_bus_id);
        if (!p.empty() && !g.uuid.empty()) ctx.uuids[p] = g.uuid;
      }
    }
    ctx.kills = ReadKills(root);
    ctx.boot_unix_ns = ReadBootTimeNs(root);
    ctx.source = log->source;
    CheckXids(ParseXidEvents(log->lines), catalog, ctx, &result);
  }

  // InfiniBand / RoCE.
  CheckIbPorts(ReadIbPorts(root), options.thresholds, &result);
  return run;
}

}  // namespace cmax::health

namespace cmax::bench {
namespace {

using health::HealthResult;

void PrintHuman(const HealthResult& r) {
  int shown = 0;
  for (const auto& f : r.findings) {
    std::printf("%-8s %-18s %s\n", SeverityName(f.severity()).c_str(), f.subject().c_str(),
                f.title().c_str());
    if (!f.action().empty()) std::printf("         action: %s\n", f.action().c_str());
    ++shown;
  }
  if (shown == 0) std::printf("no findings\n");
  for (const auto& l : r.logs) std::printf("log: %s\n", l.c_str());
}

}  // namespace

int RunHealth(int argc, char** argv) {
  std::string root_dir = "/";
  bool jsonl = false;
  int64_t expect_gpus = -1;
  double expect_ib_rate = 0;
  std::string thresholds_file;
  std::string threshold_overrides;
  SuiteFlags flags("health", "cmax-bench");
  flags.Bind("expect-gpus", &expect_gpus);
  flags.Bind("expect-ib-rate", &expect_ib_rate);
  flags.Bind("thresholds", &thresholds_file);
  flags.Bind("set", &threshold_overrides);
  flags.extra().AddString("root", &root_dir, "system root to read (fixture trees); default /");
  flags.extra().AddFlag("jsonl", &jsonl, "write records as JSON lines");
  if (auto rc = flags.Parse(argc, argv)) return *rc;
  auto thresholds = health::DefaultThresholds();
  if (thresholds.ok() && !thresholds_file.empty()) {
    // A plan names this file and the suite runs as root: only where the
    // agent allows, bounded, and never quoted back (common/allowed_files.h).
    const auto allowed = DirsFromEnv(kAllowReadEnv);
    auto text = ReadPlanFile("thresholds", thresholds_file, allowed);
    if (!text.ok()) {
      std::fprintf(stderr, "health: %s\n", std::string(text.status().message()).c_str());
      return kExitCouldNotRun;
    }
    thresholds = health::ParseThresholds(*text, *thresholds);
    // Under the agent (CMAX_ALLOW_READ set) stderr reaches the coordinator:
    // line and column only. By hand, the parser's own words (below).
    if (!thresholds.ok() && allowed.has_value()) {
      std::fprintf(stderr, "health: %s\n",
                   ParseErrorWithoutContent("thresholds", thresholds_file, "thresholds file",
                                            thresholds.status())
                       .c_str());
      return kExitCouldNotRun;
    }
  }
  if (thresholds.ok() && !threshold_overrides.empty()) {
    thresholds = health::ParseThresholdOverrides(threshold_overrides, *thresholds);
  }
  if (!thresholds.ok()) {
    std::fprintf(stderr, "health: %s\n", std::string(thresholds.status().message()).c_str());
    return kExitCouldNotRun;
  }
  if (expect_ib_rate > 0) thresholds->expect_rate_gbps = expect_ib_rate;
  auto catalog = health::XidCatalog::LoadDefault();
  if (!catalog.ok()) {
    std::fprintf(stderr, "health: %s\n", std::string(catalog.status().message()).c_str());
    return kExitCouldNotRun;
  }

  Sysroot root(root_dir);
  // A root with none of /sys, /proc, /dev and cmax-fixture (or no directory
  // at all) is not a system root: every count read under it would be a zero
  // that nobody measured. Could not run, with the evidence.
  if (!root.Exists("/sys") && !root.Exists("/proc") && !root.Exists("/dev") &&
      !root.Exists("/cmax-fixture")) {
    const std::string why = absl::StrCat("nothing readable under --root '", root_dir,
                                         "': no sys, proc, dev or cmax-fixture in it");
    RecordWriter out("health", jsonl ? stdout : nullptr);
    out.Log("error", absl::StrCat("health could not run: ", why));
    out.NotMeasured("health.not_measured", "reliability", "node",
                    "not measured: health could not run", why,
                    "point --root at a system root (default /)");
    std::fprintf(stderr, "health: %s\n", why.c_str());
    return kExitCouldNotRun;
  }
  health::HealthOptions options;
  options.expect_gpus = static_cast<int>(expect_gpus);
  options.thresholds = *thresholds;
  health::HealthRun run = health::RunHealthChecks(root, *catalog, options);
  const HealthResult& result = run.result;

  RecordWriter out("health", jsonl ? stdout : nullptr);
  for (const auto& m : result.measurements) {
    std::map<std::string, std::string> labels(m.labels().begin(), m.labels().end());
    out.Measure(m.metric(), m.value(), m.unit(), labels);
  }
  for (const auto& f : result.findings) out.Find(f);
  for (const auto& l : result.logs) {
    size_t colon = l.find(": ");
    out.Log(l.substr(0, colon), l.substr(colon + 2));
  }
  if (!jsonl) PrintHuman(result);

  v1::Severity worst = result.WorstSeverity();
  if (worst >= v1::SEVERITY_FAIL) return kExitFoundFailures;
  if (!run.gpus_measured && !run.kernel_log_measured && run.pci_gpus > 0) {
    return kExitCouldNotRun;
  }
  return kExitPassed;
}

}  // namespace cmax::bench
