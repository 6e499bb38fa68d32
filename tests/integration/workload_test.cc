// The workload suite across agents in network namespaces (issue 32): three
// agents train train.py on CPU with gloo (Debian's python3-torch), one rank
// per node; every replica's loss agrees; a replica perturbed on purpose
// (--fault-perturb-rank, through a stand-in cmax-bench that adds the
// TEST-ONLY flag) is blamed by the scorecard on its node, and held to a
// saved baseline run's loss curve it is the one replica that departs; an interpreter
// without torch is "not measured", never a pass; a python rank slowed by
// SIGSTOP/SIGCONT in its compute is the straggler, and stopped for good it
// is blamed for the stall while its neighbours waited. Without python3-torch
// these tests FAIL: the suite is what they test.
#include <catch2/catch.hpp>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "google/protobuf/util/json_util.h"
#include "tests/integration/cluster.h"
#include "tests/integration/export_records.h"

using cmax::testing::Cluster;
using cmax::testing::ClusterOptions;
using cmax::testing::Export;
using cmax::testing::ReportCard;
using cmax::testing::RulesWithId;
using namespace std::chrono_literals;

namespace {

constexpr int kSteps = 8;

// A small model for a 2-core CI machine: three ranks finish in seconds.
std::string Plan(const std::string& python = "python3") {
  return absl::StrCat(R"(name: workload
suites:
  - suite: workload
    scope: gang
    ranks_per_node: 1
    timeout: 3m
    env: {GLOO_SOCKET_IFNAME: eth0}
    params: {python: )", python, R"(, layers: 1, width: 64, heads: 2, seq: 32, batch: 4, steps: )",
                      kSteps, R"(, warmup-steps: 2, threads: 1, stall: 60}
)");
}

void RequireTorch() {
  auto r = cmax::RunCommand({"/usr/bin/python3", "-c", "import torch"}, 60s);
  REQUIRE(r.ok());
  INFO("the workload suite's tests need Debian's python3-torch "
       "(deploy/install-deps.sh --with-tests): " << r->err);
  REQUIRE(r->exit.code == 0);
}

void WriteExecutable(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  chmod(path.c_str(), 0755);
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string EnvOf(pid_t pid, const std::string& var) {
  for (absl::string_view kv :
       absl::StrSplit(ReadFile(absl::StrCat("/proc/", pid, "/environ")), '\0')) {
    if (absl::StartsWith(kv, var + "=")) return std::string(kv.substr(var.size() + 1));
  }
  return "";
}

// The step of a train.py step line (`{... "loss": ..., "step": N, ...}`),
// else -1.
int StepOf(absl::string_view line) {
  if (!absl::StrContains(line, "\"loss\"")) return -1;
  const size_t at = line.find("\"step\": ");
  if (at == absl::string_view::npos) return -1;
  absl::string_view rest = line.substr(at + 8);
  rest = rest.substr(0, rest.find_first_not_of("0123456789"));
  int step = -1;
  return absl::SimpleAtoi(rest, &step) ? step : -1;
}

// A child process of `parent` (its python rank), or -1.
pid_t ChildOf(pid_t parent) {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    pid_t pid = 0;
    if (!absl::SimpleAtoi(e.path().filename().string(), &pid)) continue;
    for (absl::string_view line : absl::StrSplit(ReadFile(e.path().string() + "/status"), '\n')) {
      if (!absl::ConsumePrefix(&line, "PPid:")) continue;
      pid_t ppid = 0;
      if (absl::SimpleAtoi(absl::StripAsciiWhitespace(line), &ppid) && ppid == parent) return pid;
    }
  }
  return -1;
}

// A stand-in cmax-bench that adds TEST-ONLY `flags` to the workload suite
// (a plan cannot give them) and runs every other suite as it is; its folder.
// With `only_while`, only while that file exists.
std::string StandInBench(const std::string& flags, const std::string& only_while = "") {
  std::string tmpl = "/tmp/cmax-wlbench.XXXXXX";
  REQUIRE(mkdtemp(tmpl.data()) != nullptr);
  const std::string real = Cluster::BinDir() + "/cmax-bench";
  const std::string when =
      only_while.empty() ? "" : absl::StrCat(" && [ -e '", only_while, "' ]");
  WriteExecutable(tmpl + "/cmax-bench",
                  absl::StrCat("#!/bin/sh\nif [ \"$1\" = workload ]", when, "; then exec ", real,
                               " \"$@\" ", flags, "; fi\nexec ", real, " \"$@\"\n"));
  return tmpl;
}

// Debian's python first on every agent's PATH (a developer's pyenv shim
// may have no torch).
ClusterOptions Options() {
  ClusterOptions o;
  o.agents = 3;
  o.agent_env = {{"PATH", "/usr/bin:/bin:/usr/sbin:/sbin"}};
  return o;
}

}  // namespace

