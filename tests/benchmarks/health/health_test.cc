// Passive health against fixture roots (tests/fixtures/health/, see NOTE.md):
// each fixture gives the right finding, severity and action; the healthy one
// gives none.
#include <errno.h>
#include <stdlib.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <optional>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "benchmarks/health/fabric_checks.h"
#include "benchmarks/health/file_gpu_probe.h"
#include "benchmarks/health/gpu_checks.h"
#include "benchmarks/health/health_run.h"
#include "benchmarks/health/ib_ports.h"
#include "benchmarks/health/kernel_log.h"
#include "benchmarks/health/nvlink_checks.h"
#include "benchmarks/health/thresholds.h"
#include "benchmarks/health/xid_catalog.h"
#include "benchmarks/health/xid_checks.h"
#include "common/subprocess.h"
#include "tests/benchmarks/suite_run.h"

namespace fs = std::filesystem;
using namespace cmax;
using namespace cmax::health;

namespace {

const fs::path kFixtures = fs::path(CMAX_SOURCE_DIR) / "tests/fixtures/health";

// Copies `overlay` onto `dst`, replacing files by directories and back.
void Overlay(const fs::path& overlay, const fs::path& dst) {
  for (const auto& e : fs::recursive_directory_iterator(overlay)) {
    fs::path target = dst / fs::relative(e.path(), overlay);
    if (e.is_directory()) {
      if (fs::exists(target) && !fs::is_directory(target)) fs::remove(target);
      fs::create_directories(target);
    } else {
      if (fs::is_directory(target)) fs::remove_all(target);
      fs::create_directories(target.parent_path());
      fs::copy_file(e.path(), target, fs::copy_options::overwrite_existing);
    }
  }
}

// healthy/ plus the named overlay, in a fresh temporary directory.
std::string ComposeRoot(const std::string& overlay) {
  char tmpl[] = "/tmp/cmax-health-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  fs::path root(tmpl);
  Overlay(kFixtures / "healthy", root);
  if (!overlay.empty()) Overlay(kFixtures / overlay, root);
  return root.string();
}

const XidCatalog& Catalog() {
  static const XidCatalog* c = [] {
    auto loaded = XidCatalog::LoadDefault();
    REQUIRE(loaded.ok());
    return new XidCatalog(*loaded);
  }();
  return *c;
}

HealthRun Run(const std::string& overlay, double expect_rate = 0, int expect_gpus = 4) {
  std::string root = ComposeRoot(overlay);
  HealthOptions opts;
  auto t = DefaultThresholds();
  REQUIRE(t.ok());
  opts.thresholds = *t;
  opts.thresholds.expect_rate_gbps = expect_rate;
  opts.expect_gpus = expect_gpus;
  HealthRun run = RunHealthChecks(Sysroot(root), Catalog(), opts);
  fs::remove_all(root);
  return run;
}

std::string Dump(const HealthResult& r) {
  std::string s;
  for (const auto& f : r.findings) {
    s += SeverityName(f.severity()) + " " + f.check_id() + " " + f.subject() + " " + f.title() +
         "\n";
  }
  return s;
}

const v1::Finding& Only(const HealthResult& r, const std::string& id) {
  auto found = r.FindingsWithId(id);
  INFO(Dump(r));
  REQUIRE(found.size() == 1);
  return *found[0];
}

bool HasMetric(const HealthResult& r, const std::string& metric) {
  for (const auto& m : r.measurements) {
    if (m.metric() == metric) return true;
  }
  return false;
}

// The value of `metric` labelled gpu=`gpu` ("" for node-wide ones); nullopt when absent.
std::optional<double> MetricValue(const HealthResult& r, const std::string& metric,
                                  const std::string& gpu = "") {
  for (const auto& m : r.measurements) {
    if (m.metric() != metric) continue;
    auto it = m.labels().find("gpu");
    std::string has = it == m.labels().end() ? "" : it->second;
    if (has == gpu) return m.value();
  }
  return std::nullopt;
}

}  // namespace

