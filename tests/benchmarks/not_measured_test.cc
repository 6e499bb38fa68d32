// Every suite, run for real on this machine in its could-not-run paths (no
// GPU driver, no InfiniBand, no DCGM, a path it cannot use, no rendezvous):
// the records must carry the not-measured marker (Finding.not_measured) with
// the reason, under the suite's category, and the exit code must say "could
// not run" (2) where nothing ran (issue 13, "Tests that prove it").
//
// Two layers:
//  - record level (always run): flag set, reason (detail) non-empty, category
//    the suite's (common/suite_catalog.cc), subject set, exit code;
//  - scorecard level, tag [scorecard]: the records and the task, fed
//    through the real cmax::reports::BuildScorecard, give "not measured" for
//    the suite's category and no node reason that grades it.
//
// GPU suites run with CUDA_VISIBLE_DEVICES set empty, so even on a machine
// with GPUs they take the "no GPU" path (gpu.no_device) instead of running;
// on a machine without a driver it is gpu.no_driver. Nothing here needs the
// network: the only rendezvous is a unix socket path that does not exist.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/subprocess.h"
#include "reports/run_data.h"
#include "reports/scorecard.h"
#include "tests/benchmarks/suite_run.h"
#include "tests/reports/scorecard_test_util.h"
#include "tests/skip.h"