TEST_CASE("three agents train on CPU with gloo, every replica's loss identical",
          "[integration][workload]") {
  RequireTorch();
  Cluster c("wl3", Options());
  auto started = c.Start();
  INFO(started.ToString());
  REQUIRE(started.ok());
  if (!c.using_netns()) WARN("network namespaces unavailable: agents ran on loopback");
  auto r = c.Ctl({"run", "--plan", c.WritePlan("workload", Plan())}, 240s);
  INFO(r.out << r.err);
  CHECK(r.exit.code == cmax::testing::kExitNotRated);
  const std::string run_id = Cluster::RunIdFrom(r.out);
  REQUIRE_FALSE(run_id.empty());
  std::map<std::string, std::set<std::string>> losses_by_step;  // step -> loss values
  std::map<std::string, int> steps_by_rank;
  std::set<std::string> nodes;
  int tokens = 0;
  for (const auto& rec : Export(c, run_id)) {
    if (rec.record().has_finding()) {
      INFO(rec.record().finding().title());
      CHECK(rec.record().finding().severity() < cmax::v1::SEVERITY_WARN);
    }
    if (rec.record().has_sample() && rec.record().sample().metric() == "loss") {
      const auto& l = rec.record().sample().labels();  // a Sample per step
      losses_by_step[l.at("step")].insert(l.at("loss_hex"));
      ++steps_by_rank[l.at("rank")];
      CHECK(l.at("world_size") == "3");
      CHECK(l.at("python") == "/usr/bin/python3");
      CHECK(absl::StartsWith(l.at("torch_version"), "1."));
      CHECK(l.at("backend") == "gloo");
      CHECK(l.at("device") == "cpu");
      nodes.insert(rec.node());
    }
    if (!rec.record().has_measurement()) continue;
    const auto& m = rec.record().measurement();
    if (m.metric() == "tokens_per_s") {
      ++tokens;
      CHECK(m.value() > 0);
      CHECK(m.labels().at("steps") == std::to_string(kSteps - 2));  // warm-up left out
    }
  }
  CHECK(nodes.size() == 3);
  CHECK(tokens == 3);
  REQUIRE(steps_by_rank.size() == 3);
  for (const auto& [rank, n] : steps_by_rank) CHECK(n == kSteps);
  REQUIRE(losses_by_step.size() == static_cast<size_t>(kSteps));
  for (const auto& [step, values] : losses_by_step) {
    INFO("step " << step);
    CHECK(values.size() == 1);  // bit for bit on every replica
  }
  const cmax::v1::Scorecard card = ReportCard(c, run_id);
  auto agree = RulesWithId(card, "workload.loss_agrees");
  REQUIRE(agree.size() == 1);
  CHECK(agree[0].outcome() == "pass");
  CHECK(RulesWithId(card, "workload.loss_departs").empty());
  CHECK(RulesWithId(card, "workload.stall").empty());
  // Charts: tokens/s and step time, a bar per node (CPU); MFU not drawn on
  // CPU, and the card says so.
  std::map<std::string, int> bars;
  for (const auto& chart : card.charts()) bars[chart.id()] = chart.values_size();
  CHECK(bars["workload:tokens_per_s (workload)"] == 3);
  CHECK(bars["workload:compute_median_s (workload)"] == 3);
  // Step time over the run, a line per rank.
  bool step_lines = false;
  for (const auto& chart : card.charts()) {
    if (chart.id() == "workload:step_time_s") step_lines = chart.series_size() == 3;
  }
  CHECK(step_lines);
  CHECK_FALSE(bars.count("workload:mfu (workload)"));
  bool mfu_said = false;
  for (const auto& line : card.charts_not_measured()) {
    mfu_said = mfu_said || absl::StartsWith(line, "Training MFU per GPU");
  }
  CHECK(mfu_said);
}