TEST_CASE("the Xid catalogue covers the fatal set and cites NVIDIA", "[health]") {
  for (int code : {13, 31, 43, 45, 48, 61, 62, 63, 64, 68, 69, 74, 79, 92, 94, 95, 119, 120, 140}) {
    INFO("Xid " << code);
    CHECK(Catalog().Knows(code));
    XidInfo info = Catalog().Lookup(code);
    CHECK(absl::StrContains(info.source, "docs.nvidia.com/deploy/xid-errors"));
    CHECK_FALSE(info.advice.empty());
  }
  CHECK(Catalog().Lookup(79).severity == v1::SEVERITY_CRITICAL);
  CHECK(Catalog().Lookup(79).action == "drain_inspect");
  CHECK(Catalog().Lookup(43).severity == v1::SEVERITY_WARN);
  CHECK(Catalog().Lookup(9999).name == "unknown Xid 9999");
  CHECK_FALSE(XidCatalog::Parse("xids: [{code: 1, name: x, severity: bad, action: reboot, "
                                "advice: y, source: z}]")
                  .ok());
}

TEST_CASE("a healthy node gives no findings", "[health]") {
  HealthRun run = Run("", 400);
  INFO(Dump(run.result));
  CHECK(run.result.findings.empty());
  CHECK(run.gpus_measured);
  CHECK(run.kernel_log_measured);
  CHECK(run.pci_gpus == 4);  // the NVSwitch (bridge class) is not a GPU
  CHECK(HasMetric(run.result, "xid_events_total"));
  CHECK(HasMetric(run.result, "ib_counter"));
  // NVLinks all up, four NVSwitches, the Fabric Manager found by its 15-character comm.
  CHECK(MetricValue(run.result, "nvswitch_count") == 4);
  CHECK(MetricValue(run.result, "fabric_manager_running") == 1);
  for (const char* gpu : {"0", "1", "2", "3"}) {
    INFO("GPU " << gpu);
    CHECK(MetricValue(run.result, "nvlink_links_active", gpu) == 18);
    CHECK(MetricValue(run.result, "nvlink_links_down", gpu) == 0);
    CHECK(MetricValue(run.result, "nvlink_crc_flit_errors", gpu) == 0);
  }
}

TEST_CASE("Xid 79 is critical on GPU 0 with its UUID, drain and inspect", "[health]") {
  HealthRun run = Run("xid79");
  const v1::Finding& f = Only(run.result, "health.xid");
  CHECK(f.severity() == v1::SEVERITY_CRITICAL);
  CHECK(f.subject() == "gpu:0");
  CHECK(f.labels().at("uuid") == "GPU-2c0d5d0a-1f3e-4b8e-9c2a-0a1b2c3d4e01");
  CHECK(f.labels().at("xid") == "79");
  CHECK(absl::StartsWith(f.action(), "drain and inspect hardware"));
  CHECK(absl::StrContains(f.evidence(0), "GPU has fallen off the bus"));
  CHECK(run.result.WorstSeverity() == v1::SEVERITY_CRITICAL);
}

TEST_CASE("Xid 48, 63 and 94 get their own severities and actions", "[health]") {
  HealthRun run = Run("xid48_63_94");
  auto found = run.result.FindingsWithId("health.xid");
  INFO(Dump(run.result));
  REQUIRE(found.size() == 3);
  std::map<std::string, const v1::Finding*> by_code;
  for (const auto* f : found) by_code[f->labels().at("xid")] = f;
  REQUIRE(by_code.count("48"));
  CHECK(by_code["48"]->severity() == v1::SEVERITY_CRITICAL);
  CHECK(by_code["48"]->subject() == "gpu:1");
  CHECK(absl::StartsWith(by_code["48"]->action(), "reset GPU"));
  REQUIRE(by_code.count("63"));
  CHECK(by_code["63"]->severity() == v1::SEVERITY_WARN);
  CHECK(absl::StartsWith(by_code["63"]->action(), "reset GPU"));
  REQUIRE(by_code.count("94"));
  CHECK(by_code["94"]->severity() == v1::SEVERITY_WARN);
  CHECK(by_code["94"]->subject() == "gpu:2");
  CHECK(absl::StartsWith(by_code["94"]->action(), "check the application"));
  CHECK(absl::StrContains(by_code["94"]->title(), "2 times"));
  CHECK(by_code["94"]->labels().at("uuid") == "GPU-c3f08e17-9a62-4f5d-b0c4-1e2d3f4a5b03");
}

