// The passive watch (benchmarks/watch/watch.h). Kernel lines are as the
// drivers print them: NVRM Xid lines (NVIDIA's Xid catalogue), pcieport AER
// (drivers/pci/pcie/aer.c), mce (arch/x86/kernel/cpu/mce/core.c), EXT4/XFS
// (fs/ext4/super.c ext4_handle_error, fs/xfs/xfs_fsops.c).
#include <time.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "benchmarks/watch/kernel_signals.h"
#include "benchmarks/watch/state_signals.h"
#include "benchmarks/watch/watch.h"
#include "common/record_io.h"
#include "common/subprocess.h"
#include "common/systemd_unit.h"
#include "tests/scratch_dir.h"

namespace cmax::watch {
namespace {

health::XidCatalog Catalog() {
  auto c = health::XidCatalog::LoadDefault();
  REQUIRE(c.ok());
  return *c;
}

std::optional<v1::Finding> Classify(const std::string& text) {
  static const health::XidCatalog catalog = Catalog();
  return KernelLineFinding({12.5, text}, catalog);
}

TEST_CASE("kernel lines become findings of their class, with their evidence") {
  auto xid = Classify("NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, "
                      "GPU has fallen off the bus.");
  REQUIRE(xid);
  CHECK(xid->check_id() == "watch.xid");
  CHECK(xid->labels().at("xid") == "79");
  CHECK(xid->labels().at("gpu_pci") == "0000:18:00");
  CHECK(xid->subject() == "gpu:0000:18:00");
  CHECK(xid->severity() >= v1::SEVERITY_FAIL);
  CHECK(xid->evidence(0).find("Xid (PCI:0000:18:00): 79") != std::string::npos);

  auto off = Classify("NVRM: GPU at PCI:0000:3b:00: GPU-1d2c0a33-0a4a-6f8e: GPU has fallen off the bus.");
  REQUIRE(off);
  CHECK(off->check_id() == "watch.gpu.off_bus");
  CHECK(off->severity() == v1::SEVERITY_CRITICAL);

  auto sxid = Classify("nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Fatal, Link 32 egress "
                       "non-posted PRIV error");
  REQUIRE(sxid);
  CHECK(sxid->check_id() == "watch.sxid");

  auto aer = Classify("pcieport 0000:00:01.0: AER: Uncorrected (Non-Fatal) error received: 0000:01:00.0");
  REQUIRE(aer);
  CHECK(aer->check_id() == "watch.pcie.aer");
  CHECK(aer->severity() == v1::SEVERITY_FAIL);
  auto corrected = Classify("pcieport 0000:00:1c.5: AER: Corrected error received: 0000:03:00.0");
  REQUIRE(corrected);
  CHECK(corrected->severity() == v1::SEVERITY_WARN);

  auto mce = Classify("mce: [Hardware Error]: Machine check events logged");
  REQUIRE(mce);
  CHECK(mce->check_id() == "watch.mce");

  auto ext4 = Classify("EXT4-fs (nvme0n1p1): Remounting filesystem read-only");
  REQUIRE(ext4);
  CHECK(ext4->check_id() == "watch.fs.readonly");
  auto xfs = Classify("XFS (md0): Corruption of in-memory data detected.  Shutting down filesystem");
  REQUIRE(xfs);
  CHECK(xfs->check_id() == "watch.fs.readonly");

  CHECK_FALSE(Classify("usb 1-1: new high-speed USB device number 2 using xhci_hcd"));
  CHECK_FALSE(Classify("pcieport 0000:00:01.0: AER: enabled with IRQ 122"));
}

TEST_CASE("unit states are parsed from systemctl show and judged on change") {
  UnitStates before = ParseSystemctlShow(
      "Id=nvidia-fabricmanager.service\nActiveState=active\nSubState=running\nResult=success\n\n"
      "Id=nvidia-persistenced.service\nActiveState=active\nSubState=running\nResult=success\n");
  REQUIRE(before.size() == 2);
  CHECK(UnitFindings({}, before).empty());
  UnitStates after = before;
  after["nvidia-fabricmanager.service"] = {"failed", "failed", "exit-code"};
  auto f = UnitFindings(before, after);
  REQUIRE(f.size() == 1);
  CHECK(f[0].check_id() == "watch.service.failed");
  CHECK(f[0].labels().at("unit") == "nvidia-fabricmanager.service");
  CHECK(f[0].title().find("result exit-code") != std::string::npos);
  CHECK(UnitFindings(after, after).empty());  // once, not every poll
  auto back = UnitFindings(after, before);
  REQUIRE(back.size() == 1);
  CHECK(back[0].check_id() == "watch.service.recovered");
  CHECK(back[0].severity() == v1::SEVERITY_INFO);
  // A unit that is not installed is not a failure: the watch says it is not watched.
  UnitStates missing = ParseSystemctlShow(
      "Id=nvidia-imex.service\nLoadState=not-found\nActiveState=inactive\nSubState=dead\nResult=success\n");
  CHECK(UnitFindings({}, missing).empty());
  CHECK(NotInstalled(missing) == std::vector<std::string>{"nvidia-imex.service"});
  // A unit already down when the watch starts is reported, marked at_start.
  auto start = UnitFindings({}, after);
  REQUIRE(start.size() == 1);
  CHECK(start[0].labels().at("at_start") == "true");
}

TEST_CASE("unit names are checked before they reach systemctl") {
  CHECK(IsSystemdUnitName("nvidia-fabricmanager.service"));
  CHECK(IsSystemdUnitName("getty@tty1.service"));
  CHECK_FALSE(IsSystemdUnitName("--now"));
  CHECK_FALSE(IsSystemdUnitName("a;b.service"));
  CHECK_FALSE(IsSystemdUnitName("nvidia-fabricmanager"));
  CHECK_FALSE(IsSystemdUnitName("getty@.service"));  // a template, no instance
  CHECK_FALSE(IsSystemdUnitName("systemd-tmpfiles-clean.timer"));  // not a watched type
  WatchOptions o;
  o.services = {"x y.service"};
  CHECK(ValidateOptions(o).message().find("'x y.service'") != absl::string_view::npos);
  o.services = {};
  o.fs_full_percent = 120;
  CHECK_FALSE(ValidateOptions(o).ok());
  o.fs_full_percent = 95;
  o.filesystems = {"var"};
  CHECK_FALSE(ValidateOptions(o).ok());
}

TEST_CASE("file systems are judged when they cross the threshold or turn read-only") {
  CHECK(FsFindings({{"/", {50, false}}}, {{"/", {80, false}}}, 95).empty());
  auto full = FsFindings({{"/", {90, false}}}, {{"/", {96, false}}}, 95);
  REQUIRE(full.size() == 1);
  CHECK(full[0].check_id() == "watch.fs.full");
  CHECK(full[0].subject() == "path:/");
  CHECK(FsFindings({{"/", {96, false}}}, {{"/", {97, false}}}, 95).empty());
  auto ro = FsFindings({{"/data", {10, false}}}, {{"/data", {10, true}}}, 95);
  REQUIRE(ro.size() == 1);
  CHECK(ro[0].check_id() == "watch.fs.readonly");
  // The real statvfs of the test's own /tmp: read, never full at 100.01 %.
  std::vector<std::string> errors;
  auto real = ReadFilesystems(Sysroot("/"), {"/tmp", "/no/such/mount"}, &errors);
  CHECK(real.count("/tmp") == 1);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].find("/no/such/mount") != std::string::npos);
}