TEST_CASE("gemm and workload in one plan: the CPU MFU of each node from its own measured GEMM",
          "[integration][workload]") {
  // docs/workload.md: on CPU the judge reports the model's TFLOP/s over the
  // same run's host GEMM (workload.cpu_mfu). From a real run, not a RunData
  // made by hand: the two suites' records must meet in the judge.
  RequireTorch();
  ClusterOptions o = Options();
  o.agents = 2;
  Cluster c("wlm", o);
  auto started = c.Start();
  INFO(started.ToString());
  REQUIRE(started.ok());
  const std::string plan = absl::StrCat(
      "name: mfu\nsuites:\n  - suite: gemm\n    params: {backend: cpu, dtype: fp32, m: 256, "
      "n: 256, k: 256, iters: 3, threads: 1}\n",
      Plan().substr(Plan().find("  - suite: workload")));
  auto r = c.Ctl({"run", "--plan", c.WritePlan("mfu", plan)}, 240s);
  INFO(r.out << r.err);
  REQUIRE(r.exit.code == cmax::testing::kExitNotRated);
  const std::string run_id = Cluster::RunIdFrom(r.out);
  std::map<std::string, double> gemm;  // node -> its fp32 TFLOP/s, as stored
  std::map<std::string, double> model;  // node -> its rank's model TFLOP/s
  std::string seen;  // those records, for a failure's message
  for (const auto& rec : Export(c, run_id)) {
    if (!rec.record().has_measurement()) continue;
    const auto& m = rec.record().measurement();
    std::string labels;
    for (const auto& l : m.labels()) absl::StrAppend(&labels, l.first, "=", l.second, " ");
    if (m.metric() == "gemm_tflops" || m.metric() == "model_tflops") {
      absl::StrAppend(&seen, rec.node(), " ", rec.suite(), " ", m.metric(), " ", m.value(), " ",
                      labels, "\n");
    }
    if (m.metric() == "gemm_tflops") gemm[rec.node()] = m.value();
    if (m.metric() == "model_tflops") model[rec.node()] = m.value();
  }
  INFO(seen);
  REQUIRE(gemm.size() == 2);
  REQUIRE(model.size() == 2);
  const cmax::v1::Scorecard card = ReportCard(c, run_id);
  auto mfu = RulesWithId(card, "workload.cpu_mfu");
  // One key figure for the fleet, each node's rank from its own GEMM in
  // its evidence.
  REQUIRE(mfu.size() == 1);
  const auto& rule = mfu[0];
  INFO(rule.message());
  CHECK(rule.outcome() == "pass");
  CHECK(rule.unit() == "ratio");
  CHECK(rule.value() > 0);
  CHECK(absl::StrContains(rule.message(), "CPU MFU (model TFLOP/s over the node's own measured "
                                          "fp32 host GEMM) of 2 ranks: median "));
  REQUIRE(rule.evidence_size() == 2);
  std::set<std::string> nodes;
  for (const auto& line : rule.evidence()) {
    INFO(line);
    CHECK(absl::StrContains(line, "% of this node's measured host GEMM ("));
    for (const auto& [node, tflops] : gemm) {
      if (!absl::StrContains(line, absl::StrCat("(", node, ")"))) continue;
      nodes.insert(node);
      CHECK(tflops > 0);
      CHECK(model.count(node) == 1);
    }
  }
  CHECK(nodes.size() == 2);
  // The category shows it among its key figures.
  bool shown = false;
  for (const auto& c : card.categories()) {
    for (const auto& e : c.evidence()) shown = shown || e == rule.message();
  }
  CHECK(shown);
}