TEST_CASE("an unreadable kernel log is not measured, never 'no Xids'", "[health]") {
  HealthRun run = Run("kmsg_unreadable");
  const v1::Finding& f = Only(run.result, "health.kernel_log_unreadable");
  CHECK(f.severity() == v1::SEVERITY_WARN);
  CHECK(f.not_measured());
  CHECK(f.title() == "kernel log not readable: Xids not measured");
  CHECK_FALSE(run.kernel_log_measured);
  CHECK_FALSE(HasMetric(run.result, "xid_events_total"));
  CHECK_FALSE(HasMetric(run.result, "xid_count"));
}

TEST_CASE("EPERM on /dev/kmsg (dmesg_restrict) is PERMISSION_DENIED", "[health]") {
  std::string root = ComposeRoot("");
  KernelLogOptions opts;
  opts.open_fn = [](const char*, int) {
    errno = EPERM;
    return -1;
  };
  auto log = ReadKernelLog(Sysroot(root), opts);
  CHECK(absl::IsPermissionDenied(log.status()));
  CHECK(absl::StrContains(log.status().message(), "dmesg_restrict"));
  fs::remove_all(root);
}

TEST_CASE("an InfiniBand port down fails in networking", "[health]") {
  HealthRun run = Run("ib_port_down", 400);
  const v1::Finding& f = Only(run.result, "health.ib_port_down");
  CHECK(f.severity() == v1::SEVERITY_FAIL);
  CHECK(f.category() == "networking");
  CHECK(f.subject() == "port:mlx5_1/1");
  CHECK(absl::StrContains(f.action(), "cable"));
  CHECK(run.result.FindingsWithId("health.ib_port_rate").empty());  // down says it all
}

TEST_CASE("a port at half rate fails against the expectation, warns without one", "[health]") {
  HealthRun with = Run("ib_half_rate", 400);
  const v1::Finding& f = Only(with.result, "health.ib_port_rate");
  CHECK(f.severity() == v1::SEVERITY_FAIL);
  CHECK(f.subject() == "port:mlx5_1/1");
  CHECK(absl::StrContains(f.title(), "200 Gb/sec"));
  HealthRun without = Run("ib_half_rate", 0);
  CHECK(Only(without.result, "health.ib_port_rate").severity() == v1::SEVERITY_WARN);
}

TEST_CASE("a saturated symbol_error counter is reported as saturated", "[health]") {
  HealthRun run = Run("ib_symbol_error_saturated", 400);
  const v1::Finding& f = Only(run.result, "health.ib_counter_saturated");
  CHECK(f.severity() == v1::SEVERITY_WARN);
  CHECK(f.subject() == "port:mlx5_0/1");
  CHECK(f.labels().at("counter") == "symbol_error");
  CHECK(absl::StrContains(f.detail(), "16 bits"));
  CHECK(run.result.FindingsWithId("health.ib_counter").empty());
}

TEST_CASE("a RoCE port is recognised and checked, not failed", "[health]") {
  HealthRun run = Run("roce_port", 400);
  const v1::Finding& f = Only(run.result, "health.roce_port");
  CHECK(f.severity() == v1::SEVERITY_INFO);
  CHECK(f.labels().at("netdev") == "ens2f0np0");
  CHECK(absl::StrContains(f.title(), "RoCE v2"));
  CHECK(run.result.WorstSeverity() == v1::SEVERITY_INFO);
}