health::IbPort Port(const std::string& state, uint64_t downed, uint64_t symbol) {
  health::IbPort p;
  p.device = "mlx5_0";
  p.port = 1;
  p.state = state;
  p.phys_state = state == "4: ACTIVE" ? "5: LinkUp" : "3: Disabled";
  p.counters = {{"link_downed", downed}, {"symbol_error", symbol}};
  return p;
}

TEST_CASE("ports going down, flapping or counting errors are findings on that port") {
  auto down = PortFindings({Port("4: ACTIVE", 0, 0)}, {Port("1: DOWN", 0, 0)});
  REQUIRE(down.size() == 1);
  CHECK(down[0].check_id() == "watch.ib.port_down");
  CHECK(down[0].subject() == "port:mlx5_0/1");
  auto flap = PortFindings({Port("4: ACTIVE", 1, 0)}, {Port("4: ACTIVE", 3, 5)});
  REQUIRE(flap.size() == 2);
  CHECK(flap[0].check_id() == "watch.ib.link_flap");
  CHECK(flap[0].title().find("2 time(s)") != std::string::npos);
  CHECK(flap[1].check_id() == "watch.ib.errors");
  CHECK(PortFindings({Port("4: ACTIVE", 3, 5)}, {Port("4: ACTIVE", 3, 5)}).empty());
}