TEST_CASE("a replica perturbed on purpose departs and is blamed on its node",
          "[integration][workload]") {
  RequireTorch();
  const std::string bench = StandInBench("--fault-perturb-rank=2 --fault-step=3");
  ClusterOptions o = Options();
  o.bench_dir = bench;
  {
    Cluster c("wlf", o);
    REQUIRE(c.Start().ok());
    auto r = c.Ctl({"run", "--plan", c.WritePlan("workload", Plan())}, 240s);
    INFO(r.out << r.err);
    const std::string run_id = Cluster::RunIdFrom(r.out);
    REQUIRE_FALSE(run_id.empty());
    std::string rank2_node;
    std::map<std::string, std::set<std::string>> losses_by_step;
    for (const auto& rec : Export(c, run_id)) {
      if (!rec.record().has_sample() || rec.record().sample().metric() != "loss") continue;
      const auto& m = rec.record().sample();
      if (m.labels().at("rank") == "2") rank2_node = rec.node();
      losses_by_step[m.labels().at("step")].insert(m.labels().at("loss_hex"));
    }
    REQUIRE_FALSE(rank2_node.empty());
    // Identical up to the perturbation after step 3's update, apart after.
    CHECK(losses_by_step["3"].size() == 1);
    CHECK(losses_by_step["4"].size() == 2);
    const cmax::v1::Scorecard card = ReportCard(c, run_id);
    auto dep = RulesWithId(card, "workload.loss_departs");
    REQUIRE(dep.size() == 1);
    CHECK(dep[0].outcome() == "fail");
    CHECK(dep[0].category() == "Reliability");
    CHECK(dep[0].node() == rank2_node);
    CHECK(dep[0].subject() == absl::StrCat("node:", rank2_node, " rank:2"));
    CHECK(absl::StrContains(dep[0].message(), "at step 4"));
    CHECK(RulesWithId(card, "workload.loss_agrees").empty());
    bool verdict_fail = false;
    for (const auto& n : card.nodes()) {
      if (n.node() == rank2_node) verdict_fail = n.verdict() == "fail";
      else CHECK(n.verdict() != "fail");
    }
    CHECK(verdict_fail);
  }
  std::filesystem::remove_all(bench);
}

