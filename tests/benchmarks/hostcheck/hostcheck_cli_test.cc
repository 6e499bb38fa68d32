// Runs the built `cmax-bench hostcheck` on the fixture trees and on this
// machine, and checks what an operator or the agent would read: exit codes,
// records, the Inventory line.
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "cmax/v1/inventory.pb.h"
#include "common/record_io.h"
#include "common/subprocess.h"
#include "google/protobuf/util/json_util.h"
#include "reports/run_data.h"
#include "reports/scorecard.h"
#include "tests/benchmarks/suite_run.h"
#include "tests/reports/scorecard_test_util.h"
#include "tests/scratch_dir.h"

using namespace std::chrono_literals;

namespace {

std::string FixtureRoot(const std::string& name) {
  return std::string(CMAX_SOURCE_DIR) + "/tests/fixtures/hostcheck/" + name;
}

struct Run {
  int code = -1;
  std::string out, err;
  std::vector<cmax::v1::Measurement> measurements;
  std::vector<cmax::v1::Finding> findings;
  int unparsed_lines = 0;

  const cmax::v1::Measurement* Metric(const std::string& name) const {
    for (const auto& m : measurements) {
      if (m.metric() == name) return &m;
    }
    return nullptr;
  }
  const cmax::v1::Finding* Check(const std::string& id) const {
    for (const auto& f : findings) {
      if (f.check_id() == id) return &f;
    }
    return nullptr;
  }
  int Failures() const {
    int n = 0;
    for (const auto& f : findings) n += f.severity() >= cmax::v1::SEVERITY_FAIL;
    return n;
  }
};

Run Hostcheck(std::vector<std::string> args) {
  std::vector<std::string> argv = {std::string(CMAX_TEST_BIN_DIR) + "/cmax-bench",
                                   "hostcheck"};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = cmax::RunCommand(argv, 30s);
  REQUIRE(r.ok());
  REQUIRE_FALSE(r->timed_out);
  REQUIRE(r->exit.exited);  // a crash is never an answer
  Run run;
  run.code = r->exit.code;
  run.out = r->out;
  run.err = r->err;
  for (absl::string_view line : absl::StrSplit(run.out, '\n', absl::SkipEmpty())) {
    auto rec = cmax::ParseRecordLine(std::string(line));
    if (!rec.ok()) {
      ++run.unparsed_lines;
      continue;
    }
    if (rec->has_measurement()) run.measurements.push_back(rec->measurement());
    if (rec->has_finding()) run.findings.push_back(rec->finding());
  }
  return run;
}

}  // namespace

TEST_CASE("hostcheck: healthy 8xH100 node passes with its expectations",
          "[hostcheck][cli]") {
  Run r = Hostcheck({"--jsonl", "--root=" + FixtureRoot("healthy-8xh100"),
                     "--expect-gpus=8", "--expect-gpu-model=H100-SXM5",
                     "--min-cpu-cores=64", "--min-memory-gib=2000"});
  INFO(r.out << r.err);
  CHECK(r.code == 0);
  CHECK(r.unparsed_lines == 0);  // --jsonl: only records on stdout
  CHECK(r.Failures() == 0);
  REQUIRE(r.Metric("gpu_count"));
  CHECK(r.Metric("gpu_count")->value() == 8);
  CHECK(r.Metric("cpu_cores")->value() == 64);
  CHECK(r.Metric("memory_total_gib")->value() == Approx(2113515712.0 / (1 << 20)));
  CHECK(r.Metric("swap_total_gib")->value() == 0);
  CHECK(r.Metric("numa_nodes")->value() == 2);
  REQUIRE(r.Metric("root_free_pct"));
  std::vector<std::string> buses;
  for (const auto& m : r.measurements) {
    if (m.metric() != "gpu_present") continue;
    CHECK(m.labels().at("gpu") == std::to_string(buses.size()));
    CHECK(m.labels().at("model") == "NVIDIA H100 SXM5 80GB");
    CHECK(m.labels().at("device_id") == "0x2330");
    buses.push_back(m.labels().at("pci_bus_id"));
  }
  for (const auto& m : r.measurements) {
    if (m.metric() != "gpu_present") continue;
    CHECK(m.labels().at("host_link") == "pcie");  // an HGX H100 board: PCIe Gen5 x16
    CHECK(m.labels().at("pcie_link") == "x16 at 32.0 GT/s (max x16 at 32.0 GT/s)");
  }
  CHECK(r.Check("hostcheck.numa_balance") == nullptr);
  CHECK(r.Metric("numa_nodes_cpu")->value() == 2);
  CHECK(r.Metric("numa_nodes_memory_only")->value() == 0);
  CHECK(r.Metric("memory_cpu_nodes_gib") == nullptr);  // no memory-only node to leave out
  CHECK(buses == std::vector<std::string>{"0000:18:00.0", "0000:2a:00.0", "0000:3a:00.0",
                                          "0000:5d:00.0", "0000:9a:00.0", "0000:ab:00.0",
                                          "0000:ba:00.0", "0000:db:00.0"});
  CHECK(r.Check("hostcheck.swap") == nullptr);
  CHECK(r.Check("hostcheck.clock_sync") == nullptr);  // the seam says synchronised
}

