#include "reports/rank.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include "reports/history.h"
#include "reports/scorecard.h"
#include "tests/reports/analysis_test_util.h"

namespace cmax::reports {
namespace {

const v1::RankEntry& Entry(const v1::RankTable& t, const std::string& cluster) {
  for (const auto& e : t.entries()) {
    if (e.cluster() == cluster) return e;
  }
  FAIL("no entry " << cluster);
  static const v1::RankEntry none;
  return none;
}

std::vector<std::string> Order(const v1::RankTable& t) {
  std::vector<std::string> out;
  for (const auto& e : t.entries()) out.push_back(e.cluster());
  return out;
}

TEST_CASE("rank orders three scorecards as the rules say", "[rank]") {
  // Same tier and grades; "fast" has more BF16 TFLOP/s per GPU than "slow".
  const v1::Scorecard slow = BuildScorecard(testing::GpuRun(800));
  const v1::Scorecard fast = BuildScorecard(testing::GpuRun(900));
  REQUIRE(slow.tier() == fast.tier());
  REQUIRE(slow.tier() != "not rated");
  // The fastest GPUs, but too little measured for a tier: not rated ranks last.
  RunData partial = testing::GpuRun(1000);
  partial.records.erase(std::remove_if(partial.records.begin(), partial.records.end(),
                                       [](const v1::ExportedRecord& r) {
                                         return r.suite() == "storage" || r.suite() == "audit";
                                       }),
                        partial.records.end());
  const v1::Scorecard unrated = BuildScorecard(partial);
  REQUIRE(unrated.tier() == "not rated");

  const v1::RankTable t =
      RankClusters({{"slow", slow, 2.0}, {"unrated", unrated, 0}, {"fast", fast, 3.0}});
  CHECK(Order(t) == std::vector<std::string>{"fast", "slow", "unrated"});
  CHECK(Entry(t, "fast").position() == 1);
  CHECK(Entry(t, "slow").position() == 2);
  CHECK(Entry(t, "unrated").position() == 3);
  CHECK(Entry(t, "slow").why().find("rule 4") != std::string::npos);
  CHECK(Entry(t, "slow").why().find("800.0 BF16 TFLOP/s per GPU vs 900.0") != std::string::npos);
  CHECK(Entry(t, "unrated").why().find("rule 1") != std::string::npos);
  CHECK_FALSE(Entry(t, "unrated").rated());
  CHECK(Entry(t, "fast").bf16_tflops_per_gpu() == Approx(900));
  CHECK(Entry(t, "fast").gpus() == 24);
  // Cost: slow $2.00 / 0.8 = $2.50, fast $3.00 / 0.9 = $3.33 per PFLOP-hour.
  CHECK(Entry(t, "slow").usd_per_pflop_hour() == Approx(2.5));
  CHECK(Entry(t, "fast").usd_per_pflop_hour() == Approx(3.0 / 0.9));
  CHECK(Entry(t, "slow").cost_position() == 1);
  CHECK(Entry(t, "fast").cost_position() == 2);
  CHECK(Entry(t, "unrated").cost_position() == 0);  // no price: not placed

  const std::string text = RenderRankText(t);
  CHECK(text.find("not rated") != std::string::npos);
  CHECK(text.find("rules:") != std::string::npos);
  const std::string md = RenderRankMarkdown(t);
  CHECK(md.find("| 1 | fast |") != std::string::npos);
  CHECK(md.find("| 2 | slow |") != std::string::npos);
  CHECK(md.find("$2.50") != std::string::npos);
}

TEST_CASE(
    "rank shows how each cluster responds to failures from its scorecard's history, "
    "without reordering",
    "[rank]") {
  v1::Scorecard quick = BuildScorecard(testing::GpuRun(800));
  v1::Scorecard slow_repair = quick;
  v1::Scorecard alone = quick;
  // Histories as the coordinator computes them (reports/history.h).
  v1::NodeRunSummary s;
  s.set_node("n");
  s.set_gpus(8);
  auto add = [&](std::vector<v1::NodeRunSummary>& v, const char* run, double hours,
                 const char* verdict) {
    s.set_run_id(run);
    s.set_finished_unix_ns(static_cast<int64_t>(hours * 3600e9));
    s.set_verdict(verdict);
    v.push_back(s);
  };
  std::vector<v1::NodeRunSummary> fast_fix, slow_fix;
  add(fast_fix, "a", 0, "reject");
  add(fast_fix, "b", 2, "accept");
  add(slow_fix, "a", 0, "reject");
  add(slow_fix, "b", 30, "accept");
  add(slow_fix, "c", 40, "reject");
  *quick.mutable_history() = ComputeReliability(fast_fix);
  *slow_repair.mutable_history() = ComputeReliability(slow_fix);
  const v1::RankTable t = RankClusters(
      {{"slow-repair", slow_repair, 0}, {"quick", quick, 0}, {"alone", alone, 0}});
  // Equal otherwise: the repair figures do not order them (rule order unchanged).
  CHECK(Entry(t, "quick").position() == Entry(t, "slow-repair").position());
  CHECK(Entry(t, "quick").repair_measured());
  CHECK(Entry(t, "quick").median_repair_hours() == Approx(2));
  CHECK(Entry(t, "slow-repair").median_repair_hours() == Approx(30));
  CHECK(Entry(t, "slow-repair").open_incidents() == 1);
  CHECK(Entry(t, "slow-repair").response().find("1 open") != std::string::npos);
  CHECK_FALSE(Entry(t, "alone").repair_measured());
  CHECK(Entry(t, "alone").response().find("not measured") != std::string::npos);
  const std::string text = RenderRankText(t);
  CHECK(text.find("TTR_P50/P90") != std::string::npos);
  CHECK(text.find("2.00/2.00") != std::string::npos);
  CHECK(text.find("quick: responds to failures: time to repair median 2.00 h") !=
        std::string::npos);
  CHECK(RenderRankMarkdown(t).find("30.00/30.00") != std::string::npos);
}

TEST_CASE("rank counts Orchestration and Monitoring grades like the other rated categories",
          "[rank]") {
  const v1::Scorecard good = BuildScorecard(testing::GpuRun(800));
  RunData loose = testing::GpuRun(800);
  // One node's monitoring lacks signals (warn): Monitoring B; the tier stays
  // (another category already sets it), the grade points fall.
  loose.records.push_back(testing::Find("node-1", "monitoring", "monitoring.signals.dcgm",
                                        v1::SEVERITY_WARN, "monitoring", "node",
                                        "dcgm exporter lacks 1 of 8 health signals"));
  const v1::Scorecard worse = BuildScorecard(loose);
  REQUIRE(good.tier() == worse.tier());
  const v1::RankTable t = RankClusters({{"worse", worse, 0}, {"good", good, 0}});
  CHECK(Order(t) == std::vector<std::string>{"good", "worse"});
  CHECK(Entry(t, "worse").why().find("rule 3") != std::string::npos);
  CHECK(Entry(t, "good").grades().at("Monitoring") == "A");
  CHECK(Entry(t, "worse").grades().at("Monitoring") == "B");
  const std::string text = RenderRankText(t);
  CHECK(text.find("ORCH  MON") != std::string::npos);
  const std::string md = RenderRankMarkdown(t);
  CHECK(md.find("| Security | Orchestration | Monitoring |") != std::string::npos);
  bool rule = false;
  for (const auto& r : t.rules()) {
    rule |= r.find("Security, Orchestration, Monitoring (A 4") != std::string::npos;
  }
  CHECK(rule);
}

TEST_CASE("clusters equal on every rule share a position and the tie is explained", "[rank]") {
  const v1::Scorecard a = BuildScorecard(testing::GpuRun(800));
  // 800.4 rounds to the same three significant digits as 800.
  const v1::Scorecard b = BuildScorecard(testing::GpuRun(800.4));
  const v1::Scorecard c = BuildScorecard(testing::GpuRun(700));
  const v1::RankTable t = RankClusters({{"c", c, 0}, {"a", a, 0}, {"b", b, 0}});
  CHECK(Entry(t, "a").position() == 1);
  CHECK(Entry(t, "b").position() == 1);
  CHECK(Entry(t, "c").position() == 3);
  CHECK(Entry(t, "b").tie().find("ties with a") != std::string::npos);
  CHECK(Entry(t, "a").tie().find("ties with b") != std::string::npos);
  CHECK(RenderRankText(t).find("b: ties with a: equal on every rule") != std::string::npos);
}

TEST_CASE("a measured figure ranks above a not measured one", "[rank]") {
  RunData no_gemm = testing::GpuRun(800);
  for (auto& r : no_gemm.records) {
    if (r.suite() == "gemm" && r.record().has_measurement()) {
      r.mutable_record()->mutable_measurement()->set_metric("gemm_check");  // not a TFLOP/s figure
    }
  }
  const v1::Scorecard unmeasured = BuildScorecard(no_gemm);
  const v1::Scorecard measured = BuildScorecard(testing::GpuRun(100));
  REQUIRE(unmeasured.tier() == measured.tier());
  const v1::RankTable t = RankClusters({{"unmeasured", unmeasured, 2}, {"measured", measured, 2}});
  CHECK(Order(t) == std::vector<std::string>{"measured", "unmeasured"});
  CHECK_FALSE(Entry(t, "unmeasured").bf16_measured());
  CHECK_FALSE(Entry(t, "unmeasured").cost_measured());
  CHECK(RenderRankText(t).find("n/m") != std::string::npos);
}

}  // namespace
}  // namespace cmax::reports