TEST_CASE("the loss is held to a saved baseline run: a perturbed replica fails on its node, a "
          "baseline of another model is not measured",
          "[integration][workload][baseline]") {
  RequireTorch();
  std::string tmpl = "/tmp/cmax-wlperturb.XXXXXX";
  REQUIRE(mkdtemp(tmpl.data()) != nullptr);
  const std::string perturb = std::string(tmpl) + "/on";  // rank 2 perturbed while it exists
  const std::string bench = StandInBench("--fault-perturb-rank=2 --fault-step=3", perturb);
  ClusterOptions o = Options();
  o.bench_dir = bench;
  {
    Cluster c("wlb", o);
    REQUIRE(c.Start().ok());
    auto run = [&](const std::string& name, const std::string& plan) {
      auto r = c.Ctl({"run", "--plan", c.WritePlan(name, plan)}, 240s);
      INFO(r.out << r.err);
      const std::string id = Cluster::RunIdFrom(r.out);
      REQUIRE_FALSE(id.empty());
      return id;
    };
    // The reference run, saved as a baseline file.
    const std::string run_a = run("wlref", Plan());
    auto saved = c.Ctl({"baseline", "save", run_a, "-o", c.dir() + "/base.json"});
    INFO(saved.out << saved.err);
    REQUIRE(saved.exit.code == 0);
    cmax::v1::BaselineFile base;
    REQUIRE(google::protobuf::util::JsonStringToMessage(ReadFile(c.dir() + "/base.json"), &base)
                .ok());
    REQUIRE(base.loss_curves_size() == 1);
    CHECK(base.loss_curves(0).replicas() == 3);
    CHECK(base.loss_curves(0).steps_size() == kSteps);
    CHECK(absl::StartsWith(base.loss_curves(0).device(), "cpu ("));  // and its model
    CHECK(absl::StrContains(base.loss_curves(0).model(), "layers=1 width=64 heads=2 seq=32"));

    // The same plan against it: every replica within the tolerance.
    const std::string with_base = Plan() + "baseline: base.json\n";
    const cmax::v1::Scorecard same = ReportCard(c, run("wlsame", with_base));
    CHECK(absl::StrContains(same.baseline(), "run " + run_a));
    CHECK(absl::StrContains(same.baseline(), "1 loss curve(s)"));
    auto ok = RulesWithId(same, "workload.loss_baseline");
    REQUIRE(ok.size() == 1);
    INFO(ok[0].message());
    CHECK(ok[0].outcome() == "pass");
    CHECK(absl::StrContains(ok[0].message(), absl::StrCat("at ", kSteps, " steps on every one of 3")));

    // Rank 2 perturbed after step 3's update: it alone departs from the
    // baseline, at step 4, and its node is the one that fails.
    std::ofstream(perturb) << "1\n";
    const std::string run_p = run("wlpert", with_base);
    std::filesystem::remove(perturb);
    std::string rank2_node;
    for (const auto& rec : Export(c, run_p)) {
      if (rec.record().has_sample() && rec.record().sample().labels().at("rank") == "2") {
        rank2_node = rec.node();
      }
    }
    REQUIRE_FALSE(rank2_node.empty());
    const cmax::v1::Scorecard pert = ReportCard(c, run_p);
    auto fails = RulesWithId(pert, "workload.loss_baseline");
    REQUIRE(fails.size() == 1);
    INFO(fails[0].message());
    CHECK(fails[0].outcome() == "fail");
    CHECK(fails[0].category() == "Reliability");
    CHECK(fails[0].node() == rank2_node);
    CHECK(fails[0].subject() == absl::StrCat("node:", rank2_node, " rank:2"));
    CHECK(absl::StrContains(fails[0].message(), "at step 4"));
    CHECK(fails[0].expected() == base.loss_curves(0).losses(4));

    // Another model (width 32) against the same baseline: not measured,
    // with what the baseline holds; never a pass.
    const cmax::v1::Scorecard other = ReportCard(
        c, run("wlother", absl::StrReplaceAll(with_base, {{"width: 64", "width: 32"}})));
    auto nm = RulesWithId(other, "workload.loss_baseline");
    REQUIRE(nm.size() == 1);
    INFO(nm[0].message());
    CHECK(nm[0].outcome() == "not_measured");
    CHECK(absl::StrContains(nm[0].message(), "width=32"));
    CHECK(absl::StrContains(nm[0].message(), "it holds: layers=1 width=64"));
  }
  std::filesystem::remove_all(bench);
  std::filesystem::remove_all(tmpl);
}