namespace cmax {
namespace {

namespace fs = std::filesystem;
using testing::SuiteRun;

constexpr auto kTimeout = std::chrono::seconds(120);
const char kNode[] = "node-1";

std::string BinPath(const std::string& name) {
  return std::string(CMAX_TEST_BIN_DIR) + "/" + name;
}

bool HaveCudaBench() { return access(BinPath("cmax-bench-cuda").c_str(), X_OK) == 0; }

// A directory under /tmp, removed with everything in it at the end.
struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/cmax-not-measured-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string Sub(const std::string& rel) const { return (path / rel).string(); }
  void Write(const std::string& rel, const std::string& text) const {
    fs::create_directories((path / rel).parent_path());
    std::ofstream(path / rel) << text;
  }
};

// Runs `argv` (argv[0] an absolute path) like testing::RunSuite does.
SuiteRun RunAt(const std::vector<std::string>& argv,
               const std::map<std::string, std::string>& env = {}) {
  auto r = RunCommand(argv, kTimeout, 1 << 20, env);
  REQUIRE(r.ok());
  INFO(absl::StrJoin(argv, " ") << "\nstderr: " << r->err);
  REQUIRE(r->exit.exited);  // a crash is never a could-not-run answer
  SuiteRun run;
  run.exit_code = r->exit.code;
  run.out = std::move(r->out);
  run.err = std::move(r->err);
  run.records = testing::ParseRecords(run.out);
  return run;
}

SuiteRun Bench(const std::string& binary, const std::vector<std::string>& args,
               const std::map<std::string, std::string>& env = {}) {
  std::vector<std::string> argv = {BinPath(binary)};
  argv.insert(argv.end(), args.begin(), args.end());
  return RunAt(argv, env);
}

// No GPU for the CUDA suites, whatever the machine has.
const std::map<std::string, std::string> kNoGpu = {{"CUDA_VISIBLE_DEVICES", ""}};

// Whether this cmax-bench-cuda has the NCCL collective suite.
bool CudaHasCollective() {
  auto r = RunCommand({BinPath("cmax-bench-cuda"), "--help"}, kTimeout);
  return r.ok() && absl::StrContains(r->out, "collective");
}

std::vector<const v1::Finding*> NotMeasuredFindings(const SuiteRun& r) {
  std::vector<const v1::Finding*> out;
  for (const auto& rec : r.records) {
    if (rec.has_finding() && rec.finding().not_measured()) out.push_back(&rec.finding());
  }
  return out;
}

std::string Describe(const SuiteRun& r) {
  std::string s = absl::StrCat("exit ", r.exit_code, "\nstderr: ", r.err, "\nrecords:\n");
  for (const auto& rec : r.records) absl::StrAppend(&s, RecordToJsonLine(rec), "\n");
  return s;
}

// The record-level facts every not-measured finding must carry.
void CheckMarker(const v1::Finding& f, const std::string& category) {
  INFO(f.check_id() << ": " << f.title());
  CHECK(f.not_measured());
  CHECK(f.category() == category);
  CHECK_FALSE(f.check_id().empty());
  CHECK_FALSE(f.subject().empty());
  CHECK_FALSE(f.title().empty());
  CHECK_FALSE(f.detail().empty());  // the reason
}

// A suite that could not run at all: exit 2, at least one not-measured
// finding (with `check_id` among them), every finding marked, no measurement.
void RequireCouldNotRun(const SuiteRun& r, const std::string& category,
                        const std::string& check_id) {
  INFO(Describe(r));
  CHECK(r.exit_code == 2);
  auto nm = NotMeasuredFindings(r);
  REQUIRE_FALSE(nm.empty());
  bool found = false;
  for (const v1::Finding* f : nm) {
    CheckMarker(*f, category);
    if (absl::StartsWith(f->check_id(), check_id)) found = true;
  }
  CHECK(found);
  for (const auto& rec : r.records) {
    CHECK_FALSE(rec.has_measurement());
    if (rec.has_finding()) CHECK(rec.finding().not_measured());
  }
}

// ---- the scorecard ---------------------------------------------------------

std::string CategoryName(const std::string& category) {
  std::string c = category;
  if (!c.empty()) c[0] = absl::ascii_toupper(c[0]);
  return c;
}

// One task of `suite` on one node with the run's records: completed for exit
// 0 and 1, failed with exit 2 ("could not run: <last stderr line>", the
// agent's wording in agent/executor_kill.cc) otherwise.
reports::RunData DataFor(const std::string& suite, const SuiteRun& r) {
  reports::RunData d;
  d.run.set_run_id("run-nm");
  d.run.set_plan_name("not-measured");
  d.run.set_state("completed");
  d.plan.set_name("not-measured");
  d.nodes = {kNode};
  int64_t seq = 0;
  for (const auto& rec : r.records) {
    v1::ExportedRecord e;
    e.set_task_id(absl::StrCat("t-", suite, "-", kNode));
    e.set_attempt(1);
    e.set_seq(++seq);
    e.set_node(kNode);
    e.set_suite(suite);
    *e.mutable_record() = rec;
    d.records.push_back(std::move(e));
  }
  std::string last = r.err;
  while (!last.empty() && last.back() == '\n') last.pop_back();
  last = last.substr(last.rfind('\n') == std::string::npos ? 0 : last.rfind('\n') + 1);
  const bool completed = r.exit_code == 0 || r.exit_code == 1;
  d.tasks.push_back(reports::testing::Task(
      kNode, suite, completed ? v1::TASK_COMPLETED : v1::TASK_FAILED, r.exit_code,
      completed ? (r.exit_code == 0 ? "passed" : "ran and found failures")
                : absl::StrCat("could not run", last.empty() ? "" : ": ", last),
      r.err));
  return d;
}

// The suite's category is not measured, and no node reason grades it.
void RequireScorecardNotMeasured(const std::string& suite, const SuiteRun& r,
                                 const std::string& category) {
  v1::Scorecard card = reports::BuildScorecard(DataFor(suite, r));
  const std::string name = CategoryName(category);
  const v1::CategoryGrade& c = reports::testing::Category(card, name);
  INFO(suite << " -> " << name << ": " << c.summary() << "\n" << Describe(r));
  REQUIRE(c.name() == name);
  CHECK_FALSE(c.measured());
  CHECK(c.grade() == "not measured");
  for (const auto& rule : c.rules()) {
    INFO(rule.rule_id() << " " << rule.outcome() << ": " << rule.message());
    CHECK(rule.outcome() == "not_measured");
  }
  const v1::NodeVerdict& n = reports::testing::NodeOf(card, kNode);
  for (const auto& reason : n.reasons()) {
    if (!absl::StartsWith(reason, name + " ")) continue;
    INFO(reason);
    CHECK(absl::StartsWith(reason, name + " not measured"));
  }
}

// A suite that ran some checks and could not run others: every rule of the
// scorecard that comes from a not-measured finding is not measured, no node
// reason warns or fails on one, and where the category is graded some
// record of it really measured something.
void RequireScorecardGradesOnlyWhatRan(const std::string& suite, const SuiteRun& r,
                                       const std::string& category) {
  v1::Scorecard card = reports::BuildScorecard(DataFor(suite, r));
  const std::string name = CategoryName(category);
  std::set<std::string> nm_ids, nm_titles;
  bool evaluated = false;
  for (const auto& rec : r.records) {
    if (rec.has_measurement()) evaluated = true;
    if (!rec.has_finding()) continue;
    if (rec.finding().not_measured()) {
      nm_ids.insert(rec.finding().check_id());
      nm_titles.insert(rec.finding().title());
    } else if (rec.finding().category() == category) {
      evaluated = true;
    }
  }
  REQUIRE_FALSE(nm_ids.empty());
  for (const auto& c : card.categories()) {
    for (const auto& rule : c.rules()) {
      if (!nm_ids.count(rule.rule_id())) continue;
      INFO(c.name() << " " << rule.rule_id() << " " << rule.outcome() << ": "
                    << rule.message());
      CHECK(rule.outcome() == "not_measured");
    }
  }
  const v1::CategoryGrade& c = reports::testing::Category(card, name);
  INFO(name << ": " << c.grade() << ", " << c.summary());
  if (c.measured()) CHECK(evaluated);
  const v1::NodeVerdict& n = reports::testing::NodeOf(card, kNode);
  for (const auto& reason : n.reasons()) {
    for (const auto& title : nm_titles) {
      if (!absl::StrContains(reason, title)) continue;
      INFO(reason);
      CHECK(absl::StrContains(reason, " not measured: "));
    }
  }
}

// ---- the runs ---------------------------------------------------------------

// A copy of cmax-bench alone in a directory, so --backend cuda finds no
// cmax-bench-cuda next to it (a CPU-only install).
std::string LoneCmaxBench(const TempDir& dir) {
  const std::string path = dir.Sub("cmax-bench");
  fs::copy_file(BinPath("cmax-bench"), path);
  fs::permissions(path, fs::perms::owner_all);
  return path;
}

struct Whole {
  std::string suite, category, check_id;
  SuiteRun run;
};

// Every run below could not run at all on this machine.
std::vector<Whole> CpuCouldNotRunRuns(const TempDir& tmp) {
  std::vector<Whole> w;
  w.push_back({"gemm", "compute", "gemm.not_measured",
               Bench("cmax-bench", {"gemm", "--backend", "cuda", "--jsonl"})});
  const std::string lone = LoneCmaxBench(tmp);
  w.push_back(
      {"burnin", "reliability", "burnin.not_measured",
       RunAt({lone, "burnin", "--backend", "cuda", "--duration", "1", "--jsonl"})});
  w.push_back({"consistency", "reliability", "consistency.not_measured",
               RunAt({lone, "consistency", "--backend", "cuda", "--jsonl"})});
  // dcgmi nowhere on PATH.
  w.push_back(
      {"dcgm", "reliability", "dcgm.not_measured",
       Bench("cmax-bench", {"dcgm", "--jsonl"}, {{"PATH", tmp.Sub("empty-path")}})});
  w.push_back({"storage", "storage", "storage.",
               Bench("cmax-bench", {"storage", "--path", "/proc", "--pattern", "seq-read",
                                    "--size", "1M", "--jsonl"})});
  // No rendezvous at all: not a rank of a gang.
  std::map<std::string, std::string> no_group = {{"CMAX_RENDEZVOUS", ""}};
  w.push_back({"connectivity", "networking", "connectivity.not_measured",
               Bench("cmax-bench", {"connectivity", "--jsonl"}, no_group)});
  // A rendezvous that cannot be reached (a unix socket nobody listens on).
  std::map<std::string, std::string> dead_group = {
      {"CMAX_RENDEZVOUS", absl::StrCat("unix:", tmp.Sub("no-agent.sock"))},
      {"CMAX_RANK", "0"},
      {"CMAX_WORLD_SIZE", "2"},
      {"CMAX_LOCAL_RANK", "0"},
      {"CMAX_LOCAL_WORLD_SIZE", "1"}};
  w.push_back(
      {"collective", "networking", "collective.not_measured",
       Bench("cmax-bench",
             {"collective", "--backend", "gloo", "-b", "8", "-e", "1K", "--jsonl"},
             dead_group)});
  w.push_back(
      {"hostcheck", "reliability", "hostcheck.not_measured",
       Bench("cmax-bench", {"hostcheck", "--root", tmp.Sub("no-such-root"), "--jsonl"})});
  fs::create_directories(tmp.Sub("empty-root"));
  w.push_back(
      {"hostcheck", "reliability", "hostcheck.not_measured",
       Bench("cmax-bench", {"hostcheck", "--root", tmp.Sub("empty-root"), "--jsonl"})});
  w.push_back(
      {"health", "reliability", "health.not_measured",
       Bench("cmax-bench", {"health", "--root", tmp.Sub("empty-root"), "--jsonl"})});
  // No RDMA devices under the root's /sys/class/infiniband (and no rendezvous).
  w.push_back({"rdma", "networking", "rdma.not_measured",
               Bench("cmax-bench", {"rdma", "--root", tmp.Sub("empty-root"), "--jsonl"})});
  w.push_back(
      {"health", "reliability", "health.not_measured",
       Bench("cmax-bench", {"health", "--root", tmp.Sub("no-such-root"), "--jsonl"})});
  // No interpreter on PATH, and one without torch (a real python without
  // its site packages: `import torch` fails as where torch is missing).
  w.push_back({"workload", "compute", "workload.not_measured",
               Bench("cmax-bench", {"workload", "--jsonl"}, {{"PATH", tmp.Sub("empty-path")}})});
  // A GPU job asked of a node without NVIDIA GPUs (this CI machine).
  if (!fs::exists("/dev/nvidia0")) {
    w.push_back({"workload", "compute", "workload.not_measured",
                 Bench("cmax-bench", {"workload", "--device", "cuda", "--jsonl"})});
  }
  fs::create_directories(tmp.Sub("no-torch"));
  {
    std::ofstream(tmp.Sub("no-torch/python3")) << "#!/bin/sh\nexec /usr/bin/python3 -S \"$@\"\n";
    chmod(tmp.Sub("no-torch/python3").c_str(), 0755);
  }
  w.push_back({"workload", "compute", "workload.not_measured",
               Bench("cmax-bench", {"workload", "--steps", "2", "--warmup-steps", "0", "--jsonl"},
                     {{"PATH", tmp.Sub("no-torch") + ":/usr/bin:/bin"}})});
  w.push_back({"audit", "security", "audit.advisories",
               Bench("cmax-bench", {"audit", "--advisories",
                                    tmp.Sub("no-such-advisories.yaml"), "--jsonl"})});
  return w;
}

std::vector<Whole> GpuCouldNotRunRuns() {
  std::vector<Whole> w;
  w.push_back({"gemm", "compute", "gpu.no_",
               Bench("cmax-bench-cuda", {"gemm", "--jsonl"}, kNoGpu)});
  w.push_back({"memory", "compute", "gpu.no_",
               Bench("cmax-bench-cuda", {"memory", "--jsonl"}, kNoGpu)});
  w.push_back(
      {"burnin", "reliability", "gpu.no_",
       Bench("cmax-bench-cuda", {"burnin", "--duration", "1", "--jsonl"}, kNoGpu)});
  w.push_back({"consistency", "reliability", "gpu.no_",
               Bench("cmax-bench-cuda", {"consistency", "--jsonl"}, kNoGpu)});
  if (CudaHasCollective()) {
    w.push_back({"collective", "networking", "gpu.no_",
                 Bench("cmax-bench-cuda", {"collective", "--backend", "nccl", "--jsonl"},
                       kNoGpu)});
  }
  return w;
}

}  // namespace