TEST_CASE("hostcheck: a missing GPU fails the node and names what was found",
          "[hostcheck][cli]") {
  Run r =
      Hostcheck({"--jsonl", "--root=" + FixtureRoot("missing-gpu"), "--expect-gpus=8"});
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  CHECK(r.Metric("gpu_count")->value() == 7);
  const auto* f = r.Check("hostcheck.gpu_count");
  REQUIRE(f);
  CHECK(f->severity() == cmax::v1::SEVERITY_FAIL);
  CHECK(f->category() == "reliability");
  CHECK(f->title().find("found 7") != std::string::npos);
  CHECK(f->detail().find("0000:18:00.0") != std::string::npos);
  CHECK(f->detail().find("0000:9a:00.0") == std::string::npos);
  CHECK(f->evidence_size() == 7);
  CHECK_FALSE(f->action().empty());
  // No clock seam in this tree: recorded as not measured, not as a pass.
  const auto* clock = r.Check("hostcheck.clock_sync");
  REQUIRE(clock);
  CHECK(clock->severity() == cmax::v1::SEVERITY_INFO);
  CHECK(clock->detail().find("clock sync not measured under a fixture root") !=
        std::string::npos);
}

TEST_CASE("hostcheck: GPUs without a loaded driver fail", "[hostcheck][cli]") {
  Run r = Hostcheck({"--jsonl", "--root=" + FixtureRoot("no-driver")});
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  const auto* f = r.Check("hostcheck.nvidia_driver");
  REQUIRE(f);
  CHECK(f->severity() == cmax::v1::SEVERITY_FAIL);
  CHECK(f->title() == "GPUs present but no NVIDIA driver loaded");
}

TEST_CASE(
    "hostcheck: CPU-only node has no GPUs and warns of swap and clock without failing",
    "[hostcheck][cli]") {
  Run r = Hostcheck({"--jsonl", "--root=" + FixtureRoot("cpu-only")});
  INFO(r.out << r.err);
  CHECK(r.code == 0);  // warnings only
  CHECK(r.Metric("gpu_count")->value() == 0);
  CHECK(r.Metric("cpu_cores")->value() == 4);
  CHECK(r.Metric("swap_total_gib")->value() == Approx(8388604.0 / (1 << 20)));
  const auto* swap = r.Check("hostcheck.swap");
  REQUIRE(swap);
  CHECK(swap->severity() == cmax::v1::SEVERITY_WARN);
  CHECK(swap->title() == "swap enabled");
  CHECK(swap->detail().find("/swap.img") != std::string::npos);
  const auto* clock = r.Check("hostcheck.clock_sync");
  REQUIRE(clock);
  CHECK(clock->severity() == cmax::v1::SEVERITY_WARN);
  CHECK(r.Check("hostcheck.nvidia_driver") == nullptr);
}

TEST_CASE("hostcheck: unmet model and cores and memory expectations fail",
          "[hostcheck][cli]") {
  Run r = Hostcheck({"--jsonl", "--root=" + FixtureRoot("healthy-8xh100"),
                     "--expect-gpu-model=A100", "--min-cpu-cores=128",
                     "--min-memory-gib=4096"});
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  for (const char* id :
       {"hostcheck.gpu_model", "hostcheck.cpu_cores", "hostcheck.memory"}) {
    const auto* f = r.Check(id);
    INFO(id);
    REQUIRE(f);
    CHECK(f->severity() == cmax::v1::SEVERITY_FAIL);
  }
  CHECK(r.Check("hostcheck.gpu_model")->evidence_size() == 8);
}