TEST_CASE("GPU state changes are findings on that GPU") {
  health::GpuInventory a;
  a.gpus.resize(2);
  for (int i = 0; i < 2; ++i) {
    a.gpus[i].index = i;
    a.gpus[i].pci_bus_id = absl::StrCat("00000000:1", i, ":00.0");
    a.gpus[i].volatile_dbe = 0;
    a.gpus[i].remap_pending = false;
  }
  CHECK(GpuFindings({}, a, true).empty());
  health::GpuInventory b = a;
  b.gpus[1].remap_pending = true;
  b.gpus[1].volatile_dbe = 2;
  auto f = GpuFindings(a, b, false);
  REQUIRE(f.size() == 2);
  CHECK(f[0].check_id() == "watch.gpu.remap_pending");
  CHECK(f[0].subject() == "gpu:1");
  CHECK(f[1].check_id() == "watch.gpu.ecc_dbe");
  health::GpuInventory c = a;
  c.gpus.pop_back();
  auto missing = GpuFindings(a, c, false);
  REQUIRE(missing.size() == 1);
  CHECK(missing[0].check_id() == "watch.gpu.missing");
  CHECK(missing[0].severity() == v1::SEVERITY_CRITICAL);
  health::GpuInventory d = a;
  d.gpus[0].lost = true;
  auto lost = GpuFindings(a, d, false);
  REQUIRE(lost.size() == 1);
  CHECK(lost[0].check_id() == "watch.gpu.lost");
}

// A fixture node the test changes while the watch runs.
struct FixtureNode {
  testing::ScratchDir dir;
  FixtureNode() {
    std::filesystem::create_directories(dir.path + "/dev");
    std::filesystem::create_directories(dir.path + "/cmax-fixture");
    std::ofstream(dir.path + "/dev/kmsg");
    Units("active", "running", "success");
  }
  void Units(const std::string& active, const std::string& sub, const std::string& result) {
    std::ofstream(dir.path + "/cmax-fixture/units")
        << "Id=nvidia-fabricmanager.service\nActiveState=" << active << "\nSubState=" << sub
        << "\nResult=" << result << "\n";
  }
  // Appends a kmsg record stamped with CLOCK_MONOTONIC now; returns that
  // instant in wall time.
  absl::Time Kernel(const std::string& text) {
    timespec mono{};
    clock_gettime(CLOCK_MONOTONIC, &mono);
    int64_t usec = mono.tv_sec * 1000000LL + mono.tv_nsec / 1000;
    std::ofstream(dir.path + "/dev/kmsg", std::ios::app) << "3,77," << usec << ",-;" << text << "\n";
    return absl::Now();
  }
};

std::vector<v1::Record> ReadRecords(const std::string& path) {
  std::vector<v1::Record> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    auto r = ParseRecordLine(line);
    REQUIRE(r.ok());
    out.push_back(*r);
  }
  return out;
}