TEST_CASE(
    "host suites that could not run write not-measured findings with the reason, exit 2",
    "[not_measured]") {
  TempDir tmp;
  for (const Whole& w : CpuCouldNotRunRuns(tmp)) {
    INFO(w.suite << " (" << w.check_id << ")");
    RequireCouldNotRun(w.run, w.category, w.check_id);
  }
}

TEST_CASE(
    "GPU suites without a GPU write gpu.no_driver or gpu.no_device, not measured, "
    "under their own category",
    "[not_measured]") {
  if (!HaveCudaBench()) {
    CMAX_SKIP("cmax-bench-cuda is not built here (no CUDA toolkit)");
  }
  for (const Whole& w : GpuCouldNotRunRuns()) {
    INFO(w.suite);
    RequireCouldNotRun(w.run, w.category, w.check_id);
    // The driver check names the suite's category, not always compute.
    for (const v1::Finding* f : NotMeasuredFindings(w.run))
      CHECK(f->category() == w.category);
  }
}

TEST_CASE(
    "hostcheck on a root with only /proc/meminfo measures memory and marks the rest",
    "[not_measured]") {
  TempDir tmp;
  // /proc/meminfo as Linux prints it (fs/proc/meminfo.c: "%-16s%8lu kB").
  tmp.Write("root/proc/meminfo",
            "MemTotal:       65848712 kB\nMemFree:        40101234 kB\n"
            "MemAvailable:   60123456 kB\n");
  SuiteRun r = Bench("cmax-bench", {"hostcheck", "--root", tmp.Sub("root"), "--jsonl"});
  INFO(Describe(r));
  CHECK(r.exit_code == 0);
  auto nm = NotMeasuredFindings(r);
  REQUIRE_FALSE(nm.empty());
  std::set<std::string> ids;
  for (const v1::Finding* f : nm) {
    // The GPU-NIC topology check judges networking paths (hostcheck.cc).
    CheckMarker(*f, f->check_id() == "hostcheck.topology" ? "networking" : "reliability");
    ids.insert(f->check_id());
  }
  CHECK(ids.count("hostcheck.gpu_count"));
  CHECK(ids.count("hostcheck.topology"));
  CHECK(ids.count("hostcheck.clock_sync"));
  // Memory was read: a measurement, and no not-measured finding for it.
  bool memory = false;
  for (const auto& rec : r.records) {
    if (rec.has_measurement() &&
        absl::StrContains(rec.measurement().metric(), "memory")) {
      memory = true;
    }
  }
  CHECK(memory);
  CHECK_FALSE(ids.count("hostcheck.memory"));
}