TEST_CASE("hostcheck: inventory mode prints one Inventory line", "[hostcheck][cli]") {
  Run r = Hostcheck({"--inventory", "--root=" + FixtureRoot("healthy-8xh100")});
  INFO(r.out << r.err);
  CHECK(r.code == 0);
  REQUIRE(std::count(r.out.begin(), r.out.end(), '\n') == 1);
  cmax::v1::Inventory inv;
  REQUIRE(google::protobuf::util::JsonStringToMessage(r.out, &inv).ok());
  CHECK(inv.hostname() == "gpu-node-01");
  CHECK(inv.gpu_count() == 8);
  CHECK(inv.gpu_model() == "NVIDIA H100 SXM5 80GB");
  CHECK(inv.driver_version() == "580.65.06");
  CHECK(inv.cpu_cores() == 64);
  CHECK(inv.memory_gib() == Approx(2015.6).margin(0.1));
  CHECK(inv.kernel() == "5.15.0-143-generic");
  CHECK(inv.facts().at("os") == "Ubuntu 22.04.5 LTS");
  CHECK(inv.facts().at("numa_nodes") == "2");
  CHECK(inv.facts().at("boot_id") == "3f2b8c1e-5d4a-4e8f-9c7b-1a2b3c4d5e6f");
  std::vector<std::string> ids = absl::StrSplit(inv.facts().at("gpu_pci_ids"), ',');
  CHECK(ids.size() == 8);
}

TEST_CASE("hostcheck: the human table shows every check", "[hostcheck][cli]") {
  Run ok = Hostcheck({"--root=" + FixtureRoot("healthy-8xh100")});
  CHECK(ok.code == 0);
  CHECK(ok.measurements.empty());  // no records without --jsonl
  for (const char* check : {"gpu_count", "nvidia_driver", "cpu_cores", "memory", "swap",
                            "root_disk", "clock_sync"}) {
    CHECK(ok.out.find(check) != std::string::npos);
  }
  CHECK(ok.out.find("FAIL ") == std::string::npos);
  Run bad = Hostcheck({"--root=" + FixtureRoot("missing-gpu"), "--expect-gpus=8"});
  CHECK(bad.code == 1);
  CHECK(bad.out.find("FAIL") != std::string::npos);
  CHECK(bad.out.find("expected 8 GPUs, found 7") != std::string::npos);
}

TEST_CASE("hostcheck: on this machine it runs and reports the real CPUs and memory",
          "[hostcheck][cli]") {
  Run r = Hostcheck({"--jsonl"});
  INFO(r.out << r.err);
  CHECK((r.code == 0 || r.code == 1));
  CHECK(r.unparsed_lines == 0);
  REQUIRE(r.Metric("cpu_cores"));
  CHECK(r.Metric("cpu_cores")->value() == sysconf(_SC_NPROCESSORS_ONLN));
  REQUIRE(r.Metric("memory_total_gib"));
  double gib = static_cast<double>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE) /
               (1024.0 * 1024 * 1024);
  CHECK(r.Metric("memory_total_gib")->value() == Approx(gib).margin(0.01));
  REQUIRE(r.Metric("gpu_count"));
  // The clock is measured for real here: synchronised (no finding) or a WARN
  // that says how it was determined.
  if (const auto* clock = r.Check("hostcheck.clock_sync")) {
    CHECK(clock->detail().find("adjtimex()") != std::string::npos);
  }
}

TEST_CASE("hostcheck: a missing root or a bad flag cannot run", "[hostcheck][cli]") {
  Run r = Hostcheck({"--jsonl", "--root=/nonexistent/cmax-root"});
  CHECK(r.code == 2);
  CHECK(r.err.find("/nonexistent/cmax-root") != std::string::npos);
  // Evidence, not a verdict: one finding marked not measured, with the reason.
  REQUIRE(r.findings.size() == 1);
  CHECK(r.findings[0].check_id() == "hostcheck.not_measured");
  CHECK(r.findings[0].not_measured());
  CHECK(r.findings[0].detail().find("/nonexistent/cmax-root") != std::string::npos);
  Run empty =
      Hostcheck({"--root=" + std::string(CMAX_SOURCE_DIR) + "/tests/fixtures/hostcheck"});
  CHECK(empty.code == 2);  // a folder that is not a system root: nothing measured
  Run flag = Hostcheck({"--no-such-flag"});
  CHECK(flag.code == 2);
}