TEST_CASE("Xid 43 right after cmax killed a task is attributed to cmax", "[health]") {
  XidContext ctx;
  ctx.gpus = {{0, "0000:18:00.0", "0000:18:00"}};
  ctx.boot_unix_ns = int64_t{1717000000} * 1000000000;
  ctx.source = "kmsg";
  // The kill at boot + 100 s; Xid 43 at boot + 105 s, Xid 43 on another GPU much later.
  ctx.kills = {{*ctx.boot_unix_ns + int64_t{100} * 1000000000, 4242}};
  std::vector<KernelLogLine> lines = {
      {105.0, "NVRM: Xid (PCI:0000:18:00): 43, pid=4243, name=cmax-bench-cuda, Ch 00000008"},
      {900.0, "NVRM: Xid (PCI:0000:2a:00): 43, pid=777, name=python, Ch 00000010"}};
  HealthResult r;
  CheckXids(ParseXidEvents(lines), Catalog(), ctx, &r);
  const v1::Finding& mine = Only(r, "health.xid_cmax_kill");
  CHECK(mine.severity() == v1::SEVERITY_INFO);
  CHECK(mine.subject() == "gpu:0");
  const v1::Finding& theirs = Only(r, "health.xid");
  CHECK(theirs.severity() == v1::SEVERITY_WARN);
}

TEST_CASE("kernel log lines parse from kmsg and the journal", "[health]") {
  auto k = ParseKmsgRecord("4,2952,812345702,-;NVRM: Xid (PCI:0000:18:00): 79, pid=12, x");
  REQUIRE(k);
  CHECK(k->mono_s == Approx(812.345702));
  CHECK_FALSE(ParseKmsgRecord(" SUBSYSTEM=pci"));
  auto j = ParseJournalLine("[  812.345702] gpu-node-07 kernel: NVRM: Xid (PCI:0000:18:00): 79, x");
  REQUIRE(j);
  CHECK(j->text == "NVRM: Xid (PCI:0000:18:00): 79, x");
  auto events = ParseXidEvents(
      {*k, {1, "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Fatal, Link 32 egress error"}});
  REQUIRE(events.size() == 2);
  CHECK(events[0].code == 79);
  CHECK(events[0].pid == 12);
  CHECK(events[0].pci == "0000:18:00");
  CHECK(events[1].sxid);
  CHECK(events[1].fatal);
  CHECK(NormalizePciAddress("00000000:18:00.0") == "0000:18:00");
}

TEST_CASE("GPU checks: DBE, pending remap, narrow link, throttling, and no NVML is not measured",
          "[health]") {
  auto t = DefaultThresholds();
  REQUIRE(t.ok());
  GpuInventory inv;
  GpuState g;
  g.index = 3;
  g.uuid = "GPU-x";
  g.volatile_dbe = 2;
  g.remap_pending = true;
  g.pcie_width = 8;
  g.pcie_max_width = 16;
  g.throttle_reasons = 0x1 | 0x8;  // GpuIdle (masked) + HwSlowdown
  inv.gpus.push_back(g);
  HealthResult r;
  CheckGpus(inv, {}, *t, -1, &r);
  CHECK(Only(r, "health.ecc_volatile_dbe").severity() == v1::SEVERITY_FAIL);
  CHECK(Only(r, "health.row_remap_pending").subject() == "gpu:3");
  CHECK(absl::StrContains(Only(r, "health.pcie_width").title(), "x8 of x16"));
  const v1::Finding& th = Only(r, "health.throttle");
  CHECK(absl::StrContains(th.title(), "HwSlowdown"));
  CHECK_FALSE(absl::StrContains(th.title(), "GpuIdle"));

  HealthResult none;
  CheckGpus(absl::UnavailableError("dlopen libnvidia-ml.so.1: not found"),
            {{0, "0000:18:00.0", "0000:18:00"}}, *t, 1, &none);
  const v1::Finding& nm = Only(none, "health.gpu_not_measured");
  CHECK(nm.severity() == v1::SEVERITY_INFO);
  CHECK(nm.not_measured());
  CHECK_FALSE(HasMetric(none, "gpu_count"));
  CHECK_FALSE(none.logs.empty());
}