// A root with an empty PCI bus and nothing else: the bus is read (no GPU on
// it), NVML has no fixture to describe and /dev/kmsg is missing.
void MakeBareHealthRoot(const TempDir& tmp, const std::string& rel) {
  fs::create_directories(tmp.Sub(rel + "/sys/bus/pci/devices"));
  fs::create_directories(tmp.Sub(rel + "/proc"));
}

TEST_CASE("health on a bare root: GPU health and Xids not measured, with reasons",
          "[not_measured]") {
  TempDir tmp;
  MakeBareHealthRoot(tmp, "root");
  SuiteRun r = Bench("cmax-bench", {"health", "--root", tmp.Sub("root"), "--jsonl"});
  INFO(Describe(r));
  CHECK(r.exit_code == 0);  // nothing failed; there is no GPU on this root's bus
  std::map<std::string, const v1::Finding*> nm;
  for (const v1::Finding* f : NotMeasuredFindings(r)) {
    CheckMarker(*f, "reliability");
    nm[f->check_id()] = f;
  }
  REQUIRE(nm.count("health.gpu_not_measured"));
  CHECK_THAT(nm["health.gpu_not_measured"]->detail(), Catch::Contains(tmp.Sub("root")));
  REQUIRE(nm.count("health.kernel_log_unreadable"));
  // Every finding without the marker is a check that ran.
  for (const auto& rec : r.records) {
    if (rec.has_finding() && !rec.finding().not_measured()) {
      INFO(rec.finding().check_id());
      CHECK_FALSE(absl::StrContains(rec.finding().title(), "not measured"));
    }
  }
}