// ---- Grace: a GB200 NVL72 compute tray (tests/fixtures/hostcheck/grace-gb200) ----

TEST_CASE(
    "hostcheck: a GB200 tray passes with its expectations and says what it measured",
    "[hostcheck][cli][grace]") {
  // --min-free-root-pct=0: the fixture's root disk is this machine's (statvfs
  // of the tree), which the test does not control; a build machine short of
  // space must not fail a test about Grace.
  Run r = Hostcheck({"--jsonl", "--root=" + FixtureRoot("grace-gb200"), "--expect-gpus=4",
                     "--expect-gpu-model=GB200", "--min-cpu-cores=144",
                     "--min-memory-gib=850", "--min-free-root-pct=0"});
  INFO(r.out << r.err);
  CHECK(r.code == 0);
  CHECK(r.unparsed_lines == 0);
  // Nothing x86-shaped fails or warns: the only finding is GPU-NIC affinity
  // not measured (the tree has no RDMA devices).
  for (const auto& f : r.findings) {
    INFO(f.check_id() << ": " << f.title());
    CHECK(f.severity() == cmax::v1::SEVERITY_INFO);
    CHECK(f.not_measured());
  }
  REQUIRE(r.Metric("cpu_cores"));
  CHECK(r.Metric("cpu_cores")->value() == 144);
  CHECK(r.Metric("cpu_cores")->labels().at("model") == "Arm Neoverse-V2");
  REQUIRE(r.Metric("cpu_sockets"));
  CHECK(r.Metric("cpu_sockets")->value() == 2);
  // 34 NUMA nodes as the kernel lists them; 2 with CPUs; 4 holding GPU HBM.
  CHECK(r.Metric("numa_nodes")->value() == 34);
  CHECK(r.Metric("numa_nodes_cpu")->value() == 2);
  REQUIRE(r.Metric("numa_nodes_memory_only"));
  CHECK(r.Metric("numa_nodes_memory_only")->value() == 4);
  CHECK(r.Metric("numa_nodes_memory_only")->labels().at("memory_only_gib") == "740.1");
  CHECK(r.Check("hostcheck.numa_balance") == nullptr);
  // MemTotal counts the HBM; the expectation was held to the Grace nodes'.
  CHECK(r.Metric("memory_total_gib")->value() == Approx(1711738880.0 / (1 << 20)));
  REQUIRE(r.Metric("memory_cpu_nodes_gib"));
  CHECK(r.Metric("memory_cpu_nodes_gib")->value() ==
        Approx((467304448.0 + 468361216.0) / (1 << 20)));
  int gpus = 0;
  for (const auto& m : r.measurements) {
    if (m.metric() != "gpu_present") continue;
    ++gpus;
    CHECK(m.labels().at("model") == "NVIDIA HGX GB200");
    CHECK(m.labels().at("host_link") == "nvlink_c2c");
    CHECK(m.labels().at("pcie_link") == "not a PCIe link (no max_link_* files)");
  }
  CHECK(gpus == 4);

  Run human = Hostcheck({"--root=" + FixtureRoot("grace-gb200")});
  INFO(human.out);
  CHECK(human.code == 0);
  CHECK_THAT(human.out, Catch::Contains("Arm Neoverse-V2"));
  CHECK_THAT(human.out, Catch::Contains("2 with CPUs, 4 memory-only, 28 empty"));
  CHECK_THAT(human.out, Catch::Contains("4/4 not PCIe"));
  CHECK(human.out.find("FAIL ") == std::string::npos);
}

TEST_CASE(
    "hostcheck: a Grace host's memory expectation is held to its CPU nodes, not HBM",
    "[hostcheck][cli][grace]") {
  // 1632 GiB MemTotal, of which 740 GiB is the GPUs' HBM: 1000 GiB of host
  // memory is not there. Counting MemTotal would pass this node.
  Run r = Hostcheck(
      {"--jsonl", "--root=" + FixtureRoot("grace-gb200"), "--min-memory-gib=1000"});
  INFO(r.out << r.err);
  CHECK(r.code == 1);
  const auto* f = r.Check("hostcheck.memory");
  REQUIRE(f);
  CHECK(f->severity() == cmax::v1::SEVERITY_FAIL);
  CHECK_THAT(f->title(),
             Catch::Contains("892.3 GiB of memory, expected at least 1000.0"));
  CHECK_THAT(f->detail(), Catch::Contains("1632.4 GiB") &&
                              Catch::Contains("740.1 GiB on 4 memory-only NUMA nodes"));
}