TEST_CASE("an interpreter without torch is not measured, never a pass",
          "[integration][workload]") {
  // A real python without its site packages (-S): `import torch` fails as
  // it does where torch is not installed.
  std::string tmpl = "/tmp/cmax-wlpy.XXXXXX";
  REQUIRE(mkdtemp(tmpl.data()) != nullptr);
  const std::string dir = tmpl;
  WriteExecutable(dir + "/python3", "#!/bin/sh\nexec /usr/bin/python3 -S \"$@\"\n");
  ClusterOptions o = Options();
  o.agents = 2;
  o.agent_env["PATH"] = dir + ":/usr/bin:/bin";
  {
    Cluster c("wln", o);
    REQUIRE(c.Start().ok());
    auto r = c.Ctl({"run", "--plan", c.WritePlan("workload", Plan())}, 240s);
    INFO(r.out << r.err);
    CHECK(r.exit.code == cmax::testing::kExitNothingMeasured);
    const std::string run_id = Cluster::RunIdFrom(r.out);
    REQUIRE_FALSE(run_id.empty());
    std::set<std::string> not_measured;
    for (const auto& rec : Export(c, run_id)) {
      CHECK_FALSE(rec.record().has_measurement());
      CHECK_FALSE(rec.record().has_sample());
      if (!rec.record().has_finding()) continue;
      const auto& f = rec.record().finding();
      if (f.check_id() != "workload.not_measured") continue;
      CHECK(f.not_measured());
      CHECK(absl::StrContains(f.detail(), "has no torch"));
      not_measured.insert(rec.node());
    }
    // The first rank to end (exit 2) ends the group: the other may be
    // stopped before it writes its own finding.
    CHECK_FALSE(not_measured.empty());
    const cmax::v1::Scorecard card = ReportCard(c, run_id);
    CHECK(RulesWithId(card, "workload.loss_agrees").empty());
    for (const auto& n : card.nodes()) CHECK(n.verdict() != "pass");
  }
  std::filesystem::remove_all(dir);
}