TEST_CASE("health without NVML: the scorecard's NVLink domains are not measured, never passed",
          "[scorecard]") {
  TempDir tmp;
  MakeBareHealthRoot(tmp, "root");
  // One H100 on the bus (vendor NVIDIA, class 3D controller), and no NVML to ask about it.
  tmp.Write("root/sys/bus/pci/devices/0000:18:00.0/vendor", "0x10de\n");
  tmp.Write("root/sys/bus/pci/devices/0000:18:00.0/class", "0x030200\n");
  SuiteRun r = Bench("cmax-bench", {"health", "--root", tmp.Sub("root"), "--jsonl"});
  INFO(Describe(r));
  bool said = false;
  for (const v1::Finding* f : NotMeasuredFindings(r)) {
    said = said || f->check_id() == "health.nvlink_fabric_not_measured";
  }
  REQUIRE(said);
  v1::Scorecard card = reports::BuildScorecard(DataFor("health", r));
  const v1::CategoryGrade& c = reports::testing::Category(card, "Reliability");
  const v1::RuleResult* domain = nullptr;
  for (const auto& rule : c.rules()) {
    if (rule.rule_id() == "nvlink.domain") domain = &rule;
  }
  INFO(c.summary());
  REQUIRE(domain != nullptr);
  CHECK(domain->outcome() == "not_measured");
  CHECK(domain->subject() == "NVLink domains");
  CHECK_THAT(domain->message(), Catch::StartsWith("no GPU reported an NVLink domain (1 node could not read"));
  REQUIRE(domain->evidence_size() == 1);
  CHECK_THAT(domain->evidence(0), Catch::StartsWith(std::string(kNode) + ": "));
  CHECK(reports::testing::NodeOf(card, kNode).verdict() != "pass");
}