TEST_CASE("hostcheck: an unbalanced Grace socket warns, the HBM nodes never do",
          "[hostcheck][cli][grace]") {
  cmax::testing::ScratchDir dir;
  std::filesystem::copy(FixtureRoot("grace-gb200"), dir.path,
                        std::filesystem::copy_options::recursive);
  // Half of node1's memory gone (a failed LPDDR5X package would look so).
  std::ofstream(dir.path + "/sys/devices/system/node/node1/meminfo")
      << "Node 1 MemTotal:       234180608 kB\n";
  Run r = Hostcheck({"--jsonl", "--root=" + dir.path});
  INFO(r.out << r.err);
  CHECK(r.code == 0);  // a warning
  const auto* f = r.Check("hostcheck.numa_balance");
  REQUIRE(f);
  CHECK(f->severity() == cmax::v1::SEVERITY_WARN);
  CHECK_THAT(f->detail(), Catch::Contains("node1 has 50% of node0's"));
  // The GPU memory nodes are named nowhere in the finding.
  CHECK(f->detail().find("node2 ") == std::string::npos);
  CHECK(f->detail().find("node10") == std::string::npos);
}

TEST_CASE(
    "hostcheck: a Grace host's inventory names its CPU model, sockets and NUMA nodes",
    "[hostcheck][cli][grace]") {
  Run r = Hostcheck({"--inventory", "--root=" + FixtureRoot("grace-gb200")});
  INFO(r.out << r.err);
  CHECK(r.code == 0);
  cmax::v1::Inventory inv;
  REQUIRE(google::protobuf::util::JsonStringToMessage(r.out, &inv).ok());
  CHECK(inv.hostname() == "gb200-tray-01");
  CHECK(inv.gpu_count() == 4);
  CHECK(inv.gpu_model() == "NVIDIA HGX GB200");
  CHECK(inv.cpu_cores() == 144);
  CHECK(inv.facts().at("cpu_model") == "Arm Neoverse-V2");
  CHECK(inv.facts().at("cpu_sockets") == "2");
  CHECK(inv.facts().at("numa_nodes") == "34");
  CHECK(inv.facts().at("numa_nodes_cpu") == "2");
  CHECK(inv.facts().at("numa_nodes_memory_only") == "4");
  CHECK(inv.facts().at("memory_cpu_nodes_gib") == "892.32");
}

TEST_CASE("hostcheck: a GB200 tray's records grade it without a failure",
          "[hostcheck][cli][grace][scorecard]") {
  auto run = cmax::testing::RunSuite(
      "cmax-bench",
      {"hostcheck", "--jsonl", "--root=" + FixtureRoot("grace-gb200"), "--expect-gpus=4",
       "--min-cpu-cores=144", "--min-memory-gib=850",
       "--min-free-root-pct=0"},  // the machine's disk, not the fixture's (above)
      30s);
  REQUIRE(run.exit_code == 0);
  namespace rt = cmax::reports::testing;
  cmax::reports::RunData d;
  d.run.set_run_id("run-grace");
  d.run.set_plan_name("hostcheck");
  d.run.set_state("completed");
  d.plan.set_name("hostcheck");
  d.plan.add_suites()->set_suite("hostcheck");
  d.nodes = {"gb200-tray-01"};
  int64_t seq = 0;
  for (const auto& rec : run.records) {
    cmax::v1::ExportedRecord e;
    e.set_task_id("hostcheck@gb200-tray-01");
    e.set_attempt(1);
    e.set_seq(++seq);
    e.set_node("gb200-tray-01");
    e.set_suite("hostcheck");
    *e.mutable_record() = rec;
    d.records.push_back(std::move(e));
  }
  d.tasks.push_back(
      rt::Task("gb200-tray-01", "hostcheck", cmax::v1::TASK_COMPLETED, 0, "passed"));
  cmax::v1::Scorecard card = cmax::reports::BuildScorecard(d);
  const auto& node = rt::NodeOf(card, "gb200-tray-01");
  std::string reasons;
  for (const auto& reason : node.reasons()) reasons += reason + "\n";
  INFO(node.verdict() << "\n" << reasons);
  CHECK(node.verdict() != "fail");
  // Its only reason: the tree has no RDMA devices to pair the GPUs with.
  for (const auto& reason : node.reasons()) {
    CHECK(absl::StartsWith(reason, "Networking not measured: GPU-NIC affinity"));
  }
  for (const auto& c : card.categories()) {
    for (const auto& rule : c.rules()) {
      if (!absl::StartsWith(rule.rule_id(), "hostcheck.")) continue;
      INFO(c.name() << ": " << rule.rule_id() << " " << rule.outcome() << " "
                    << rule.message());
      CHECK(rule.outcome() != "fail");
      CHECK(rule.outcome() != "warn");
    }
  }
}