TEST_CASE("a rank whose python is slowed by SIGSTOP is a straggler, then stopped it is the "
          "stall's rank",
          "[integration][workload]") {
  RequireTorch();
  Cluster c("wls", Options());
  REQUIRE(c.Start().ok());
  if (!c.using_netns()) WARN("network namespaces unavailable: agents ran on loopback");
  std::string plan = Plan();
  plan = absl::StrReplaceAll(plan, {{absl::StrCat("steps: ", kSteps, ", warmup-steps: 2"),
                                     "steps: 100000, warmup-steps: 3"},
                                    {"stall: 60", "stall: 6"}});
  REQUIRE(absl::StrContains(plan, "stall: 6}"));
  cmax::CommandResult r;
  std::thread ctl([&] { r = c.Ctl({"run", "--plan", c.WritePlan("workload", plan)}, 240s); });
  // Rank 2's suite process and its python rank.
  pid_t suite = -1, python = -1;
  std::string node2;
  for (int i = 0; i < 900 && python < 0; ++i) {
    for (int n = 0; n < 3 && suite < 0; ++n) {
      const pid_t s = c.SuiteProcessOf(n, "workload");
      if (s > 0 && EnvOf(s, "CMAX_RANK") == "2") {
        suite = s;
        node2 = c.node(n);
      }
    }
    if (suite > 0) python = ChildOf(suite);
    if (python < 0) std::this_thread::sleep_for(100ms);
  }
  // Slowed: stopped for 100 ms as soon as it logs a step after the warm-up,
  // so that the stop lands in the next step's compute, outside the
  // all-reduce, as a node losing time would. (Stops at random moments were
  // a coin toss: with a step's compute of a few ms they landed in the
  // all-reduce as often as not, and there every rank waits alike.) After 20
  // such steps, stopped for good: the job stalls on it.
  int slowed = 0;
  if (python > 0) {
    const std::string lines =
        absl::StrCat(EnvOf(suite, "CMAX_TASK_DIR"), "/workload-rank2.", suite, ".jsonl");
    size_t done = 0;  // bytes of whole lines already looked at
    const auto give_up = std::chrono::steady_clock::now() + 120s;
    while (slowed < 20 && std::chrono::steady_clock::now() < give_up) {
      const std::string text = ReadFile(lines);
      bool stepped = false;
      for (size_t nl; (nl = text.find('\n', done)) != std::string::npos; done = nl + 1) {
        const absl::string_view line(text.data() + done, nl - done);
        if (StepOf(line) >= 3) stepped = true;
      }
      if (!stepped) {
        std::this_thread::sleep_for(1ms);
        continue;
      }
      kill(python, SIGSTOP);
      std::this_thread::sleep_for(100ms);
      kill(python, SIGCONT);
      ++slowed;
    }
    kill(python, SIGSTOP);
  }
  ctl.join();
  INFO(r.out << r.err);
  REQUIRE(python > 0);
  REQUIRE(slowed == 20);  // slowed while it trained, not while it started
  const std::string run_id = Cluster::RunIdFrom(r.out);
  REQUIRE_FALSE(run_id.empty());
  std::map<std::string, std::string> state_by_node;  // the stall findings' process states
  for (const auto& rec : Export(c, run_id)) {
    if (!rec.record().has_finding() || rec.record().finding().check_id() != "workload.no_step") {
      continue;
    }
    state_by_node[rec.node()] = rec.record().finding().labels().at("process_state");
  }
  CHECK(state_by_node.size() == 3);  // every rank reported the stall
  CHECK(state_by_node[node2] == "T");
  const cmax::v1::Scorecard card = ReportCard(c, run_id);
  std::string said;  // what the judge said, for a failure's message
  for (const auto& cat : card.categories()) {
    for (const auto& rule : cat.rules()) {
      if (!absl::StartsWith(rule.rule_id(), "workload.")) continue;
      absl::StrAppend(&said, rule.rule_id(), " ", rule.outcome(), ": ", rule.message(), "\n");
    }
  }
  INFO(said);
  const std::string subject = absl::StrCat("node:", node2, " rank:2");
  auto slow = RulesWithId(card, "workload.straggler");
  REQUIRE(slow.size() == 1);
  CHECK(slow[0].node() == node2);
  CHECK(slow[0].subject() == subject);
  CHECK(slow[0].value() > 0.1);  // its compute holds the 100 ms stops
  auto stalls = RulesWithId(card, "workload.stall");
  REQUIRE(stalls.size() == 1);
  CHECK(stalls[0].outcome() == "fail");
  CHECK(stalls[0].node() == node2);
  CHECK(stalls[0].subject() == subject);
  CHECK(absl::StrContains(stalls[0].message(), "stopped (process state T)"));
  // The replicas agreed while they trained.
  auto agree = RulesWithId(card, "workload.loss_agrees");
  REQUIRE(agree.size() == 1);
  CHECK(agree[0].outcome() == "pass");
}

TEST_CASE("cmax-bench workload: a NaN loss ends the rank with a FAIL naming the step and rank",
          "[integration][workload]") {
  RequireTorch();
  auto r = cmax::RunCommand({Cluster::BinDir() + "/cmax-bench", "workload", "--python=python3",
                             "--layers=1", "--width=64", "--heads=2", "--seq=32",
                             "--steps=6", "--warmup-steps=1", "--threads=1",
                             "--fault-nan-step=3", "--jsonl"},
                            120s, 1 << 20, {{"PATH", "/usr/bin:/bin"}, {"CMAX_RENDEZVOUS", ""}});
  REQUIRE(r.ok());
  INFO(r->out << r->err);
  CHECK(r->exit.code == 1);
  int nan_findings = 0, losses = 0;
  for (absl::string_view line : absl::StrSplit(r->out, '\n', absl::SkipEmpty())) {
    if (absl::StrContains(line, "\"workload.loss_not_finite\"")) {
      ++nan_findings;
      CHECK(absl::StrContains(line, "SEVERITY_FAIL"));
      CHECK(absl::StrContains(line, "loss is nan at step 3 on rank 0"));
    }
    if (absl::StrContains(line, "\"metric\":\"loss\"")) ++losses;
  }
  CHECK(nan_findings == 1);
  CHECK(losses == 3);  // steps 0, 1 and 2; none after the NaN
}