TEST_CASE("a node the plan says has no GPU, and none on the bus, is measured as such",
          "[health]") {
  auto t = DefaultThresholds();
  REQUIRE(t.ok());
  const auto no_nvml = absl::UnavailableError("dlopen libnvidia-ml.so.1: not found");
  // expect-gpus 0 (the remediation verify of a CPU node) and an empty bus.
  HealthResult cpu_node;
  CheckGpus(no_nvml, {}, *t, 0, &cpu_node);
  const v1::Finding& f = Only(cpu_node, "health.no_gpu");
  CHECK(f.severity() == v1::SEVERITY_INFO);
  CHECK_FALSE(f.not_measured());
  CHECK(cpu_node.findings.size() == 1);
  // Without the expectation the same node is not measured, as before.
  HealthResult unknown;
  CheckGpus(no_nvml, {}, *t, -1, &unknown);
  CHECK(Only(unknown, "health.gpu_not_measured").not_measured());
  // A GPU on the bus with no NVML is not measured whatever the plan expects.
  HealthResult gpu_on_bus;
  CheckGpus(no_nvml, {{0, "0000:18:00.0", "0000:18:00"}}, *t, 0, &gpu_on_bus);
  CHECK(Only(gpu_on_bus, "health.gpu_not_measured").not_measured());
}

TEST_CASE("the driver's recovery action fails the GPU with what to do", "[health]") {
  auto t = DefaultThresholds();
  REQUIRE(t.ok());
  GpuInventory inv;
  GpuState ok_gpu;
  ok_gpu.index = 0;
  ok_gpu.uuid = "GPU-aaaa";
  ok_gpu.recovery_action = 0;
  GpuState reboot = ok_gpu;
  reboot.index = 5;
  reboot.uuid = "GPU-bbbb";
  reboot.pci_bus_id = "00000000:9a:00.0";
  reboot.recovery_action = 2;  // NVML_GPU_RECOVERY_ACTION_NODE_REBOOT
  GpuState unknown = ok_gpu;
  unknown.index = 6;
  unknown.recovery_action = 9;
  inv.gpus = {ok_gpu, reboot, unknown};
  HealthResult r;
  CheckGpus(inv, {}, *t, -1, &r);
  auto found = r.FindingsWithId("health.recovery_action");
  REQUIRE(found.size() == 2);
  const v1::Finding& f = *found[0];
  CHECK(f.severity() == v1::SEVERITY_FAIL);
  CHECK(f.subject() == "gpu:5");
  CHECK(absl::StrContains(f.title(), "needs a node reboot"));
  CHECK(absl::StrContains(f.action(), "reboot the node"));
  CHECK(absl::StrContains(found[1]->title(), "recovery action 9"));
  CHECK(HasMetric(r, "gpu_recovery_action"));

  // The healthy fixture reads recovery action 0 on every GPU: no finding.
  HealthRun run = Run("");
  CHECK(run.result.FindingsWithId("health.recovery_action").empty());
}

TEST_CASE("thresholds override by file, unknown keys are errors", "[health]") {
  auto t = DefaultThresholds();
  REQUIRE(t.ok());
  CHECK(t->retired_pages_fail == 63);
  auto o = ParseThresholds("infiniband: {expect_rate_gbps: 200}\n", *t);
  REQUIRE(o.ok());
  CHECK(o->expect_rate_gbps == 200);
  CHECK(o->retired_pages_fail == 63);
  CHECK_FALSE(ParseThresholds("gpu: {no_such_key: 1}\n", *t).ok());
}