namespace {

// The line of hostcheck's table that names `check`, or "".
std::string TableRow(const std::string& out, const std::string& check) {
  for (absl::string_view line : absl::StrSplit(out, '\n')) {
    if (absl::StrContains(line, check)) return std::string(line);
  }
  return "";
}

// healthy-8xh100 (open kernel module) with one RDMA NIC, the driver line
// replaced by `nvrm` when given, and nvidia_peermem loaded when asked.
void RdmaRoot(const std::string& path, const std::string& nvrm, bool peermem) {
  std::filesystem::copy(FixtureRoot("healthy-8xh100"), path,
                        std::filesystem::copy_options::recursive);
  std::filesystem::create_directories(path + "/sys/class/infiniband/mlx5_0");
  if (!nvrm.empty()) std::ofstream(path + "/proc/driver/nvidia/version") << nvrm;
  if (peermem) std::filesystem::create_directories(path + "/sys/module/nvidia_peermem");
}

}  // namespace

TEST_CASE("hostcheck: GPUDirect RDMA passes through dma_buf, warns on nvidia_peermem alone",
          "[hostcheck][cli]") {
  cmax::testing::ScratchDir open_dir;
  RdmaRoot(open_dir.path + "/r", "", false);
  Run open = Hostcheck({"--root=" + open_dir.path + "/r"});
  INFO(open.out << open.err);
  CHECK_THAT(TableRow(open.out, "gpudirect_rdma"), Catch::Contains("PASS") &&
                                                       Catch::Contains("dma_buf"));

  const std::string proprietary =
      "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.65.06  Sun Jul 27 06:54:38 UTC 2025\n";
  cmax::testing::ScratchDir peer_dir;
  RdmaRoot(peer_dir.path + "/r", proprietary, true);
  Run peer = Hostcheck({"--jsonl", "--root=" + peer_dir.path + "/r"});
  const auto* f = peer.Check("hostcheck.gpudirect_rdma");
  REQUIRE(f);
  CHECK(f->severity() == cmax::v1::SEVERITY_WARN);
  CHECK_FALSE(f->not_measured());
  CHECK_THAT(f->title(), Catch::Contains("deprecated nvidia_peermem"));
  CHECK(f->category() == "networking");  // the path RDMA traffic takes

  cmax::testing::ScratchDir none_dir;
  RdmaRoot(none_dir.path + "/r", proprietary, false);
  Run none = Hostcheck({"--jsonl", "--root=" + none_dir.path + "/r"});
  const auto* g = none.Check("hostcheck.gpudirect_rdma");
  REQUIRE(g);
  CHECK(g->severity() == cmax::v1::SEVERITY_WARN);
  CHECK_THAT(g->title(), Catch::Contains("no GPUDirect RDMA path"));
}

TEST_CASE("hostcheck: GPUDirect RDMA is not measured when the driver line is unreadable",
          "[hostcheck][cli]") {
  cmax::testing::ScratchDir dir;
  RdmaRoot(dir.path + "/r", "garbage\n", false);
  Run r = Hostcheck({"--jsonl", "--root=" + dir.path + "/r"});
  const auto* f = r.Check("hostcheck.gpudirect_rdma");
  REQUIRE(f);
  CHECK(f->not_measured());
  CHECK_THAT(f->detail(), Catch::Contains("/proc/driver/nvidia/version"));
  // No RDMA NIC: nothing to judge, no finding.
  Run plain = Hostcheck({"--jsonl", "--root=" + FixtureRoot("healthy-8xh100")});
  CHECK(plain.Check("hostcheck.gpudirect_rdma") == nullptr);
}

