// The burn-in judge: steady GPUs pass, an unsteady one is named, throttling
// that appears only when every node is loaded at once is attributed to the
// fleet load on the right node and GPU, a run without a fleet burn-in or with
// a failed burn-in task is "not measured" (never a pass).
#include <algorithm>
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "common/plan_parser.h"
#include "generated/suite_judges.h"
#include "reports/judges.h"
#include "reports/run_data.h"
#include "reports/scorecard.h"
#include "tests/reports/scorecard_test_util.h"


using namespace cmax;
using namespace cmax::reports;

namespace {

constexpr int kSoloIndex = 0;   // plan.suites(0): burnin, scope node
constexpr int kFleetIndex = 1;  // plan.suites(1): burnin-fleet, scope barrier

// Figures of one GPU's burn-in.
struct Gpu {
  double mean = 790, min_window = 780, cv = 0.01, mismatches = 0;
  double hot_s = 0, seconds = 300;
};

std::string TaskId(const std::string& node, bool fleet) {
  return (fleet ? "burnin-fleet@" : "burnin@") + node;
}

// A plan with the node-scoped burn-in and, when `with_fleet`, the barrier one.
RunData Plan(bool with_fleet) {
  RunData d;
  d.run.set_run_id("run-burnin");
  d.plan.set_name("full");
  v1::SuiteSpec* solo = d.plan.add_suites();
  solo->set_suite("burnin");
  solo->set_scope(v1::SCOPE_NODE);
  if (with_fleet) {
    v1::SuiteSpec* fleet = d.plan.add_suites();
    fleet->set_suite("burnin");
    fleet->set_name("burnin-fleet");
    fleet->set_scope(v1::SCOPE_BARRIER);
  }
  return d;
}

void AddTask(RunData* d, const std::string& node, bool fleet,
             v1::TaskState state = v1::TASK_COMPLETED, int exit_code = 0,
             const std::string& message = "") {
  v1::TaskInfo t;
  t.set_task_id(TaskId(node, fleet));
  t.set_attempt(1);  // the coordinator numbers attempts from 1, as Meas does its records
  t.set_suite("burnin");
  t.set_name(fleet ? "burnin-fleet" : "burnin");
  t.set_node(node);
  t.set_state(state);
  t.set_exit_code(exit_code);
  t.set_message(message);
  t.set_suite_index(fleet ? kFleetIndex : kSoloIndex);
  d->tasks.push_back(t);
  if (std::find(d->nodes.begin(), d->nodes.end(), node) == d->nodes.end()) d->nodes.push_back(node);
}

void AddGpu(RunData* d, const std::string& node, bool fleet, int index, const Gpu& g,
            bool simulated = false) {
  const std::map<std::string, std::string> labels = {
      {"gpu", std::to_string(index)},
      {"uuid", "GPU-" + node + "-" + std::to_string(index)},
      {"pci_bus_id", "0000:1" + std::to_string(index) + ":00.0"},
      {"model", "NVIDIA H200"},
      {"dtype", "bf16"}};
  const std::vector<std::pair<std::string, double>> metrics = {
      {"burnin_tflops_mean", g.mean},       {"burnin_tflops_min_window", g.min_window},
      {"burnin_cv", g.cv},                  {"burnin_mismatches", g.mismatches},
      {"burnin_throttled_hot_s", g.hot_s},  {"burnin_seconds", g.seconds}};
  for (const auto& [metric, value] : metrics) {
    auto rec = testing::Meas(node, "burnin", metric, value, "", labels);
    rec.set_task_id(TaskId(node, fleet));
    rec.mutable_record()->mutable_measurement()->set_simulated(simulated);
    d->records.push_back(rec);
  }
}

// Two nodes of eight GPUs, each with its own burn-in and the fleet one.
RunData TwoNodes(bool with_fleet) {
  RunData d = Plan(with_fleet);
  for (const std::string node : {"node-1", "node-2"}) {
    AddTask(&d, node, false);
    for (int g = 0; g < 8; ++g) AddGpu(&d, node, false, g, Gpu{});
    if (!with_fleet) continue;
    AddTask(&d, node, true);
    for (int g = 0; g < 8; ++g) AddGpu(&d, node, true, g, Gpu{});
  }
  return d;
}

// Replaces one GPU's figures in one burn-in.
void GpuFigures(RunData* d, const std::string& node, bool fleet, int index, const Gpu& figures) {
  const std::string uuid = "GPU-" + node + "-" + std::to_string(index);
  std::vector<v1::ExportedRecord> kept;
  for (const auto& r : d->records) {
    const auto& labels = r.record().measurement().labels();
    auto it = labels.find("uuid");
    if (r.task_id() == TaskId(node, fleet) && it != labels.end() && it->second == uuid) continue;
    kept.push_back(r);
  }
  d->records = kept;
  AddGpu(d, node, fleet, index, figures);
}

std::vector<v1::RuleResult> RunBurninJudge(const RunData& d) {
  std::vector<v1::RuleResult> out;
  BurninJudge(d, &out);
  for (const auto& r : out) CHECK(r.category() == "Reliability");
  return out;
}

std::vector<v1::RuleResult> Where(const std::vector<v1::RuleResult>& all,
                                  const std::string& rule_id, const std::string& outcome) {
  std::vector<v1::RuleResult> out;
  for (const auto& r : all) {
    if (r.rule_id() == rule_id && r.outcome() == outcome) out.push_back(r);
  }
  return out;
}

const v1::RuleResult* FleetWide(const std::vector<v1::RuleResult>& all) {
  for (const auto& r : all) {
    if (r.rule_id() == "burnin.fleet_load" && r.node().empty()) return &r;
  }
  return nullptr;
}

bool AnyContains(const v1::RuleResult& r, const std::string& needle) {
  if (absl::StrContains(r.message(), needle)) return true;
  for (const auto& e : r.evidence()) {
    if (absl::StrContains(e, needle)) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("steady GPUs pass alone and under fleet load", "[judge][burnin]") {
  const auto out = RunBurninJudge(TwoNodes(true));
  // 2 nodes x 8 GPUs x 2 burn-ins, every one steady.
  CHECK(Where(out, "burnin.stability", "pass").size() == 32);
  CHECK(Where(out, "burnin.fleet_load", "pass").size() == 16 + 1);
  for (const auto& r : out) CHECK(r.outcome() == "pass");
  const v1::RuleResult* fleet = FleetWide(out);
  REQUIRE(fleet != nullptr);
  CHECK(absl::StrContains(fleet->message(), "0 of 2 nodes compared"));
}

TEST_CASE("a high-CV GPU warns naming it", "[judge][burnin]") {
  RunData d = TwoNodes(false);
  GpuFigures(&d, "node-2", false, 5, Gpu{.mean = 700, .min_window = 560, .cv = 0.12});
  const auto out = RunBurninJudge(d);
  const auto warns = Where(out, "burnin.stability", "warn");
  REQUIRE(warns.size() == 1);
  const auto& w = warns[0];
  CHECK(w.node() == "node-2");
  CHECK(w.subject() == "gpu:5 (GPU-node-2-5)");
  INFO(w.message());
  CHECK(absl::StrContains(w.message(), "node-2 gpu:5 (GPU-node-2-5)"));
  CHECK(absl::StrContains(w.message(), "CV 0.12 (warn above 0.05)"));
  CHECK(absl::StrContains(w.message(), "slowest one-second window 560 TFLOP/s = 80% of the mean"));
  CHECK_FALSE(w.action().empty());
  CHECK(Where(out, "burnin.stability", "pass").size() == 15);
}

TEST_CASE("a mismatch already judged by the suite's finding is cited, not repeated",
          "[judge][burnin]") {
  RunData d = TwoNodes(false);
  GpuFigures(&d, "node-1", false, 3, Gpu{.mismatches = 12});
  SECTION("with the suite's critical finding: the stability rule cites it") {
    auto f = testing::Find("node-1", "burnin", "burnin.gpu_mismatch", v1::SEVERITY_CRITICAL,
                           "reliability", "gpu:3", "silent data corruption suspect");
    f.set_task_id(TaskId("node-1", false));
    (*f.mutable_record()->mutable_finding()->mutable_labels())["gpu"] = "3";
    (*f.mutable_record()->mutable_finding()->mutable_labels())["uuid"] = "GPU-node-1-3";
    d.records.push_back(f);
    const auto out = RunBurninJudge(d);
    CHECK(Where(out, "burnin.stability", "critical").empty());
    bool cited = false;
    for (const auto& r : out) {
      if (r.node() == "node-1" && r.subject() == "gpu:3 (GPU-node-1-3)") {
        cited = AnyContains(r, "burnin.gpu_mismatch (critical)");
      }
    }
    CHECK(cited);
    // The scorecard still fails the node, through the findings judge.
    const v1::Scorecard card = BuildScorecard(d);
    CHECK(testing::NodeOf(card, "node-1").verdict() == "fail");
    CHECK(testing::NodeOf(card, "node-2").verdict() == "pass");
  }
  SECTION("without a finding: the judge raises it, naming GPU and UUID") {
    const auto out = RunBurninJudge(d);
    const auto crit = Where(out, "burnin.stability", "critical");
    REQUIRE(crit.size() == 1);
    CHECK(crit[0].node() == "node-1");
    CHECK(absl::StrContains(crit[0].message(), "gpu:3 (GPU-node-1-3)"));
    CHECK(absl::StrContains(crit[0].message(), "12 mismatched elements"));
  }
}

TEST_CASE("throttling only in the fleet burn-in is reported as fleet-only on its GPU",
          "[judge][burnin]") {
  RunData d = TwoNodes(true);
  GpuFigures(&d, "node-2", true, 6, Gpu{.mean = 730, .hot_s = 90});
  const auto out = RunBurninJudge(d);
  const auto warns = Where(out, "burnin.fleet_load", "warn");
  REQUIRE(warns.size() == 2);  // the GPU, and the fleet-wide count
  const v1::RuleResult* gpu = nullptr;
  for (const auto& r : warns) {
    if (!r.node().empty()) gpu = &r;
  }
  REQUIRE(gpu != nullptr);
  INFO(gpu->message());
  CHECK(gpu->node() == "node-2");
  CHECK(gpu->subject() == "gpu:6 (GPU-node-2-6)");
  CHECK(absl::StrContains(gpu->message(), "appeared only with the whole fleet loaded"));
  CHECK(absl::StrContains(gpu->message(), "30% of the time (0% alone)"));
  CHECK(absl::StrContains(gpu->message(), "8% below its own burn-in's 790 TFLOP/s"));
  // Both figures as evidence.
  CHECK(AnyContains(*gpu, "fleet burn-in (every node at once): mean 730 TFLOP/s, throttled "
                          "for heat or power delivery 90 s of 300 s (30%)"));
  CHECK(AnyContains(*gpu, "node's own burn-in: mean 790 TFLOP/s"));
  CHECK(gpu->value() == Approx(730));
  CHECK(gpu->expected() == Approx(790));
  const v1::RuleResult* fleet = FleetWide(out);
  REQUIRE(fleet != nullptr);
  CHECK(fleet->outcome() == "warn");
  CHECK(absl::StrContains(fleet->message(), "1 of 2 nodes compared throttled or slowed only under fleet "
                                   "load: node-2"));
}

TEST_CASE("a TFLOPS drop under fleet load alone is fleet-specific too", "[judge][burnin]") {
  RunData d = TwoNodes(true);
  GpuFigures(&d, "node-1", true, 0, Gpu{.mean = 700, .min_window = 690});
  const auto warns = Where(RunBurninJudge(d), "burnin.fleet_load", "warn");
  REQUIRE(warns.size() == 2);
  CHECK((warns[0].node() == "node-1" || warns[1].node() == "node-1"));
}

TEST_CASE("throttling in both burn-ins is not fleet-specific", "[judge][burnin]") {
  RunData d = TwoNodes(true);
  GpuFigures(&d, "node-1", false, 2, Gpu{.hot_s = 60});
  GpuFigures(&d, "node-1", true, 2, Gpu{.hot_s = 75});
  const auto out = RunBurninJudge(d);
  CHECK(Where(out, "burnin.fleet_load", "warn").empty());
  bool said = false;
  for (const auto& r : Where(out, "burnin.fleet_load", "pass")) {
    if (r.node() == "node-1" && r.subject() == "gpu:2 (GPU-node-1-2)") {
      said = absl::StrContains(r.message(), "not fleet-specific");
      CHECK(absl::StrContains(r.message(), "alone (20%) and under fleet load (25%)"));
    }
  }
  CHECK(said);
  CHECK(absl::StrContains(FleetWide(out)->message(), "0 of 2 nodes compared"));
}

TEST_CASE("fleet throttling without a solo baseline is reported without attribution",
          "[judge][burnin]") {
  RunData d = Plan(true);
  AddTask(&d, "node-1", true);
  AddGpu(&d, "node-1", true, 4, Gpu{.hot_s = 30});
  const auto out = RunBurninJudge(d);
  const auto warns = Where(out, "burnin.fleet_load", "warn");
  REQUIRE(warns.size() == 1);
  CHECK(warns[0].node() == "node-1");
  CHECK(absl::StrContains(warns[0].message(), "no node-scoped burn-in"));
  CHECK_FALSE(absl::StrContains(warns[0].message(), "only with the whole fleet"));
  const v1::RuleResult* fleet = FleetWide(out);
  REQUIRE(fleet != nullptr);
  CHECK(fleet->outcome() == "not_measured");
}

TEST_CASE("no barrier burn-in in the run is a fleet-wide not measured", "[judge][burnin]") {
  const auto out = RunBurninJudge(TwoNodes(false));
  const v1::RuleResult* fleet = FleetWide(out);
  REQUIRE(fleet != nullptr);
  CHECK(fleet->outcome() == "not_measured");
  CHECK(absl::StrContains(fleet->message(), "fleet burn-in (scope: barrier) not in the plan"));
  // And a run without any burn-in gets nothing from this judge.
  RunData none = Plan(false);
  CHECK(RunBurninJudge(none).empty());
}

TEST_CASE("a failed or timed-out burn-in task is not measured, never pass", "[judge][burnin]") {
  RunData d = TwoNodes(true);
  for (auto& t : d.tasks) {
    if (t.task_id() == TaskId("node-2", true)) {
      t.set_state(v1::TASK_FAILED);
      t.set_exit_code(2);
      t.set_message("cuda: no CUDA-capable device is detected");
    }
    if (t.task_id() == TaskId("node-1", false)) t.set_state(v1::TASK_TIMED_OUT);
  }
  const auto out = RunBurninJudge(d);
  for (const auto& r : out) {
    INFO(r.message());
    if (r.rule_id() != "burnin.stability") continue;
    // No pass may come from the tasks that did not complete, even though
    // their records are there.
    if (r.node() == "node-2" && absl::StrContains(r.message(), "burnin-fleet")) {
      CHECK(r.outcome() == "not_measured");
    }
    if (r.node() == "node-1" && absl::StrContains(r.message(), "node's own")) {
      CHECK(r.outcome() == "not_measured");
    }
  }
  const auto nm = Where(out, "burnin.stability", "not_measured");
  REQUIRE(nm.size() == 2);
  bool message_kept = false;
  for (const auto& r : nm) {
    if (r.node() == "node-2") {
      message_kept = absl::StrContains(r.message(), "no CUDA-capable device is detected");
    }
  }
  CHECK(message_kept);
  // Neither node had both burn-ins complete: nothing compared.
  CHECK(FleetWide(out)->outcome() == "not_measured");
}

TEST_CASE("simulated burn-in figures are never presented as measured", "[judge][burnin]") {
  RunData d = Plan(true);
  AddTask(&d, "node-1", false);
  AddTask(&d, "node-1", true);
  AddGpu(&d, "node-1", false, 0, Gpu{}, /*simulated=*/true);
  AddGpu(&d, "node-1", true, 0, Gpu{.mean = 600, .hot_s = 100}, /*simulated=*/true);
  const auto out = RunBurninJudge(d);
  for (const auto& r : out) {
    INFO(r.rule_id() << ": " << r.message());
    CHECK(r.outcome() == "not_measured");
    if (!r.node().empty()) CHECK(absl::StrContains(r.message(), kSimulatedBanner));
  }
}

TEST_CASE("the scorecard shows fleet-only throttling under Reliability", "[judge][burnin]") {
  RunData d = TwoNodes(true);
  // Throttled, barely slower: the fleet outlier judge names nobody.
  GpuFigures(&d, "node-2", true, 6, Gpu{.mean = 785, .hot_s = 90});
  const v1::Scorecard card = BuildScorecard(d);
  const auto& reliability = testing::Category(card, "Reliability");
  bool shown = false;
  for (const auto& r : reliability.rules()) {
    if (r.rule_id() == "burnin.fleet_load" && r.node() == "node-2") {
      shown = absl::StrContains(r.message(), "only with the whole fleet loaded");
    }
  }
  CHECK(shown);
  CHECK(reliability.grade() == "B");
  CHECK(testing::NodeOf(card, "node-2").verdict() == "warn");
  CHECK(testing::NodeOf(card, "node-1").verdict() == "pass");
}

TEST_CASE("the full plan runs the node's own burn-in, then the fleet burn-in", "[judge][burnin]") {
  auto plan = cmax::LoadPlanFile(std::string(CMAX_SOURCE_DIR) + "/benchmarks/plans/full.yaml");
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  int solo = -1, fleet = -1;
  for (int i = 0; i < plan->suites_size(); ++i) {
    const auto& s = plan->suites(i);
    if (s.suite() != "burnin") continue;
    if (s.scope() == v1::SCOPE_BARRIER) {
      fleet = i;
      CHECK(s.name() == "burnin-fleet");
    } else {
      solo = i;
    }
  }
  REQUIRE(solo >= 0);
  REQUIRE(fleet > solo);
  const auto& a = plan->suites(solo).params();
  const auto& b = plan->suites(fleet).params();
  CHECK(a.at("backend") == b.at("backend"));
  CHECK(a.at("duration") == b.at("duration"));
}

TEST_CASE("the cpu backend: an unsteady host is judged once", "[judge][burnin]") {
  RunData d = Plan(false);
  AddTask(&d, "node-1", false);
  const std::map<std::string, std::string> labels = {{"backend", "cpu"}, {"dtype", "fp32"}};
  for (const auto& [metric, value] : std::vector<std::pair<std::string, double>>{
           {"burnin_gflops_mean", 900}, {"burnin_gflops_min_window", 850},
           {"burnin_gflops_cv", 0.2}, {"burnin_mismatched_elements", 0}}) {
    auto rec = testing::Meas("node-1", "burnin", metric, value, "", labels);
    rec.set_task_id(TaskId("node-1", false));
    d.records.push_back(rec);
  }
  SECTION("the suite's own finding already warns: cited, not repeated") {
    auto f = testing::Find("node-1", "burnin", "burnin.unstable_throughput", v1::SEVERITY_WARN,
                           "reliability", "node", "CPU burn-in throughput varies");
    f.set_task_id(TaskId("node-1", false));
    d.records.push_back(f);
    const auto out = RunBurninJudge(d);
    const auto pass = Where(out, "burnin.stability", "pass");
    REQUIRE(pass.size() == 1);
    CHECK(pass[0].subject() == "host");
    CHECK(absl::StrContains(pass[0].message(), "already reported by the suite's finding "
                                      "burnin.unstable_throughput (warn)"));
  }
  SECTION("no finding: the judge warns on the host") {
    const auto warns = Where(RunBurninJudge(d), "burnin.stability", "warn");
    REQUIRE(warns.size() == 1);
    CHECK(warns[0].node() == "node-1");
    CHECK(absl::StrContains(warns[0].message(), "node-1 host"));
    CHECK(absl::StrContains(warns[0].message(), "CV 0.2 (warn above 0.15)"));
  }
}

TEST_CASE("the fleet outlier judge compares each burn-in only with its own kind",
          "[judge][burnin]") {
  // Sixteen GPUs in their own burn-in at 790 TFLOP/s; two of them also ran
  // the fleet burn-in, at 700 under the fleet's load. Pooled, the two would
  // be extreme outliers against sixteen; they are a different measurement.
  RunData d = Plan(true);
  for (const std::string node : {"node-1", "node-2"}) {
    AddTask(&d, node, false);
    for (int g = 0; g < 8; ++g) AddGpu(&d, node, false, g, Gpu{});
  }
  AddTask(&d, "node-1", true);
  for (int g = 0; g < 2; ++g) AddGpu(&d, "node-1", true, g, Gpu{.mean = 700});
  std::vector<v1::RuleResult> out;
  FleetJudge(d, &out);
  bool solo_group = false, fleet_group = false;
  for (const auto& r : out) {
    if (r.rule_id() == "fleet.outlier.burnin_tflops_mean") FAIL_CHECK(r.message());
    if (r.rule_id() != "fleet.spread.burnin_tflops_mean") continue;
    if (absl::StrContains(r.subject(), "plan entry burnin-fleet")) {
      fleet_group = true;
      CHECK(r.value() == 700);
    } else if (absl::StrContains(r.subject(), "plan entry burnin#0")) {
      solo_group = true;
      CHECK(r.value() == 790);
    }
  }
  CHECK(solo_group);
  CHECK(fleet_group);

  // A GPU slow in its own burn-in is still named among its peers.
  GpuFigures(&d, "node-2", false, 3, Gpu{.mean = 500});
  out.clear();
  FleetJudge(d, &out);
  int named = 0;
  for (const auto& r : out) {
    if (r.rule_id() == "fleet.outlier.burnin_tflops_mean") {
      ++named;
      CHECK(r.node() == "node-2");
    }
  }
  CHECK(named == 1);
}