TEST_CASE("a plan overrides thresholds inline with section.key:value", "[health]") {
  auto t = DefaultThresholds();
  REQUIRE(t.ok());
  auto o = ParseThresholdOverrides("nvlink.crc_flit_warn:500,gpu.pcie_replay_warn:7", *t);
  REQUIRE(o.ok());
  CHECK(o->nvlink_crc_flit_warn == 500);
  CHECK(o->pcie_replay_warn == 7);
  CHECK(o->retired_pages_fail == t->retired_pages_fail);
  for (const char* bad : {"nvlink.crc_flit_warn", "crc_flit_warn:5", "gpu.no_such_key:1",
                          "nosection.x:1", "gpu.pcie_replay_warn:many", ".x:1", "gpu.:1"}) {
    INFO(bad);
    CHECK(ParseThresholdOverrides(bad, *t).status().code() == absl::StatusCode::kInvalidArgument);
  }

  // End to end: the CRC count that warns by default is accepted under a raised threshold.
  std::string bench = std::string(CMAX_TEST_BIN_DIR) + "/cmax-bench";
  std::string root = ComposeRoot("nvlink_down");
  auto strict = RunCommand({bench, "health", "--root", root, "--jsonl"}, std::chrono::seconds(30));
  auto lenient = RunCommand({bench, "health", "--root", root, "--jsonl", "--set",
                              "nvlink.crc_flit_warn:1000"},
                            std::chrono::seconds(30));
  auto malformed = RunCommand({bench, "health", "--root", root, "--set", "nvlink.crc_flit_warn"},
                              std::chrono::seconds(30));
  fs::remove_all(root);
  REQUIRE(strict.ok());
  REQUIRE(lenient.ok());
  REQUIRE(malformed.ok());
  CHECK(absl::StrContains(strict->out, "health.nvlink_errors"));
  CHECK_FALSE(absl::StrContains(lenient->out, "health.nvlink_errors"));
  CHECK(absl::StrContains(lenient->out, "health.nvlink_down"));  // the down link still fails
  CHECK(malformed->exit.code == 2);
  CHECK(absl::StrContains(malformed->err, "expected section.key:value"));
}

TEST_CASE("cmax-bench health --root writes records and exits by severity", "[health]") {
  std::string bench = std::string(CMAX_TEST_BIN_DIR) + "/cmax-bench";
  std::string healthy = ComposeRoot("");
  auto ok = testing::RunSuite("cmax-bench",
                              {"health", "--root", healthy, "--jsonl", "--expect-gpus", "4",
                               "--expect-ib-rate", "400"},
                              std::chrono::seconds(30));
  INFO(ok.out << ok.err);
  CHECK(ok.exit_code == 0);
  int measurements = 0, findings = 0;
  for (const auto& rec : ok.records) {
    measurements += rec.has_measurement();
    findings += rec.has_finding();
  }
  CHECK(measurements > 10);
  CHECK(findings == 0);
  fs::remove_all(healthy);

  std::string bad = ComposeRoot("xid79");
  auto fail = RunCommand({bench, "health", "--root", bad}, std::chrono::seconds(30));
  REQUIRE(fail.ok());
  CHECK(fail->exit.code == 1);
  CHECK(absl::StrContains(fail->out, "critical"));
  CHECK(absl::StrContains(fail->out, "Xid 79"));
  fs::remove_all(bad);
}

TEST_CASE("an NVLink down fails on its GPU, and a CRC count over threshold warns", "[health]") {
  HealthRun run = Run("nvlink_down");
  const v1::Finding& down = Only(run.result, "health.nvlink_down");
  CHECK(down.severity() == v1::SEVERITY_FAIL);
  CHECK(down.subject() == "gpu:2");
  CHECK(down.labels().at("nvlink") == "5");
  CHECK(down.labels().at("uuid") == "GPU-c3f08e17-9a62-4f5d-b0c4-1e2d3f4a5b03");
  CHECK(down.labels().at("pci_bus_id") == "00000000:3a:00.0");
  CHECK(absl::StrContains(down.title(), "NVLink 5 is down"));
  CHECK(absl::StartsWith(down.action(), "reset GPU"));
  CHECK(absl::StrContains(down.action(), "reseat"));
  CHECK(absl::StrContains(down.action(), "NVSwitch"));
  CHECK(MetricValue(run.result, "nvlink_links_down", "2") == 1);
  CHECK(MetricValue(run.result, "nvlink_links_active", "2") == 17);

  const v1::Finding& crc = Only(run.result, "health.nvlink_errors");
  CHECK(crc.severity() == v1::SEVERITY_WARN);
  CHECK(crc.subject() == "gpu:1");
  CHECK(crc.labels().at("nvlink") == "3");
  CHECK(absl::StrContains(crc.title(), "crc_flit 250 (threshold 100)"));
  CHECK(MetricValue(run.result, "nvlink_crc_flit_errors", "1") == 250);
  CHECK(run.result.FindingsWithId("health.fabric_manager_down").empty());
  CHECK(run.result.WorstSeverity() == v1::SEVERITY_FAIL);
}