TEST_CASE("hostcheck: profiling for users passes, restricted perf or GPU counters warn",
          "[hostcheck][cli]") {
  auto make = [](const std::string& path, const std::string& paranoid, const std::string& params) {
    std::filesystem::copy(FixtureRoot("healthy-8xh100"), path,
                          std::filesystem::copy_options::recursive);
    if (!paranoid.empty()) std::ofstream(path + "/proc/sys/kernel/perf_event_paranoid") << paranoid;
    if (!params.empty()) std::ofstream(path + "/proc/driver/nvidia/params") << params;
  };
  cmax::testing::ScratchDir dir;
  make(dir.path + "/open", "2\n", "EnableMSI: 1\nRestrictProfilingToAdminUsers: 0\nOther: 1\n");
  Run open = Hostcheck({"--root=" + dir.path + "/open"});
  INFO(open.out << open.err);
  CHECK_THAT(TableRow(open.out, "profiling_access"), Catch::Contains("PASS"));

  make(dir.path + "/perf", "4\n", "RestrictProfilingToAdminUsers: 0\n");
  Run perf = Hostcheck({"--jsonl", "--root=" + dir.path + "/perf"});
  const auto* p = perf.Check("hostcheck.profiling_access");
  REQUIRE(p);
  CHECK(p->severity() == cmax::v1::SEVERITY_WARN);
  CHECK_THAT(p->detail(), Catch::Contains("perf_event_paranoid is 4"));
  CHECK_THAT(p->detail(), !Catch::Contains("RestrictProfilingToAdminUsers is"));

  make(dir.path + "/gpu", "1\n", "RestrictProfilingToAdminUsers: 1\n");
  Run gpu = Hostcheck({"--jsonl", "--root=" + dir.path + "/gpu"});
  const auto* g = gpu.Check("hostcheck.profiling_access");
  REQUIRE(g);
  CHECK(g->severity() == cmax::v1::SEVERITY_WARN);
  CHECK_THAT(g->detail(), Catch::Contains("RestrictProfilingToAdminUsers is 1"));

  // Neither file: not measured, never a pass.
  make(dir.path + "/none", "", "");
  std::filesystem::remove(dir.path + "/none/proc/sys/kernel/perf_event_paranoid");
  std::filesystem::remove(dir.path + "/none/proc/driver/nvidia/params");
  Run none = Hostcheck({"--jsonl", "--root=" + dir.path + "/none"});
  const auto* n = none.Check("hostcheck.profiling_access");
  REQUIRE(n);
  CHECK(n->not_measured());
  CHECK_THAT(n->detail(), Catch::Contains("perf_event_paranoid"));
}

TEST_CASE("hostcheck: GDRCopy's gdrdrv on a GPU node with RDMA NICs passes, its absence warns",
          "[hostcheck][cli]") {
  cmax::testing::ScratchDir dir;
  RdmaRoot(dir.path + "/with", "", false);
  std::filesystem::create_directories(dir.path + "/with/sys/module/gdrdrv");
  Run with = Hostcheck({"--root=" + dir.path + "/with"});
  INFO(with.out << with.err);
  CHECK_THAT(TableRow(with.out, "gdrcopy"), Catch::Contains("PASS"));

  RdmaRoot(dir.path + "/without", "", false);
  Run without = Hostcheck({"--jsonl", "--root=" + dir.path + "/without"});
  const auto* f = without.Check("hostcheck.gdrcopy");
  REQUIRE(f);
  CHECK(f->severity() == cmax::v1::SEVERITY_WARN);
  CHECK_THAT(f->detail(), Catch::Contains("/sys/module/gdrdrv"));

  // No module list at all: not measured.
  RdmaRoot(dir.path + "/bare", "", false);
  std::filesystem::remove_all(dir.path + "/bare/sys/module");
  Run bare = Hostcheck({"--jsonl", "--root=" + dir.path + "/bare"});
  const auto* g = bare.Check("hostcheck.gdrcopy");
  REQUIRE(g);
  CHECK(g->not_measured());
  // No RDMA NIC: nothing to judge, no finding.
  Run plain = Hostcheck({"--jsonl", "--root=" + FixtureRoot("healthy-8xh100")});
  CHECK(plain.Check("hostcheck.gdrcopy") == nullptr);
}