TEST_CASE("the watch turns a kernel line and a failed unit into findings stamped with the signal's time") {
  FixtureNode node;
  std::string out = node.dir.path + "/records.jsonl";
  FILE* f = std::fopen(out.c_str(), "w");
  REQUIRE(f);
  {
    RecordWriter writer("watch", f);
    WatchOptions o;
    o.root = node.dir.path;
    o.services = {"nvidia-fabricmanager.service"};
    o.filesystems = {"/"};
    o.interval = absl::Milliseconds(1);
    Watch watch(o, &writer);
    REQUIRE(watch.Start().ok());
    absl::Time line_at = node.Kernel("NVRM: Xid (PCI:0000:18:00): 48, pid=1234, name=python, "
                                     "An uncorrectable double bit error (DBE) has been detected");
    node.Units("failed", "failed", "exit-code");
    absl::SleepFor(absl::Milliseconds(5));
    watch.Tick();
    CHECK(watch.findings() == 2);
    auto records_line_at = absl::ToUnixNanos(line_at);
    std::fclose(f);
    auto records = ReadRecords(out);
    std::map<std::string, v1::Finding> by_check;
    for (const auto& r : records) {
      if (r.has_finding()) by_check[r.finding().check_id()] = r.finding();
    }
    REQUIRE(by_check.count("watch.xid") == 1);
    const auto& xid = by_check["watch.xid"];
    CHECK(xid.labels().at("signal_time_source") == "kernel_log");
    int64_t signal_ns = 0;
    REQUIRE(absl::SimpleAtoi(xid.labels().at("signal_unix_ns"), &signal_ns));
    // The kernel's stamp, converted through the boot time: within a few ms
    // of when the test wrote the line.
    CHECK(std::abs(signal_ns - records_line_at) < 50'000'000);
    REQUIRE(by_check.count("watch.service.failed") == 1);
    CHECK(by_check["watch.service.failed"].labels().at("signal_time_source") == "observed");
    // What this fixture has no source for is said once, as not watched.
    REQUIRE(by_check.count("watch.gpu") == 1);
    CHECK(by_check["watch.gpu"].not_measured());
    REQUIRE(by_check.count("watch.ib") == 1);
    CHECK(by_check["watch.ib"].not_measured());
  }
}

TEST_CASE("a kernel log the watch may not read is 'not watched', never quiet") {
  testing::ScratchDir dir;  // no dev/kmsg at all
  std::string out = dir.path + "/records.jsonl";
  FILE* f = std::fopen(out.c_str(), "w");
  REQUIRE(f);
  RecordWriter writer("watch", f);
  WatchOptions o;
  o.root = dir.path;
  Watch watch(o, &writer);
  REQUIRE(watch.Start().ok());
  std::fclose(f);
  bool said = false;
  for (const auto& r : ReadRecords(out)) {
    if (r.has_finding() && r.finding().check_id() == "watch.kmsg") {
      said = r.finding().not_measured() && r.finding().detail().find("kmsg") != std::string::npos;
    }
  }
  CHECK(said);
}

TEST_CASE("cmax-watch runs alone, refuses a bad unit name and reports its CPU use") {
  auto bad = RunCommand({CMAX_WATCH_BIN, "--services", "nvidia;reboot"}, std::chrono::seconds(10));
  REQUIRE(bad.ok());
  CHECK(bad->exit.code == 2);
  CHECK(bad->err.find("'nvidia;reboot' is not a systemd unit name") != std::string::npos);
  auto version = RunCommand({CMAX_WATCH_BIN, "--version"}, std::chrono::seconds(10));
  REQUIRE(version.ok());
  CHECK(version->exit.code == 0);
  CHECK(version->out.rfind("cmax-watch ", 0) == 0);
  FixtureNode node;
  auto run = RunCommand({CMAX_WATCH_BIN, "--root", node.dir.path, "--jsonl", "--duration", "1.2",
                         "--tick", "0.1", "--cpu-report", "0.5"},
                        std::chrono::seconds(20));
  REQUIRE(run.ok());
  CHECK(run->exit.code == 0);
  CHECK(run->out.find("\"metric\":\"watch_cpu_percent\"") != std::string::npos);
  CHECK(run->out.find("watching: kernel log yes") != std::string::npos);
}

}  // namespace
}  // namespace cmax::watch