TEST_CASE(
    "audit without drivers, RDMA ports or tools marks its SKIPPED checks not measured",
    "[not_measured]") {
  TempDir tmp;
  fs::create_directories(tmp.Sub("root"));
  SuiteRun r = Bench("cmax-bench", {"audit", "--root", tmp.Sub("root"), "--jsonl"},
                     {{"PATH", tmp.Sub("empty-path")}});
  INFO(Describe(r));
  CHECK(r.exit_code == 0);
  int skipped = 0;
  for (const auto& rec : r.records) {
    if (!rec.has_finding()) continue;
    const v1::Finding& f = rec.finding();
    INFO(f.check_id() << ": " << f.title());
    // SKIPPED is written as "SKIPPED: <title>" (benchmarks/audit/report.cc).
    if (absl::StartsWith(f.title(), "SKIPPED")) {
      ++skipped;
      CHECK(f.not_measured());
    }
    if (f.not_measured()) CheckMarker(f, f.category());
    if (absl::StartsWith(f.title(), "PASS") || absl::StartsWith(f.title(), "FAIL")) {
      CHECK_FALSE(f.not_measured());
    }
  }
  CHECK(skipped > 0);
  // No /proc/sys/kernel/osrelease under the root: the kernel check could not run.
  bool kernel = false;
  for (const v1::Finding* f : NotMeasuredFindings(r)) {
    if (f->check_id() == "audit.kernel.newest") kernel = true;
  }
  CHECK(kernel);
  bool ib_skipped = false;
  for (const v1::Finding* f : NotMeasuredFindings(r)) {
    if (f->check_id() == "audit.ib.ports") ib_skipped = true;
    CHECK((f->category() == "security" || f->category() == "lifecycle"));
  }
  CHECK(ib_skipped);
}

TEST_CASE("rdma without RDMA devices: not measured with the reason, in the scorecard too",
          "[not_measured][scorecard]") {
  TempDir tmp;
  fs::create_directories(tmp.Sub("root/sys/class/infiniband"));  // the class, no device
  // A rank of a pair whose agent is gone: the device check still comes first.
  std::map<std::string, std::string> env = {
      {"CMAX_RENDEZVOUS", absl::StrCat("unix:", tmp.Sub("no-agent.sock"))},
      {"CMAX_RANK", "1"},
      {"CMAX_WORLD_SIZE", "2"}};
  for (const SuiteRun& r :
       {Bench("cmax-bench", {"rdma", "--root", tmp.Sub("root"), "--jsonl"}),
        Bench("cmax-bench", {"rdma", "--root", tmp.Sub("root"), "--jsonl"}, env)}) {
    RequireCouldNotRun(r, "networking", "rdma.not_measured");
    auto nm = NotMeasuredFindings(r);
    REQUIRE_FALSE(nm.empty());
    CHECK_THAT(nm.front()->detail(), Catch::Contains("no RDMA devices") &&
                                         Catch::Contains("/sys/class/infiniband is empty"));
    RequireScorecardNotMeasured("rdma", r, "networking");
  }
}

