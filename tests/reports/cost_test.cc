#include "reports/cost.h"

#include <catch2/catch.hpp>

#include "reports/scorecard.h"
#include "tests/reports/analysis_test_util.h"

namespace cmax::reports {
namespace {

using testing::Find;
using testing::GpuRun;

// CleanHostcheckRun lasts from 21:17:45.123 to 21:18:45.000: 59.877 s.
constexpr double kRunHours = 59.877 / 3600;

TEST_CASE("cost from a known price gives the expected figures", "[cost]") {
  RunData d = GpuRun(800);
  // node-3 fails: its GPU-hours are lost.
  d.records.push_back(Find("node-3", "hostcheck", "hostcheck.ecc", v1::SEVERITY_FAIL,
                           "reliability", "gpu:1", "uncorrectable ECC errors"));
  d.plan.set_price_per_gpu_hour(2.49);
  const v1::Scorecard card = BuildScorecard(d);
  REQUIRE(card.has_cost());
  const v1::CostSummary& c = card.cost();
  CHECK(c.price_per_gpu_hour() == 2.49);
  CHECK(c.price_source() == "plan");
  CHECK(c.bf16_measured());
  CHECK(c.gpus_measured() == 24);
  CHECK(c.bf16_tflops_per_gpu() == Approx(800));
  // $2.49 per GPU-hour / 0.8 PFLOP/s per GPU = $3.1125 per PFLOP-hour.
  CHECK(c.usd_per_pflop_hour() == Approx(3.1125));
  CHECK(c.gpus_total() == 24);
  CHECK(c.run_hours() == Approx(kRunHours));
  CHECK(c.gpu_hours() == Approx(24 * kRunHours));
  REQUIRE(c.lost_nodes_size() == 1);
  CHECK(c.lost_nodes(0) == "node-3");
  CHECK(c.lost_gpu_hours() == Approx(8 * kRunHours));
  CHECK(c.lost_usd() == Approx(8 * kRunHours * 2.49));
  CHECK(c.summary().find("$3.11 per delivered BF16 PFLOP-hour") != std::string::npos);
  CHECK(c.formula() == kCostFormula);
  const std::string md = RenderMarkdown(card);
  CHECK(md.find("## Cost") != std::string::npos);
  CHECK(md.find("| USD per delivered PFLOP-hour | $3.11 |") != std::string::npos);
  CHECK(RenderHtml(card).find("<section id=\"cost\">") != std::string::npos);
}

// Failures are the tasks that broke (crashed, hung, lost), each once however
// many nodes of its group list it; could not run (exit code 2) and
// cancelled are not failures.
TEST_CASE("cost counts the tasks that broke, once each, and not those that could not run",
          "[cost]") {
  v1::Scorecard card;
  auto task = [](v1::NodeVerdict* n, const std::string& id, const std::string& state, int code) {
    v1::TaskSummary* t = n->add_tasks();
    t->set_task_id(id);
    t->set_state(state);
    t->set_exit_code(code);
  };
  v1::NodeVerdict* a = card.add_nodes();
  a->set_node("node-a");
  v1::NodeVerdict* b = card.add_nodes();
  b->set_node("node-b");
  task(a, "r.0.node-a", "completed", 0);
  task(a, "r.1.node-a", "failed", 2);     // could not run
  task(a, "r.2.node-a", "failed", 1);     // crashed
  task(a, "r.3.gang", "timed_out", -1);   // hung: a gang task, on both nodes
  task(b, "r.3.gang", "timed_out", -1);
  task(b, "r.4.node-b", "lost", 2);       // lost, whatever its last code
  task(b, "r.5.node-b", "cancelled", 0);
  task(b, "r.6.node-b", "no-such-state", 1);
  CHECK(ComputeCost(card, 0, "").failures() == 3);
}

TEST_CASE("without a BF16 figure the price per PFLOP-hour is not measured", "[cost]") {
  RunData d = testing::CleanHostcheckRun();
  for (const auto& n : d.nodes) d.inventories[n].set_gpu_count(8);
  // An FP32 figure is not BF16.
  d.records.push_back(testing::Meas("node-1", "gemm", "gemm_tflops", 60, "TFLOP/s",
                                    {{"gpu", "0"}, {"dtype", "fp32"}}));
  d.plan.set_price_per_gpu_hour(2.49);
  const v1::CostSummary c = BuildScorecard(d).cost();
  CHECK_FALSE(c.bf16_measured());
  CHECK(c.usd_per_pflop_hour() == 0);
  CHECK(c.summary().find("not measured") != std::string::npos);
  CHECK(RenderCostMarkdown(BuildScorecard(d)).find("| USD per delivered PFLOP-hour | not "
                                                   "measured |") != std::string::npos);
}

TEST_CASE("a price given later prices an exported scorecard", "[cost]") {
  const v1::Scorecard card = BuildScorecard(GpuRun(1000));
  CHECK(card.cost().price_per_gpu_hour() == 0);
  const v1::CostSummary c = ComputeCost(card, 4.0, "rank --price");
  CHECK(c.usd_per_pflop_hour() == Approx(4.0));
  CHECK(c.price_source() == "rank --price");
}

}  // namespace
}  // namespace cmax::reports
