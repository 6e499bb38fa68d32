// The scorecard a user reads for hand-built runs: grades, verdicts, tier.
#include "reports/scorecard.h"

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "reports/judge_util.h"
#include "tests/reports/scorecard_test_util.h"

namespace cmax::reports {
namespace {

using testing::AnyReasonContains;
using testing::Category;
using testing::CleanHostcheckRun;
using testing::EvaluateEveryCategory;
using testing::Find;
using testing::Meas;
using testing::NodeOf;
using testing::Task;

// The rules a category shows with the given outcome.
std::vector<v1::RuleResult> RulesWith(const v1::CategoryGrade& c, const std::string& outcome) {
  std::vector<v1::RuleResult> out;
  for (const auto& r : c.rules()) {
    if (r.outcome() == outcome) out.push_back(r);
  }
  return out;
}

TEST_CASE("a clean hostcheck run of three nodes", "[scorecard]") {
  const v1::Scorecard card = BuildScorecard(CleanHostcheckRun());
  CHECK(card.run_id() == "run-1");
  CHECK(card.plan() == "quick");
  CHECK(card.started() == "2025-11-29T21:17:45.123Z");
  CHECK(card.finished() == "2025-11-29T21:18:45.000Z");
  CHECK(card.state() == "completed");

  REQUIRE(card.categories_size() == 8);
  const std::vector<std::string> order = {"Compute",  "Networking", "Storage",       "Reliability",
                                          "Security", "Lifecycle",  "Orchestration", "Monitoring"};
  for (int i = 0; i < 8; ++i) CHECK(card.categories(i).name() == order[i]);

  const auto& rel = Category(card, "Reliability");
  CHECK(rel.measured());
  CHECK(rel.grade() == "A");
  CHECK(absl::StrContains(rel.coverage(), "evaluated on 3 of 3 nodes"));
  CHECK(absl::StrContains(rel.summary(), "no warnings or failures"));
  CHECK(rel.nodes_evaluated() == 3);
  CHECK(rel.nodes_selected() == 3);
  for (const char* name : {"Compute", "Networking", "Storage", "Security", "Lifecycle",
                           "Orchestration", "Monitoring"}) {
    INFO(name);
    CHECK_FALSE(Category(card, name).measured());
    CHECK(Category(card, name).grade() == "not measured");
    CHECK(absl::StrContains(Category(card, name).summary(), "not measured"));
  }

  REQUIRE(card.nodes_size() == 3);
  for (const auto& n : card.nodes()) {
    INFO(n.node());
    CHECK(n.verdict() == "pass");
    CHECK(n.reasons().empty());
    REQUIRE(n.tasks_size() == 1);
    CHECK(n.tasks(0).state() == "completed");
  }
  // A tier needs Compute, Networking, Storage, Reliability and Security
  // evaluated: hostcheck alone is not rated, and no tier of the measured
  // part stands beside "not rated" for anyone to read as one.
  CHECK(card.tier() == "not rated");
  CHECK(absl::StartsWith(card.tier_reason(), "not rated: "));
  CHECK(card.tier_reason() ==
        "not rated: Compute, Networking, Storage, Security, Orchestration and 1 more not in the "
        "plan");
  CHECK(card.missing_size() == 6);
  CHECK_FALSE(card.simulated());
  CHECK(card.findings_size() == 3);  // the info findings, each with its node
  CHECK(card.findings(0).labels().at("node") == "node-1");
  CHECK(card.measurements_size() == 9);
}

TEST_CASE("a lost agent fails its node and lowers Reliability", "[scorecard]") {
  RunData d = CleanHostcheckRun();
  EvaluateEveryCategory(&d);
  // node-2 went away during hostcheck: no records from it.
  std::vector<v1::ExportedRecord> kept;
  for (const auto& r : d.records) {
    if (r.node() != "node-2") kept.push_back(r);
  }
  d.records = kept;
  d.tasks[1] = Task("node-2", "hostcheck", v1::TASK_LOST, 0, "agent disconnected");
  const v1::Scorecard card = BuildScorecard(d);

  const auto& n2 = NodeOf(card, "node-2");
  CHECK(n2.verdict() == "fail");
  CHECK(AnyReasonContains(n2, "no results from this node"));
  CHECK(AnyReasonContains(n2, "agent lost during hostcheck"));
  CHECK(NodeOf(card, "node-1").verdict() == "pass");

  const auto& rel = Category(card, "Reliability");
  CHECK(rel.grade() == "C");  // one failing node of three: within max(1, 10%)
  CHECK(absl::StrContains(rel.summary(), "1 failure"));
  CHECK(absl::StrContains(rel.summary(), "node-2: agent lost during hostcheck"));
  auto fails = RulesWith(rel, "fail");
  REQUIRE(fails.size() == 1);
  CHECK(fails[0].node() == "node-2");
  // Compute, Networking, Storage and Security were evaluated on 2 of the 3
  // selected nodes: fewer than 90%, so no tier.
  CHECK(card.tier() == "not rated");
  CHECK(card.tier_reason() ==
        "not rated: hostcheck not measured: agent lost on 1 of 3 nodes; Compute, Networking, "
        "Storage, Security, Orchestration and 1 more evaluated on 2 of 3 nodes (needs 3)");

  // The run-level findings list names the lost node, with an action.
  bool found = false;
  for (const auto& f : card.findings()) {
    if (f.check_id() == "task.lost") {
      found = true;
      CHECK(f.severity() == v1::SEVERITY_FAIL);
      CHECK(f.labels().at("node") == "node-2");
      CHECK(absl::StrContains(f.title(), "agent lost during hostcheck"));
      CHECK_FALSE(f.action().empty());
    }
  }
  CHECK(found);
}

TEST_CASE("crashes, hangs and suites that could not run", "[scorecard]") {
  RunData d = CleanHostcheckRun();
  EvaluateEveryCategory(&d);
  d.tasks.push_back(Task("node-1", "selftest", v1::TASK_FAILED, 139, "killed by signal 11",
                         "Segmentation fault (core dumped)"));
  d.tasks.push_back(Task("node-2", "selftest", v1::TASK_TIMED_OUT, -1, "timeout after 60 s"));
  d.tasks.push_back(Task("node-3", "gemm", v1::TASK_FAILED, 2, "no NVIDIA GPU on this node"));
  const v1::Scorecard card = BuildScorecard(d);

  const auto& n1 = NodeOf(card, "node-1");
  CHECK(n1.verdict() == "fail");
  CHECK(AnyReasonContains(n1, "selftest crashed (exit code 139)"));
  CHECK(NodeOf(card, "node-2").verdict() == "fail");
  CHECK(AnyReasonContains(NodeOf(card, "node-2"), "selftest hung: killed at timeout"));

  // Could not run: not measured in the suite's category, never a pass and
  // never a node failure.
  const auto& n3 = NodeOf(card, "node-3");
  CHECK(n3.verdict() == "warn");
  CHECK(AnyReasonContains(n3, "not measured: gemm could not run: no NVIDIA GPU on this node"));
  auto nm = RulesWith(Category(card, SuiteCategory("gemm")), "not_measured");
  REQUIRE(nm.size() == 1);
  CHECK(nm[0].node() == "node-3");

  // The crash carries its exit code and stderr tail as evidence.
  bool crash_evidence = false;
  for (const auto& r : RulesWith(Category(card, "Reliability"), "fail")) {
    if (r.rule_id() != "task.crashed") continue;
    for (const auto& e : r.evidence()) {
      if (absl::StrContains(e, "Segmentation fault")) crash_evidence = true;
    }
  }
  CHECK(crash_evidence);
  CHECK(Category(card, "Reliability").grade() == "D");  // 2 of 3 nodes failing
  CHECK(card.tier() == "Bronze");
}

TEST_CASE("a group task that was lost blames each of its nodes", "[scorecard]") {
  RunData d = CleanHostcheckRun();
  d.tasks.push_back(Task("node-1,node-3", "selftest", v1::TASK_LOST));
  const v1::Scorecard card = BuildScorecard(d);
  CHECK(NodeOf(card, "node-1").verdict() == "fail");
  CHECK(NodeOf(card, "node-2").verdict() == "pass");
  CHECK(NodeOf(card, "node-3").verdict() == "fail");
  CHECK(NodeOf(card, "node-3").tasks_size() == 2);
}

TEST_CASE("a critical Security finding makes the tier Underperform", "[scorecard]") {
  RunData d = CleanHostcheckRun();
  EvaluateEveryCategory(&d);
  d.records.push_back(Find("node-2", "audit", "audit.container_toolkit", v1::SEVERITY_CRITICAL,
                           "security", "node", "NVIDIA Container Toolkit 1.17.7 is vulnerable",
                           "CVE-2025-23266 is fixed in 1.17.8"));
  const v1::Scorecard card = BuildScorecard(d);
  const auto& sec = Category(card, "Security");
  CHECK(sec.measured());
  CHECK(sec.grade() == "F");
  auto crit = RulesWith(sec, "critical");
  REQUIRE(crit.size() == 1);
  CHECK(crit[0].node() == "node-2");
  CHECK(absl::StrContains(crit[0].message(), "1.17.7 is vulnerable: CVE-2025-23266 is fixed in 1.17.8"));
  CHECK(card.tier() == "Underperform");
  CHECK(absl::StrContains(card.tier_reason(), "critical Security finding"));
  CHECK(NodeOf(card, "node-2").verdict() == "fail");
  CHECK(NodeOf(card, "node-1").verdict() == "pass");
}

TEST_CASE("findings map to categories and outcomes by severity", "[scorecard]") {
  RunData d = CleanHostcheckRun();
  d.records.push_back(Find("node-3", "hostcheck", "hostcheck.disk_free", v1::SEVERITY_WARN,
                           "storage", "path:/", "/ is 93% full"));
  d.records.push_back(Find("node-1", "hostcheck", "hostcheck.odd", v1::SEVERITY_FAIL,
                           "no-such-category", "node", "something odd"));
  const v1::Scorecard card = BuildScorecard(d);
  const auto& st = Category(card, "Storage");
  CHECK(st.grade() == "B");
  CHECK(absl::StrContains(st.summary(), "1 warning: node-3: / is 93% full"));
  CHECK(NodeOf(card, "node-3").verdict() == "warn");
  // An unknown category lands in Reliability.
  auto fails = RulesWith(Category(card, "Reliability"), "fail");
  REQUIRE(fails.size() == 1);
  CHECK(fails[0].message() == "something odd");
  CHECK(NodeOf(card, "node-1").verdict() == "fail");
}

TEST_CASE("a missed expectation floor fails naming node and value", "[scorecard]") {
  RunData d = CleanHostcheckRun();
  (*d.plan.mutable_expect()->mutable_metrics())["gemm_tflops.bf16"] = 750;
  (*d.plan.mutable_expect()->mutable_metrics())["memory_bandwidth_gbps"] = 4000;
  d.records.push_back(Meas("node-1", "gemm", "gemm_tflops", 790, "TFLOP/s",
                           {{"gpu", "0"}, {"dtype", "bf16"}}));
  d.records.push_back(Meas("node-2", "gemm", "gemm_tflops", 701.5, "TFLOP/s",
                           {{"gpu", "4"}, {"uuid", "GPU-aaaa"}, {"dtype", "bf16"}}));
  // fp8 values are not held to the bf16 floor.
  d.records.push_back(Meas("node-3", "gemm", "gemm_tflops", 600, "TFLOP/s",
                           {{"gpu", "0"}, {"dtype", "fp8"}}));
  const v1::Scorecard card = BuildScorecard(d);

  const auto& cat = Category(card, "Compute");
  auto fails = RulesWith(cat, "fail");
  REQUIRE(fails.size() == 1);
  CHECK(fails[0].node() == "node-2");
  CHECK(fails[0].value() == Approx(701.5));
  CHECK(fails[0].expected() == Approx(750));
  CHECK(absl::StrContains(fails[0].message(), "node-2 gpu:4 (GPU-aaaa)"));
  CHECK(absl::StrContains(fails[0].message(), "701.5 TFLOP/s is below the plan's minimum 750 TFLOP/s"));
  CHECK(NodeOf(card, "node-2").verdict() == "fail");
  CHECK(AnyReasonContains(NodeOf(card, "node-2"), "701.5 TFLOP/s"));
  CHECK(NodeOf(card, "node-1").verdict() == "pass");
  CHECK(NodeOf(card, "node-3").verdict() == "pass");

  // A floor nobody measured is "not measured", never a pass (beside it, the
  // fleet comparisons of one or two GPUs a dtype, not measured either).
  std::vector<v1::RuleResult> nm;
  for (const auto& r : RulesWith(Category(card, "Compute"), "not_measured")) {
    if (absl::StartsWith(r.rule_id(), "expect.")) nm.push_back(r);
    else CHECK(absl::StartsWith(r.rule_id(), "fleet.spread.gemm_tflops"));
  }
  REQUIRE(nm.size() == 1);
  CHECK(absl::StrContains(nm[0].message(), "memory_bandwidth_gbps >= 4000 but no suite measured it"));
}

TEST_CASE("a GPU planted 15% slow among sixteen is named with node, gpu and uuid",
          "[scorecard]") {
  RunData d = CleanHostcheckRun();
  d.nodes = {"node-1", "node-2"};
  d.records.clear();
  d.tasks.clear();
  for (int i = 0; i < 16; ++i) {
    const std::string node = i < 8 ? "node-1" : "node-2";
    const std::string gpu = std::to_string(i % 8);
    double v = 790.0 + (i % 4) * 1.5;
    if (i == 11) v = 790.0 * 0.85;
    const std::map<std::string, std::string> big = {{"gpu", gpu},
                                                    {"uuid", "GPU-uuid-" + std::to_string(i)},
                                                    {"dtype", "bf16"},
                                                    {"m", "8192"},
                                                    {"n", "8192"},
                                                    {"k", "8192"}};
    d.records.push_back(Meas(node, "gemm", "gemm_tflops", v, "TFLOP/s", big));
    // A small size runs slower on every GPU: a different group, never mixed.
    auto small = big;
    small["m"] = small["n"] = small["k"] = "1024";
    d.records.push_back(Meas(node, "gemm", "gemm_tflops", 300.0 + (i % 3), "TFLOP/s", small));
  }
  for (const auto& n : d.nodes) d.tasks.push_back(Task(n, "gemm", v1::TASK_COMPLETED));
  const v1::Scorecard card = BuildScorecard(d);

  const auto& compute = Category(card, "Compute");
  std::vector<v1::RuleResult> named;
  for (const auto& r : compute.rules()) {
    if (r.outcome() == "warn" || r.outcome() == "fail") named.push_back(r);
  }
  REQUIRE(named.size() == 1);
  const auto& r = named[0];
  CHECK(r.outcome() == "fail");  // beyond the 3x IQR fence
  CHECK(r.node() == "node-2");
  CHECK(absl::StrContains(r.message(), "node-2 gpu:3 (GPU-uuid-11)"));
  INFO(r.message());
  CHECK(absl::StrContains(r.message(), "671.5 TFLOP/s is 15% below the fleet median"));
  CHECK(r.value() == Approx(671.5));
  CHECK(r.expected() == Approx(791.5).epsilon(0.01));
  CHECK(compute.grade() == "C");  // one of two nodes failing: within max(1, 10%)
  CHECK(NodeOf(card, "node-2").verdict() == "fail");
  CHECK(NodeOf(card, "node-1").verdict() == "pass");
  // The spread is reported as a key figure for each group.
  int spreads = 0;
  for (const auto& e : compute.evidence()) {
    if (absl::StrContains(e, "gemm_tflops (dtype=bf16 m=8192 n=8192 k=8192): median")) ++spreads;
    if (absl::StrContains(e, "gemm_tflops (dtype=bf16 m=1024 n=1024 k=1024): median")) ++spreads;
  }
  CHECK(spreads == 2);
}

TEST_CASE("a node with no tasks and no data is never a pass", "[scorecard]") {
  RunData d = CleanHostcheckRun();
  d.nodes.push_back("node-4");
  const v1::Scorecard card = BuildScorecard(d);
  const auto& n4 = NodeOf(card, "node-4");
  CHECK(n4.verdict() == "warn");
  CHECK(AnyReasonContains(n4, "no results from this node"));
}

TEST_CASE("a run without data is not rated", "[scorecard]") {
  RunData d;
  d.run.set_run_id("run-empty");
  d.run.set_state("cancelled");
  const v1::Scorecard card = BuildScorecard(d);
  CHECK(card.tier() == "not rated");
  REQUIRE(card.categories_size() == 8);
  for (const auto& c : card.categories()) CHECK(c.grade() == "not measured");
}

TEST_CASE("simulated data marks the card and its category", "[scorecard]") {
  RunData d = CleanHostcheckRun();
  auto rec = Meas("node-1", "gemm", "gemm_tflops", 790, "TFLOP/s", {{"gpu", "0"}});
  rec.mutable_record()->mutable_measurement()->set_simulated(true);
  d.records.push_back(rec);
  const v1::Scorecard card = BuildScorecard(d);
  CHECK(card.simulated());
  CHECK(Category(card, "Compute").simulated());
  CHECK_FALSE(Category(card, "Reliability").simulated());
  CHECK(absl::StrContains(card.tier_reason(), kSimulatedBanner));
}

}  // namespace
}  // namespace cmax::reports