TEST_CASE("NVSwitches without a Fabric Manager fail, and so does every unregistered GPU",
          "[health]") {
  HealthRun run = Run("fabric_manager_down");
  const v1::Finding& fm = Only(run.result, "health.fabric_manager_down");
  CHECK(fm.severity() == v1::SEVERITY_FAIL);
  CHECK(fm.subject() == "node");
  CHECK(absl::StrContains(fm.title(), "4 NVSwitches"));
  CHECK(absl::StrContains(fm.action(), "systemctl enable --now nvidia-fabricmanager"));
  CHECK(absl::StrContains(fm.action(), "version must match the driver"));
  CHECK(absl::StrContains(fm.evidence(0), "0000:05:00.0"));
  CHECK(MetricValue(run.result, "fabric_manager_running") == 0);
  auto gpus = run.result.FindingsWithId("health.fabric_registration");
  INFO(Dump(run.result));
  REQUIRE(gpus.size() == 4);
  std::set<std::string> subjects;
  for (const auto* f : gpus) {
    CHECK(f->severity() == v1::SEVERITY_FAIL);
    CHECK(f->labels().at("fabric_state") == "NOT_STARTED");
    CHECK(absl::StrContains(f->action(), "systemctl enable --now nvidia-fabricmanager"));
    subjects.insert(f->subject());
  }
  CHECK(subjects == std::set<std::string>{"gpu:0", "gpu:1", "gpu:2", "gpu:3"});
  CHECK(run.result.FindingsWithId("health.nvlink_down").empty());
}

TEST_CASE("without NVSwitches there are no fabric findings, only an info line", "[health]") {
  GpuInventory inv;
  GpuState g;
  g.index = 0;
  // No fabric (NOT_SUPPORTED): nothing to register with. A GPU that does
  // report a registration without a local switch (GB200 NVL72) is checked:
  // tests/benchmarks/cuda/gpu_host_test.cc.
  g.fabric_state = FabricState::kNotSupported;
  inv.gpus.push_back(g);
  HealthResult r;
  CheckFabric({}, std::nullopt, inv, &r);
  CHECK(r.findings.empty());
  CHECK(MetricValue(r, "nvswitch_count") == 0);
  CHECK_FALSE(HasMetric(r, "fabric_manager_running"));
  REQUIRE(r.logs.size() == 1);
  CHECK(absl::StartsWith(r.logs[0], "info: no NVSwitch"));

  // With switches and a running manager, a registration that completed with an error fails
  // and points at the manager's restart, not its start.
  g.fabric_state = FabricState::kCompleted;
  g.fabric_status = 999;  // NVML_ERROR_UNKNOWN
  GpuState ok;
  ok.index = 1;
  ok.fabric_state = FabricState::kCompleted;
  ok.fabric_status = 0;
  GpuState old;  // no fabric query (A100 era): not judged
  old.index = 2;
  HealthResult r2;
  CheckFabric({"0000:05:00.0"}, 4242, GpuInventory{"", {g, ok, old}}, &r2);
  CHECK(r2.FindingsWithId("health.fabric_manager_down").empty());
  const v1::Finding& f = Only(r2, "health.fabric_registration");
  CHECK(f.subject() == "gpu:0");
  CHECK(absl::StrContains(f.title(), "completed with error 999"));
  CHECK(absl::StrContains(f.action(), "systemctl restart nvidia-fabricmanager"));
}

