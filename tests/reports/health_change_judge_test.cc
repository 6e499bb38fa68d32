// The health change judge: counters that grew between the first and the last
// health task on a node are named with their before/after values (a new
// double-bit ECC error fails, an InfiniBand error warns), a counter that went
// down says the node or GPU was reset, a saturated counter's change is
// unknown, and a plan with one health entry is "not measured", never a pass.
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "common/plan_parser.h"
#include "generated/suite_judges.h"
#include "reports/run_data.h"
#include "reports/scorecard.h"
#include "tests/reports/scorecard_test_util.h"


using namespace cmax;
using namespace cmax::reports;

namespace {

const std::map<std::string, std::string> kGpu3 = {
    {"gpu", "3"}, {"uuid", "GPU-e95b2c44"}, {"pci_bus_id", "00000000:5d:00.0"}};
const std::map<std::string, std::string> kSymbolErrors = {
    {"device", "mlx5_0"}, {"port", "1"}, {"link_layer", "InfiniBand"},
    {"counter", "symbol_error"}, {"width_bits", "16"}};

std::string TaskId(const std::string& node, int entry) {
  return "health" + std::to_string(entry) + "@" + node;
}

// A plan with `entries` health entries ("health", "health-after").
RunData Plan(int entries, const std::vector<std::string>& nodes) {
  RunData d;
  d.run.set_run_id("run-health");
  for (int i = 0; i < entries; ++i) {
    v1::SuiteSpec* s = d.plan.add_suites();
    s->set_suite("health");
    if (i > 0) s->set_name("health-after");
  }
  d.nodes = nodes;
  for (const auto& node : nodes) {
    for (int i = 0; i < entries; ++i) {
      v1::TaskInfo t;
      t.set_task_id(TaskId(node, i));
      t.set_attempt(1);  // the coordinator numbers attempts from 1, as Meas does its records
      t.set_suite("health");
      t.set_name(i > 0 ? "health-after" : "health");
      t.set_node(node);
      t.set_state(v1::TASK_COMPLETED);
      t.set_suite_index(i);
      t.set_started_unix_ns(int64_t{1'800'000'000} * 1'000'000'000 + i * int64_t{3600} * 1'000'000'000);
      d.tasks.push_back(t);
    }
  }
  return d;
}

void Counter(RunData* d, const std::string& node, int entry, const std::string& metric,
             double value, const std::map<std::string, std::string>& labels) {
  auto rec = testing::Meas(node, "health", metric, value, "count", labels);
  rec.set_task_id(TaskId(node, entry));
  d->records.push_back(rec);
}

// Both health tasks on `node` read the same healthy counters.
void Steady(RunData* d, const std::string& node) {
  for (int entry : {0, 1}) {
    Counter(d, node, entry, "gpu_ecc_volatile_dbe", 0, kGpu3);
    Counter(d, node, entry, "gpu_ecc_volatile_sbe", 2, kGpu3);
    Counter(d, node, entry, "gpu_pcie_replay_count", 5, kGpu3);
    Counter(d, node, entry, "ib_counter", 0, kSymbolErrors);
    Counter(d, node, entry, "xid_events_total", 0, {});
  }
}

std::vector<v1::RuleResult> RunJudge(const RunData& d) {
  std::vector<v1::RuleResult> out;
  HealthChangeJudge(d, &out);
  for (const auto& r : out) {
    CHECK(r.category() == "Reliability");
    CHECK(r.rule_id() == "health.change");
  }
  return out;
}

std::vector<v1::RuleResult> On(const std::vector<v1::RuleResult>& all, const std::string& node) {
  std::vector<v1::RuleResult> out;
  for (const auto& r : all) {
    if (r.node() == node) out.push_back(r);
  }
  return out;
}

}  // namespace

TEST_CASE("counters that did not change pass, one result per node", "[judge][health]") {
  RunData d = Plan(2, {"node-1", "node-2"});
  Steady(&d, "node-1");
  Steady(&d, "node-2");
  const auto out = RunJudge(d);
  REQUIRE(out.size() == 2);
  for (const auto& r : out) {
    INFO(r.message());
    CHECK(r.outcome() == "pass");
    CHECK(absl::StrContains(r.message(), "none of 5 health counters changed"));
    CHECK(absl::StrContains(r.evidence(0), "3600 s apart"));
  }
}

TEST_CASE("a new double-bit ECC error fails and an IB error warns, naming GPU and port",
          "[judge][health]") {
  RunData d = Plan(2, {"node-1", "node-2"});
  Steady(&d, "node-1");
  Counter(&d, "node-2", 0, "gpu_ecc_volatile_dbe", 0, kGpu3);
  Counter(&d, "node-2", 1, "gpu_ecc_volatile_dbe", 2, kGpu3);
  Counter(&d, "node-2", 0, "ib_counter", 10, kSymbolErrors);
  Counter(&d, "node-2", 1, "ib_counter", 250, kSymbolErrors);
  Counter(&d, "node-2", 0, "gpu_pcie_replay_count", 5, kGpu3);
  Counter(&d, "node-2", 1, "gpu_pcie_replay_count", 5, kGpu3);
  const auto out = RunJudge(d);
  CHECK(On(out, "node-1").size() == 1);
  const auto node2 = On(out, "node-2");
  REQUIRE(node2.size() == 2);  // the two that grew; no summary pass beside them
  bool dbe = false, ib = false;
  for (const auto& r : node2) {
    INFO(r.message());
    if (absl::StrContains(r.message(), "double-bit")) {
      dbe = true;
      CHECK(r.outcome() == "fail");
      CHECK(r.subject() == "node-2 GPU 3 (GPU-e95b2c44)");
      CHECK(absl::StrContains(r.message(), "2 new uncorrectable"));
      CHECK(r.value() == 2);
      CHECK(absl::StrContains(r.action(), "drain"));
    }
    if (absl::StrContains(r.message(), "symbol_error")) {
      ib = true;
      CHECK(r.outcome() == "warn");
      CHECK(r.subject() == "node-2 mlx5_0 port 1 symbol_error");
      CHECK(absl::StrContains(r.message(), "240 InfiniBand/RoCE port errors"));
      CHECK(absl::StrContains(r.message(), "(10 -> 250)"));
    }
  }
  CHECK(dbe);
  CHECK(ib);

  // In the scorecard: node-2 fails on the new ECC error, node-1 passes.
  const v1::Scorecard card = BuildScorecard(d);
  CHECK(testing::NodeOf(card, "node-2").verdict() == "fail");
  CHECK(testing::NodeOf(card, "node-1").verdict() == "pass");
}

TEST_CASE("a counter that went down means a reset, a saturated one's change is unknown",
          "[judge][health]") {
  RunData d = Plan(2, {"node-1"});
  Counter(&d, "node-1", 0, "gpu_ecc_volatile_sbe", 40, kGpu3);
  Counter(&d, "node-1", 1, "gpu_ecc_volatile_sbe", 0, kGpu3);
  Counter(&d, "node-1", 0, "ib_counter", 65535, kSymbolErrors);
  Counter(&d, "node-1", 1, "ib_counter", 65535, kSymbolErrors);
  const auto out = RunJudge(d);
  bool reset = false, saturated = false;
  for (const auto& r : out) {
    INFO(r.message());
    if (absl::StrContains(r.message(), "went down")) {
      reset = true;
      CHECK(r.outcome() == "warn");
      CHECK(absl::StrContains(r.message(), "reset"));
    }
    if (absl::StrContains(r.message(), "saturated")) {
      saturated = true;
      CHECK(r.outcome() == "not_measured");
      CHECK(absl::StrContains(r.message(), "16-bit"));
    }
  }
  CHECK(reset);
  CHECK(saturated);
}

TEST_CASE("one health entry, or a node without its second, is not measured", "[judge][health]") {
  RunData once = Plan(1, {"node-1"});
  Counter(&once, "node-1", 0, "gpu_ecc_volatile_dbe", 0, kGpu3);
  auto out = RunJudge(once);
  REQUIRE(out.size() == 1);
  CHECK(out[0].outcome() == "not_measured");
  CHECK(out[0].node().empty());
  CHECK(absl::StrContains(out[0].action(), "health-after"));

  RunData missing = Plan(2, {"node-1", "node-2"});
  Steady(&missing, "node-1");
  Counter(&missing, "node-2", 0, "gpu_ecc_volatile_dbe", 0, kGpu3);  // health-after failed
  missing.tasks.back().set_state(v1::TASK_FAILED);
  out = RunJudge(missing);
  const auto node2 = On(out, "node-2");
  REQUIRE(node2.size() == 1);
  CHECK(node2[0].outcome() == "not_measured");

  RunData none;  // a run without health: the judge says nothing
  CHECK(RunJudge(none).empty());
}

TEST_CASE("simulated counters are never presented as measured", "[judge][health]") {
  RunData d = Plan(2, {"node-1"});
  Steady(&d, "node-1");
  for (auto& rec : d.records) rec.mutable_record()->mutable_measurement()->set_simulated(true);
  Counter(&d, "node-1", 1, "gpu_ecc_volatile_dbe", 3, kGpu3);
  d.records.back().mutable_record()->mutable_measurement()->set_simulated(true);
  for (const auto& r : RunJudge(d)) {
    INFO(r.message());
    CHECK(r.outcome() == "not_measured");
    CHECK(absl::StrContains(r.message(), kSimulatedBanner));
  }
}

TEST_CASE("the full plan runs health first and health-after last", "[judge][health]") {
  auto plan = cmax::LoadPlanFile(std::string(CMAX_SOURCE_DIR) + "/benchmarks/plans/full.yaml");
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  REQUIRE(plan->suites_size() > 2);
  const auto& last = plan->suites(plan->suites_size() - 1);
  CHECK(last.suite() == "health");
  CHECK(last.name() == "health-after");
  int health = 0;
  for (const auto& s : plan->suites()) health += s.suite() == "health";
  CHECK(health == 2);
}
