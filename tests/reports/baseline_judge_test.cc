#include <catch2/catch.hpp>

#include "reports/baseline.h"
#include "reports/judges.h"
#include "reports/scorecard.h"
#include "tests/reports/analysis_test_util.h"

namespace cmax::reports {

namespace {

using testing::GpuRun;

std::vector<v1::RuleResult> Judge(const RunData& d) {
  std::vector<v1::RuleResult> out;
  BaselineJudge(d, &out);
  return out;
}

TEST_CASE("a saved baseline holds per GPU values and fleet medians with their origin",
          "[baseline]") {
  const v1::Scorecard card = BuildScorecard(GpuRun(800, 0.2));
  const v1::BaselineFile b = MakeBaseline(card);
  CHECK(b.run_id() == "run-1");
  CHECK(b.plan() == "quick");
  CHECK_FALSE(b.cmax_version().empty());
  CHECK_FALSE(b.created().empty());
  int gemm = 0;
  for (const auto& v : b.values()) {
    CHECK_FALSE(v.better().empty());  // only metrics with a known direction
    gemm += v.metric() == "gemm_tflops";
  }
  CHECK(gemm == 24);
  bool fleet_gemm = false;
  for (const auto& v : b.fleet_medians()) {
    if (v.metric() != "gemm_tflops") continue;
    fleet_gemm = true;
    CHECK(v.node().empty());
    CHECK(v.value() == Approx(800));
    CHECK(v.count() == 24);
  }
  CHECK(fleet_gemm);
}

TEST_CASE("the baseline judge flags a regressed GPU and says not measured for a missing one",
          "[baseline]") {
  RunData run = GpuRun(800, 0.2);
  *run.plan.mutable_baseline() = MakeBaseline(BuildScorecard(GpuRun(800, 0.2)));
  SECTION("nothing changed: no warning, a pass per category") {
    const auto results = Judge(run);
    for (const auto& r : results) CHECK(r.outcome() == "pass");
    CHECK_FALSE(results.empty());
  }
  SECTION("a slower GPU and a missing node's GEMM") {
    testing::SetMetric(&run, "node-2", "gemm_tflops", 640, "3");  // 20% below
    testing::SetMetric(&run, "node-1", "gemm_tflops", 780, "1");  // 2.5%: within 5%
    std::vector<v1::ExportedRecord> kept;
    for (const auto& r : run.records) {
      if (!(r.node() == "node-3" && r.suite() == "gemm" && r.record().has_measurement())) {
        kept.push_back(r);
      }
    }
    run.records = kept;
    const auto results = Judge(run);
    int warns = 0;
    bool node3_not_measured = false;
    for (const auto& r : results) {
      if (r.outcome() == "warn") {
        ++warns;
        CHECK(r.rule_id() == "baseline.regression");
        CHECK(r.node() == "node-2");
        CHECK(r.category() == "Compute");
        CHECK(r.message().find("gpu 3") != std::string::npos);
        CHECK(r.message().find("20.0% worse") != std::string::npos);
        CHECK(r.value() == 640);
        CHECK(r.expected() == 800);
      }
      if (r.outcome() == "not_measured" && r.node() == "node-3") {
        node3_not_measured = true;
        CHECK(r.message().find("8 baseline values not measured") != std::string::npos);
      }
      if (r.outcome() == "pass") CHECK(r.category() != "Compute");  // Compute regressed
    }
    CHECK(warns == 1);
    CHECK(node3_not_measured);
    // Through the scorecard: node-2 has the baseline warning among its
    // reasons (the fleet judge fails that GPU as an outlier too), node-3 is
    // never a pass.
    const v1::Scorecard card = BuildScorecard(run);
    CHECK(testing::NodeOf(card, "node-2").verdict() != "pass");
    CHECK(testing::AnyReasonContains(testing::NodeOf(card, "node-2"),
                                     "Compute warn: gemm node-2 gpu 3 gemm_tflops"));
    CHECK(testing::AnyReasonContains(testing::NodeOf(card, "node-2"), "against the baseline"));
    CHECK(testing::NodeOf(card, "node-3").verdict() != "pass");
    CHECK(card.baseline().find("run run-1 of plan quick") != std::string::npos);
    CHECK(card.baseline().find("tolerance 5%") != std::string::npos);
  }
  SECTION("the tolerance is the plan's") {
    testing::SetMetric(&run, "node-2", "gemm_tflops", 640, "3");
    run.plan.set_baseline_tolerance(0.25);
    for (const auto& r : Judge(run)) CHECK(r.outcome() != "warn");
  }
  SECTION("a node the baseline lacks is judged against the fleet median") {
    run.nodes.push_back("node-4");
    for (int g = 0; g < 8; ++g) {
      run.records.push_back(testing::Meas("node-4", "gemm", "gemm_tflops", g == 0 ? 500 : 800,
                                          "TFLOP/s",
                                          {{"gpu", std::to_string(g)}, {"dtype", "bf16"},
                                           {"m", "8192"}, {"n", "8192"}, {"k", "8192"}}));
    }
    int warns = 0;
    for (const auto& r : Judge(run)) {
      if (r.outcome() != "warn") continue;
      ++warns;
      CHECK(r.node() == "node-4");
      CHECK(r.message().find("fleet median") != std::string::npos);
    }
    CHECK(warns == 1);
  }
}

TEST_CASE("without a baseline the judge says nothing", "[baseline]") {
  CHECK(Judge(GpuRun()).empty());
}

}  // namespace
}  // namespace cmax::reports