TEST_CASE("NVLink5 links: errors left after FEC warn, recoveries are counted", "[health]") {
  auto t = DefaultThresholds();
  REQUIRE(t.ok());
  CHECK(t->nvlink_effective_errors_warn == 1);
  GpuState g;
  g.index = 2;
  g.uuid = "GPU-b200";
  // What NVML gives on Blackwell: no legacy counters, the field values.
  NvLinkState clean{0, true, {}, {}, {}, {}};
  clean.recovery = 0;
  clean.effective_errors = 0;
  NvLinkState bad{7, true, {}, {}, {}, {}};
  bad.recovery = 0;
  bad.effective_errors = 3;
  g.nvlinks = {clean, bad};
  HealthResult r;
  CheckNvLinks(g, *t, /*nvswitches_present=*/true, &r);
  const v1::Finding& f = Only(r, "health.nvlink_errors");
  CHECK(f.severity() == v1::SEVERITY_WARN);
  CHECK(f.labels().at("nvlink") == "7");
  CHECK(absl::StrContains(f.title(), "effective 3"));
  CHECK(MetricValue(r, "nvlink_effective_errors", "2") == 3);
  CHECK(MetricValue(r, "nvlink_recovery_errors", "2") == 0);
  CHECK_FALSE(HasMetric(r, "nvlink_crc_flit_errors"));  // not exposed: not measured
}

TEST_CASE("NVLink checks: all links down without NVSwitches warns once, counters not exposed "
          "are not measured",
          "[health]") {
  auto t = DefaultThresholds();
  REQUIRE(t.ok());
  GpuState g;
  g.index = 0;
  for (int i = 0; i < 4; ++i) g.nvlinks.push_back({i, false, {}, {}, {}, {}});
  HealthResult alone;
  CheckNvLinks(g, *t, /*nvswitches_present=*/false, &alone);
  CHECK(Only(alone, "health.nvlink_none_active").severity() == v1::SEVERITY_WARN);
  CHECK(alone.FindingsWithId("health.nvlink_down").empty());
  CHECK(MetricValue(alone, "nvlink_links_down", "0") == 4);
  CHECK_FALSE(HasMetric(alone, "nvlink_replay_errors"));

  HealthResult switched;
  CheckNvLinks(g, *t, /*nvswitches_present=*/true, &switched);
  CHECK(switched.FindingsWithId("health.nvlink_down").size() == 4);

  // One replay reaches DCGM's limit; 99 CRC data errors stay below 100.
  GpuState e;
  e.index = 1;
  e.nvlinks.push_back({0, true, 1, 0, 0, 99});
  HealthResult counted;
  CheckNvLinks(e, *t, true, &counted);
  const v1::Finding& f = Only(counted, "health.nvlink_errors");
  CHECK(absl::StrContains(f.title(), "replay 1"));
  CHECK_FALSE(absl::StrContains(f.title(), "crc_data"));

  GpuState none;  // no NVLink at all: nothing measured, nothing found
  HealthResult empty;
  CheckNvLinks(none, *t, true, &empty);
  CHECK(empty.findings.empty());
  CHECK(empty.measurements.empty());

  auto o = ParseThresholds("nvlink: {crc_data_warn: 50}\n", *t);
  REQUIRE(o.ok());
  CHECK(o->nvlink_crc_data_warn == 50);
  CHECK(o->nvlink_replay_warn == 1);
}

TEST_CASE("the GPU fixture file rejects an unknown fabric state and a link without state",
          "[health]") {
  CHECK_FALSE(FileGpuProbe::ParseYaml("gpus: [{index: 0, fabric_state: DONE}]").ok());
  CHECK_FALSE(FileGpuProbe::ParseYaml("gpus: [{index: 0, nvlinks: [{link: 0}]}]").ok());
  auto ok = FileGpuProbe::ParseYaml(
      "gpus: [{index: 0, fabric_state: IN_PROGRESS, nvlinks: [{link: 7, active: false}]}]");
  REQUIRE(ok.ok());
  REQUIRE(ok->gpus[0].nvlinks.size() == 1);
  CHECK(ok->gpus[0].nvlinks[0].link == 7);
  CHECK_FALSE(ok->gpus[0].nvlinks[0].crc_flit.has_value());
  CHECK(ok->gpus[0].fabric_state == FabricState::kInProgress);
}