TEST_CASE("collective with one rank: busbw of the (n-1)/n ops is not measured, in the scorecard too",
          "[not_measured][scorecard]") {
  // A group of one (no rendezvous): gloo runs every op on this process alone.
  SuiteRun r = Bench("cmax-bench",
                     {"collective", "--backend", "gloo", "--op", "all", "-b", "1K", "-e", "4K",
                      "-f", "4", "-n", "2", "-w", "1", "--gloo-address", "127.0.0.1", "--jsonl"},
                     {{"CMAX_RENDEZVOUS", ""}});
  INFO(Describe(r));
  REQUIRE(r.exit_code == 0);
  std::set<std::string> bus_ops, alg_ops, nm_ops;
  for (const auto& rec : r.records) {
    if (rec.has_measurement()) {
      const auto& m = rec.measurement();
      const std::string op = m.labels().count("op") ? m.labels().at("op") : "";
      if (m.metric() == "busbw_gbps" || m.metric() == "avg_busbw_gbps") {
        bus_ops.insert(op);
        CHECK(m.value() > 0);  // a figure, never the 0 of a factor of 0
      }
      if (m.metric() == "algbw_gbps") alg_ops.insert(op);
    }
    if (rec.has_finding() && rec.finding().check_id() == "collective.busbw_one_rank") {
      CheckMarker(rec.finding(), "networking");
      nm_ops.insert(rec.finding().labels().at("op"));
    }
  }
  CHECK(bus_ops == std::set<std::string>{"broadcast", "sendrecv"});
  CHECK(alg_ops.size() == 6);
  CHECK(nm_ops == std::set<std::string>{"all_gather", "all_reduce", "alltoall", "reduce_scatter"});
  RequireScorecardGradesOnlyWhatRan("collective", r, "networking");
  // The scorecard says which figure is missing, op by op.
  v1::Scorecard card = reports::BuildScorecard(DataFor("collective", r));
  std::set<std::string> said;
  for (const auto& c : card.categories()) {
    for (const auto& rule : c.rules()) {
      if (rule.rule_id() != "collective.busbw_one_rank") continue;
      CHECK(rule.outcome() == "not_measured");
      CHECK(rule.node() == kNode);
      for (const char* op : {"all_gather", "all_reduce", "alltoall", "reduce_scatter"}) {
        if (absl::StrContains(rule.message(), absl::StrCat(op, " bus bandwidth"))) said.insert(op);
      }
    }
  }
  CHECK(said.size() == 4);
}

TEST_CASE("selftest writes findings only under its own category", "[not_measured]") {
  for (const char* mode : {"fail", "records", "ok"}) {
    SuiteRun r =
        Bench("cmax-bench", {"selftest", "--mode", mode, "--records", "3", "--jsonl"});
    INFO(mode << "\n" << Describe(r));
    for (const auto& rec : r.records) {
      if (rec.has_finding()) CHECK(rec.finding().category() == "reliability");
    }
  }
}

// ---- scorecard level ----------------------------------------------------------

TEST_CASE("scorecard: a suite that could not run leaves its category not measured",
          "[scorecard]") {
  TempDir tmp;
  std::vector<Whole> runs = CpuCouldNotRunRuns(tmp);
  if (HaveCudaBench()) {
    for (auto& w : GpuCouldNotRunRuns()) runs.push_back(std::move(w));
  } else {
    WARN("cmax-bench-cuda is not built here: GPU suites not checked");
  }
  for (const Whole& w : runs) {
    INFO(w.suite << " (" << w.check_id << ")");
    RequireScorecardNotMeasured(w.suite, w.run, w.category);
  }
}

TEST_CASE("scorecard: suites that ran some checks are graded only by those",
          "[scorecard]") {
  TempDir tmp;
  tmp.Write("hostcheck/proc/meminfo", "MemTotal:       65848712 kB\n");
  fs::create_directories(tmp.Sub("empty"));
  RequireScorecardGradesOnlyWhatRan(
      "hostcheck",
      Bench("cmax-bench", {"hostcheck", "--root", tmp.Sub("hostcheck"), "--jsonl"}),
      "reliability");
  MakeBareHealthRoot(tmp, "health");
  RequireScorecardGradesOnlyWhatRan(
      "health", Bench("cmax-bench", {"health", "--root", tmp.Sub("health"), "--jsonl"}),
      "reliability");
  RequireScorecardGradesOnlyWhatRan(
      "audit",
      Bench("cmax-bench", {"audit", "--root", tmp.Sub("empty"), "--jsonl"},
            {{"PATH", tmp.Sub("empty-path")}}),
      "security");
}

}  // namespace cmax
