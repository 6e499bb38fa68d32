// cmax-bench orchestration on the fixture roots of
// tests/fixtures/orchestration/: each check's outcome, what it names (file
// and line) and its remediation; scontrol's output through a fake runner;
// the built binary's records through the scorecard.
#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "benchmarks/orchestration/config_text.h"
#include "benchmarks/orchestration/orchestration.h"
#include "generated/suite_judges.h"
#include "reports/scorecard.h"
#include "tests/benchmarks/suite_run.h"

using namespace std::chrono_literals;
using cmax::orchestration::Check;
using cmax::orchestration::Status;

namespace {

std::string Fixture(const std::string& name) {
  return std::string(CMAX_SOURCE_DIR) + "/tests/fixtures/orchestration/" + name;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<Check> ChecksOn(const std::string& root,
                            cmax::orchestration::CommandRunner run = nullptr,
                            bool managed = true) {
  cmax::orchestration::Options o;
  o.root = Fixture(root);
  o.managed = managed;
  o.run = std::move(run);
  return cmax::orchestration::RunChecks(o);
}

const Check& Find(const std::vector<Check>& checks, const std::string& id) {
  for (const Check& c : checks) {
    if (c.id == id) return c;
  }
  FAIL("no check " << id);
  static Check none;
  return none;
}

bool Names(const Check& c, const std::string& text) {
  for (const auto& e : c.evidence) {
    if (absl::StrContains(e, text)) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("orchestration: hostlists expand as Slurm writes them", "[orchestration]") {
  using cmax::orchestration::ExpandHostlist;
  auto a = ExpandHostlist("node[01-03,7],login");
  REQUIRE(a.has_value());
  CHECK(*a == std::vector<std::string>{"node01", "node02", "node03", "node7", "login"});
  auto d = ExpandHostlist("/dev/nvidia[0-7]");
  REQUIRE(d.has_value());
  CHECK(d->size() == 8);
  CHECK(d->back() == "/dev/nvidia7");
  auto two = ExpandHostlist("r[1-2]n[1-2]");
  REQUIRE(two.has_value());
  CHECK(*two == std::vector<std::string>{"r1n1", "r1n2", "r2n1", "r2n2"});
  CHECK_FALSE(ExpandHostlist("node[3-1]").has_value());
  CHECK_FALSE(ExpandHostlist("node[1-").has_value());
  CHECK_FALSE(ExpandHostlist("node[0-99999999]").has_value());
}

TEST_CASE("orchestration: slurm.conf pairs keep their line, keys ignore case, later lines win",
          "[orchestration]") {
  auto f = cmax::orchestration::ParseSlurmConfig(
      "# comment\nTaskPlugin=task/affinity # old\n\ntaskplugin=task/cgroup,task/affinity\n"
      "NodeName=a[1-2] Gres=gpu:h100:8 Feature=\"x y\"\n",
      "/etc/slurm/slurm.conf");
  auto tp = f.Get("TaskPlugin");
  REQUIRE(tp.has_value());
  CHECK(tp->value == "task/cgroup,task/affinity");
  CHECK(tp->line == 4);
  CHECK(cmax::orchestration::Where(*tp) == "/etc/slurm/slurm.conf:4");
  REQUIRE(f.lines.size() == 3);
  CHECK(f.lines[2].pairs.size() == 3);
  CHECK(f.lines[2].pairs[2].value == "x y");
}

TEST_CASE("orchestration: scontrol show config and show node output parse",
          "[orchestration]") {
  auto c = cmax::orchestration::ParseScontrolConfig(ReadText(Fixture("scontrol/show_config.txt")));
  auto cd = c.Get("ConstrainDevices");
  REQUIRE(cd.has_value());
  CHECK(cd->value == "no");
  CHECK(cd->line == 24);
  CHECK(c.Get("AccountingStorageType")->value.empty());  // (null)
  auto n = cmax::orchestration::ParseScontrolNode(ReadText(Fixture("scontrol/show_node.txt")));
  CHECK(n.at("State").value == "IDLE+DRAIN");
  CHECK(n.at("State").line == 9);
  CHECK(n.at("Reason").value == "cmax: health fail (xid 79) [root@2026-12-05T17:00:00]");
}

TEST_CASE("orchestration: a well set up Slurm node passes every check", "[orchestration]") {
  auto checks = ChecksOn("slurm-good");
  for (const Check& c : checks) {
    INFO(c.id << ": " << c.title);
    CHECK((c.status == Status::kPass || c.status == Status::kInfo ||
           (c.id == "orchestration.slurm.node_state" && c.status == Status::kNotMeasured)));
  }
  const Check& gres = Find(checks, "orchestration.slurm.gres");
  CHECK(gres.status == Status::kPass);
  CHECK(Names(gres, "/etc/slurm/gres.conf:2: NodeName=gpu-node-[01-18] Name=gpu"));
  CHECK(Names(gres, "/etc/slurm/slurm.conf:13: Gres=gpu:h100:8"));
  CHECK(Names(Find(checks, "orchestration.slurm.constrain_devices"),
              "/etc/slurm/cgroup.conf:3: ConstrainDevices=yes"));
  const Check& hc = Find(checks, "orchestration.slurm.health_check");
  CHECK(absl::StrContains(hc.title, "every 300 s (cmax's)"));
  const Check& topo = Find(checks, "orchestration.slurm.topology");
  CHECK(absl::StrContains(topo.title, "BlockName=nvl-a"));
  CHECK(Names(topo, "/etc/slurm/topology.conf:2"));
  const Check& ct = Find(checks, "orchestration.slurm.containers");
  CHECK(ct.title == "container support: pyxis configured, enroot installed");
  const Check& acct = Find(checks, "orchestration.slurm.accounting");
  CHECK(acct.status == Status::kPass);
  CHECK(acct.title == "job accounting through slurmdbd; usage gathered by jobacct_gather/cgroup");
  CHECK(Names(acct, "/etc/slurm/slurm.conf:15: AccountingStorageType=accounting_storage/slurmdbd"));
  // Without the real root, scontrol is not run: not measured, never a pass.
  const Check& state = Find(checks, "orchestration.slurm.node_state");
  CHECK(state.status == Status::kNotMeasured);
  CHECK(cmax::orchestration::ToFinding(state).not_measured());
}

TEST_CASE("orchestration: a badly set up Slurm node fails, naming file, line and fix",
          "[orchestration]") {
  auto checks = ChecksOn("slurm-bad");
  const std::string dir = "/var/spool/slurmd/conf-cache/";
  const Check& gres = Find(checks, "orchestration.slurm.gres");
  CHECK(gres.status == Status::kFail);
  CHECK(gres.title == "gres.conf lists 4 GPUs; the node has 8");
  CHECK(absl::StrContains(gres.action, dir + "gres.conf"));
  CHECK(absl::StrContains(gres.action, "File=/dev/nvidia[0-7]"));
  const Check& cd = Find(checks, "orchestration.slurm.constrain_devices");
  CHECK(cd.status == Status::kFail);
  CHECK(Names(cd, dir + "cgroup.conf:2: ConstrainDevices=no"));
  CHECK(absl::StrContains(cd.action, "ConstrainDevices=yes in " + dir + "cgroup.conf"));
  const Check& sec = Find(checks, "orchestration.slurm.device_isolation");
  CHECK(sec.category == "security");
  CHECK(sec.status == Status::kFail);
  const Check& tp = Find(checks, "orchestration.slurm.task_plugin");
  CHECK(tp.status == Status::kFail);
  CHECK(Names(tp, dir + "slurm.conf:3: TaskPlugin=task/affinity"));
  const Check& sel = Find(checks, "orchestration.slurm.select");
  CHECK(sel.status == Status::kWarn);
  CHECK(absl::StrContains(sel.action, "SelectType=select/cons_tres"));
  const Check& hc = Find(checks, "orchestration.slurm.health_check");
  CHECK(hc.status == Status::kFail);
  CHECK(absl::StrContains(hc.action, "HealthCheckProgram=/usr/local/bin/cmax-healthcheck"));
  CHECK(Find(checks, "orchestration.slurm.topology").status == Status::kWarn);
  CHECK(Find(checks, "orchestration.slurm.containers").title ==
        "container support: pyxis not configured, enroot not installed");
  const Check& acct = Find(checks, "orchestration.slurm.accounting");
  CHECK(acct.status == Status::kWarn);
  CHECK(absl::StrContains(acct.title, "AccountingStorageType unset"));
  CHECK(absl::StrContains(acct.action, "AccountingStorageType=accounting_storage/slurmdbd"));
  CHECK(absl::StrContains(acct.action, " in " + dir + "slurm.conf"));
}

TEST_CASE("orchestration: scontrol's effective configuration wins over the files, and the node "
          "state comes from scontrol show node", "[orchestration]") {
  std::vector<std::vector<std::string>> calls;
  auto run = [&](const std::vector<std::string>& argv) -> std::optional<std::string> {
    calls.push_back(argv);
    if (argv == std::vector<std::string>{"scontrol", "show", "config"}) {
      return ReadText(Fixture("scontrol/show_config.txt"));
    }
    if (argv == std::vector<std::string>{"scontrol", "show", "node", "gpu-node-01"}) {
      return ReadText(Fixture("scontrol/show_node.txt"));
    }
    return std::nullopt;
  };
  auto checks = ChecksOn("slurm-good", run);
  CHECK(calls.size() == 2);
  const Check& cd = Find(checks, "orchestration.slurm.constrain_devices");
  CHECK(cd.status == Status::kFail);  // the file says yes; the running slurmd says no
  CHECK(Names(cd, "scontrol show config: ConstrainDevices (output line 24): ConstrainDevices=no"));
  CHECK(absl::StrContains(Find(checks, "orchestration.slurm.health_check").title, "every 300 s"));
  CHECK(absl::StrContains(Find(checks, "orchestration.slurm.topology").title, "topology/tree"));
  // scontrol says "(null)": no accounting, whatever the file says.
  CHECK(Find(checks, "orchestration.slurm.accounting").status == Status::kWarn);
  const Check& state = Find(checks, "orchestration.slurm.node_state");
  CHECK(state.status == Status::kWarn);
  CHECK(Names(state, "scontrol show node gpu-node-01 (output line 9): State=IDLE+DRAIN"));
  CHECK(Names(state, "Reason=cmax: health fail (xid 79)"));
  CHECK(absl::StrContains(state.action, "scontrol update NodeName=gpu-node-01 State=RESUME"));
}

TEST_CASE("orchestration: Kubernetes kubelet policies and device plugins", "[orchestration]") {
  auto good = ChecksOn("k8s-good");
  for (const char* id : {"orchestration.k8s.device_plugin", "orchestration.k8s.topology_manager",
                         "orchestration.k8s.cpu_manager", "orchestration.k8s.rdma_plugin"}) {
    INFO(id);
    CHECK(Find(good, id).status == Status::kPass);
  }
  CHECK(Names(Find(good, "orchestration.k8s.topology_manager"),
              "/var/lib/kubelet/config.yaml:7: topologyManagerPolicy=single-numa-node"));
  CHECK(Find(good, "orchestration.k8s.cdi").title == "CDI specs: /etc/cdi/nvidia.yaml");
  auto bad = ChecksOn("k8s-bad");
  const Check& dp = Find(bad, "orchestration.k8s.device_plugin");
  CHECK(dp.status == Status::kFail);
  CHECK(absl::StrContains(dp.action, "GPU Operator"));
  const Check& tm = Find(bad, "orchestration.k8s.topology_manager");
  CHECK(tm.status == Status::kWarn);
  CHECK(absl::StrContains(tm.action, "topologyManagerPolicy: single-numa-node"));
  CHECK(Find(bad, "orchestration.k8s.cpu_manager").status == Status::kWarn);
  CHECK(Find(bad, "orchestration.k8s.rdma_plugin").status == Status::kWarn);
}

TEST_CASE("orchestration: no scheduler fails a managed cluster and is not measured on bare metal",
          "[orchestration]") {
  auto managed = ChecksOn("none");
  REQUIRE(managed.size() == 1);
  CHECK(managed[0].id == "orchestration.scheduler");
  CHECK(managed[0].status == Status::kFail);
  auto bare = ChecksOn("none", nullptr, /*managed=*/false);
  REQUIRE(bare.size() == 1);
  CHECK(bare[0].status == Status::kNotMeasured);
  CHECK(cmax::orchestration::ToFinding(bare[0]).not_measured());
}

TEST_CASE("orchestration: the binary's exit codes and records", "[orchestration]") {
  auto good = cmax::testing::RunSuite(
      "cmax-bench", {"orchestration", "--jsonl", "--root", Fixture("slurm-good")}, 30s);
  CHECK(good.exit_code == 0);
  CHECK(good.records.size() >= 8);
  int blocks = 0;
  for (const auto& r : good.records) {
    if (!r.has_measurement() || r.measurement().metric() != "slurm_block") continue;
    ++blocks;
    CHECK(r.measurement().labels().at("block") == "nvl-a");
    CHECK(r.measurement().labels().at("source") == "/etc/slurm/topology.conf:2");
  }
  CHECK(blocks == 1);
  auto bad = cmax::testing::RunSuite(
      "cmax-bench", {"orchestration", "--jsonl", "--root", Fixture("slurm-bad")}, 30s);
  CHECK(bad.exit_code == 1);
  int fails = 0;
  for (const auto& r : bad.records) {
    if (r.has_finding() && r.finding().severity() == cmax::v1::SEVERITY_FAIL) ++fails;
  }
  CHECK(fails >= 5);
  auto bare = cmax::testing::RunSuite(
      "cmax-bench", {"orchestration", "--jsonl", "--managed=false", "--root", Fixture("none")}, 30s);
  CHECK(bare.exit_code == 0);
  auto missing = cmax::testing::RunSuite(
      "cmax-bench", {"orchestration", "--jsonl", "--root", Fixture("no-such-root")}, 30s);
  CHECK(missing.exit_code == 2);
  REQUIRE(missing.records.size() == 1);
  CHECK(missing.records[0].finding().not_measured());
}

namespace {

cmax::v1::ExportedRecord Measure(const std::string& node, const std::string& suite,
                                 const std::string& metric,
                                 std::map<std::string, std::string> labels) {
  cmax::v1::ExportedRecord r;
  r.set_node(node);
  r.set_suite(suite);
  auto* m = r.mutable_record()->mutable_measurement();
  m->set_suite(suite);
  m->set_metric(metric);
  m->set_value(1);
  m->set_unit(metric == "slurm_block" ? "count" : "bool");
  for (auto& [k, v] : labels) (*m->mutable_labels())[k] = v;
  return r;
}

// Nodes a..d with Slurm blocks and NVLink domains (2 GPUs each).
cmax::reports::RunData BlocksRun(const std::map<std::string, std::pair<std::string, std::string>>&
                                     node_block_domain) {
  cmax::reports::RunData d;
  for (const auto& [node, bd] : node_block_domain) {
    d.nodes.push_back(node);
    d.records.push_back(Measure(node, "orchestration", "slurm_block", {{"block", bd.first}}));
    for (const char* gpu : {"0", "1"}) {
      d.records.push_back(Measure(node, "health", "nvlink_fabric",
                                  {{"gpu", gpu}, {"cluster_uuid", bd.second}, {"clique_id", "1"}}));
    }
  }
  return d;
}

std::map<std::string, cmax::v1::RuleResult> ByNode(const std::vector<cmax::v1::RuleResult>& rs) {
  std::map<std::string, cmax::v1::RuleResult> out;
  for (const auto& r : rs) {
    CHECK(r.rule_id() == "orchestration.slurm_block");
    CHECK(r.category() == "Orchestration");
    out[r.node()] = r;
  }
  return out;
}

}  // namespace

TEST_CASE("orchestration: Slurm blocks against NVLink domains", "[orchestration]") {
  const std::string d1 = "2f5a0c1e-0000-4000-8000-000000000001";
  const std::string d2 = "2f5a0c1e-0000-4000-8000-000000000002";
  std::vector<cmax::v1::RuleResult> out;
  cmax::reports::JudgeSlurmBlocks(
      BlocksRun({{"a", {"b1", d1}}, {"b", {"b1", d1}}, {"c", {"b2", d2}}, {"d", {"b2", d2}}}),
      &out);
  auto good = ByNode(out);
  REQUIRE(good.size() == 4);
  for (const auto& [node, r] : good) {
    INFO(node << ": " << r.message());
    CHECK(r.outcome() == "pass");
  }
  CHECK(good["a"].message() == "Slurm block b1 is NVLink domain " + d1 + " (2 nodes)");

  // c sits in b2 but is wired into d1: b2 spans two domains, d1 is split.
  out.clear();
  cmax::reports::JudgeSlurmBlocks(
      BlocksRun({{"a", {"b1", d1}}, {"b", {"b1", d1}}, {"c", {"b2", d1}}, {"d", {"b2", d2}}}),
      &out);
  auto bad = ByNode(out);
  REQUIRE(bad.size() == 4);
  CHECK(bad["c"].outcome() == "fail");
  CHECK(bad["d"].outcome() == "fail");
  CHECK(bad["d"].message() == "Slurm block b2 spans NVLink domains: d is in " + d2 + ", c in " + d1 +
                                  "; a job given this block crosses domains");
  CHECK(absl::StrContains(bad["d"].action(), "move c out of block b2"));
  CHECK(bad["a"].outcome() == "warn");
  CHECK(bad["a"].message() == "NVLink domain " + d1 + " is split over Slurm blocks b1 and b2 (c)");

  // Without NVLink domains (no fabric, or an all-zero UUID) nothing is compared.
  out.clear();
  cmax::reports::JudgeSlurmBlocks(
      BlocksRun({{"a", {"b1", "00000000-0000-0000-0000-000000000000"}}}), &out);
  CHECK(out.empty());
}

TEST_CASE("orchestration: could-not-run and bare metal records leave Orchestration not measured "
          "and the run not rated", "[orchestration]") {
  auto bare = cmax::testing::RunSuite(
      "cmax-bench", {"orchestration", "--jsonl", "--managed=false", "--root", Fixture("none")}, 30s);
  auto missing = cmax::testing::RunSuite(
      "cmax-bench", {"orchestration", "--jsonl", "--root", Fixture("no-such-root")}, 30s);
  cmax::reports::RunData data;
  data.nodes = {"node-1", "node-2"};
  data.plan.add_suites()->set_suite("orchestration");
  int i = 0;
  for (const auto* run : {&bare, &missing}) {
    const std::string node = i == 0 ? "node-1" : "node-2";
    const std::string task = "t" + std::to_string(++i);
    cmax::v1::TaskInfo t;
    t.set_task_id(task);
    t.set_suite("orchestration");
    t.set_node(node);
    t.set_attempt(1);
    t.set_exit_code(run->exit_code);
    t.set_state(run->exit_code == 2 ? cmax::v1::TASK_FAILED : cmax::v1::TASK_COMPLETED);
    data.tasks.push_back(t);
    for (const auto& r : run->records) {
      cmax::v1::ExportedRecord er;
      er.set_task_id(task);
      er.set_attempt(1);
      er.set_node(node);
      er.set_suite("orchestration");
      *er.mutable_record() = r;
      data.records.push_back(er);
    }
  }
  const auto card = cmax::reports::BuildScorecard(data);
  bool seen = false;
  for (const auto& c : card.categories()) {
    if (c.name() != "Orchestration") continue;
    seen = true;
    CHECK_FALSE(c.measured());
    CHECK(c.grade() == "not measured");
    CHECK(c.nodes_evaluated() == 0);
  }
  CHECK(seen);
  CHECK(card.tier() == "not rated");
  std::vector<std::string> gaps(card.missing().begin(), card.missing().end());
  INFO(absl::StrJoin(gaps, "\n"));
  bool named = false;
  for (const auto& m : gaps) {
    named |= absl::StartsWith(m, "Orchestration: orchestration evaluated on 0 of 2 nodes") &&
             absl::StrContains(m, "node-1: not measured: bare metal (managed: false)");
  }
  CHECK(named);
}

TEST_CASE("orchestration: the one-step job must see exactly its GPU and its NUMA node's cores",
          "[orchestration]") {
  std::string answer;
  std::vector<std::string> srun;
  auto run = [&](const std::vector<std::string>& argv) -> std::optional<std::string> {
    if (argv.empty() || argv[0] != "srun") return std::nullopt;
    srun = argv;
    return answer;
  };
  cmax::orchestration::Options o;
  o.root = Fixture("slurm-good");
  o.run = run;
  o.step_probe = {"/usr/bin/cmax-bench", "orchestration", "--step-probe"};
  auto step = [&](const std::string& text) {
    answer = text;
    return Find(cmax::orchestration::RunChecks(o), "orchestration.slurm.step");
  };
  // ConstrainDevices not enforced: the step that asked for one GPU sees two.
  const Check leaky = step("cpus=0-223\ngpus=0,3\n");
  CHECK(srun == std::vector<std::string>{"srun", "-N1", "-n1", "-w", "gpu-node-01", "--exclusive",
                                         "--quiet", "--gres=gpu:1", "--", "/usr/bin/cmax-bench",
                                         "orchestration", "--step-probe"});
  CHECK(leaky.status == Status::kFail);
  CHECK(leaky.title == "a job step that asked for 1 GPU sees 2");
  CHECK(absl::StrContains(leaky.action, "ConstrainDevices=yes"));
  // One GPU (minor 3: 0000:48:00.0 on NUMA node 0, cpus 0-55,112-167) but
  // only half of that node's cores.
  const Check narrow = step("cpus=0-55\ngpus=3\n");
  CHECK(narrow.status == Status::kFail);
  CHECK(narrow.title == "a job step lacks 56 of the 112 CPU cores it should get (its GPU's NUMA node)");
  CHECK(Names(narrow, "/dev/nvidia3 is 0000:48:00.0 on NUMA node 0 (cpus 0-55,112-167)"));
  const Check good = step("cpus=0-223\ngpus=3\n");
  CHECK(good.status == Status::kPass);
  CHECK(good.title == "a job step sees exactly the 1 GPU it asked for and 224 CPUs, its GPU's NUMA "
                      "node included");
  CHECK(Names(good, "--step-probe (output line 1): cpus=0-223"));
  // srun failing (node busy, no partition): not measured, never a pass.
  o.run = [](const std::vector<std::string>&) -> std::optional<std::string> { return std::nullopt; };
  const Check none = Find(cmax::orchestration::RunChecks(o), "orchestration.slurm.step");
  CHECK(none.status == Status::kNotMeasured);
  CHECK(cmax::orchestration::ToFinding(none).not_measured());
}

TEST_CASE("orchestration: --step-probe prints the process's CPUs and openable GPUs",
          "[orchestration]") {
  auto probe = cmax::RunCommand(
      {std::string(CMAX_TEST_BIN_DIR) + "/cmax-bench", "orchestration", "--step-probe"}, 30s);
  REQUIRE(probe.ok());
  CHECK(probe->exit.exited);
  CHECK(probe->exit.code == 0);
  std::string status = ReadText("/proc/self/status");
  const size_t at = status.find("Cpus_allowed_list:");
  REQUIRE(at != std::string::npos);
  std::string mine = status.substr(at + 18, status.find('\n', at) - at - 18);
  mine.erase(0, mine.find_first_not_of(" \t"));
  CHECK(absl::StartsWith(probe->out, "cpus=" + mine + "\ngpus="));
}
