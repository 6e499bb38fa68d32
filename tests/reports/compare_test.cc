#include "reports/compare.h"

#include <catch2/catch.hpp>

#include "reports/scorecard.h"
#include "tests/reports/analysis_test_util.h"

namespace cmax::reports {
namespace {

using testing::Find;
using testing::GpuRun;
using testing::SetMetric;

const v1::CompareChange* Moved(const Comparison& c, const std::string& node,
                               const std::string& metric, const std::string& dst = "") {
  for (const auto& ch : c.moved()) {
    if (ch.node() != node || ch.metric() != metric) continue;
    auto it = ch.labels().find("dst");
    if (!dst.empty() && (it == ch.labels().end() || it->second != dst)) continue;
    return &ch;
  }
  return nullptr;
}

TEST_CASE("the metric summary keys by entry, node, GPU and labels, not by autotuner choices",
          "[compare]") {
  RunData d = GpuRun();
  // A second value of the same key with another autotuner label: one key, median.
  d.records.push_back(testing::Meas("node-1", "gemm", "gemm_tflops", 900, "TFLOP/s",
                                    {{"gpu", "0"}, {"dtype", "bf16"}, {"m", "8192"},
                                     {"n", "8192"}, {"k", "8192"}, {"algos_timed", "3"}}));
  const auto summary = BuildMetricSummary(d);
  int gemm_keys = 0;
  for (const auto& m : summary) {
    if (m.metric() != "gemm_tflops") continue;
    ++gemm_keys;
    CHECK(m.labels().count("algos_timed") == 0);
    CHECK(m.better() == "higher");
    if (m.node() == "node-1" && m.gpu() == "0") {
      CHECK(m.count() == 2);
      CHECK(m.value() == Approx(850));
    }
  }
  CHECK(gemm_keys == 24);  // 3 nodes x 8 GPUs
  const v1::Scorecard card = BuildScorecard(d);
  CHECK(card.metric_summary_size() == static_cast<int>(summary.size()));
}

TEST_CASE("compare names moved metrics with their change, findings, verdicts and the tier",
          "[compare]") {
  RunData before = GpuRun(800, 0.2);
  // A warning only run A has: cleared in run B.
  before.records.push_back(Find("node-3", "hostcheck", "hostcheck.ntp", v1::SEVERITY_WARN,
                                "reliability", "node", "clock not synchronised"));
  RunData after = GpuRun(800, 0.2);
  SetMetric(&after, "node-2", "rtt_ms", 0.4, "", /*as_peer=*/true);  // +100%
  SetMetric(&after, "node-1", "gemm_tflops", 824, "3");               // +3%: below 5%
  SetMetric(&after, "node-3", "gemm_tflops", 880, "5");               // +10%: improved
  after.records.push_back(Find("node-2", "hostcheck", "hostcheck.ecc", v1::SEVERITY_FAIL,
                               "reliability", "gpu:2", "uncorrectable <ECC> errors"));
  const v1::Scorecard a = BuildScorecard(before);
  const v1::Scorecard b = BuildScorecard(after);
  REQUIRE(a.tier() != b.tier());  // the failed node changes the tier

  const Comparison c = CompareScorecards(a, b);
  CHECK(c.threshold_pct() == 5);
  const v1::CompareChange* rtt = Moved(c, "node-2", "rtt_ms", "node-1");
  REQUIRE(rtt != nullptr);
  CHECK(rtt->before() == Approx(0.2));
  CHECK(rtt->after() == Approx(0.4));
  CHECK(rtt->change_pct() == Approx(100));
  CHECK(rtt->direction() == "regressed");
  CHECK(rtt->better() == "lower");
  // node-1 -> node-2 is slower too (node-2 as the peer).
  REQUIRE(Moved(c, "node-1", "rtt_ms", "node-2") != nullptr);
  CHECK(Moved(c, "node-1", "rtt_ms", "node-3") == nullptr);
  CHECK(Moved(c, "node-1", "gemm_tflops") == nullptr);  // 3% is within 5%
  const v1::CompareChange* gemm = Moved(c, "node-3", "gemm_tflops");
  REQUIRE(gemm != nullptr);
  CHECK(gemm->gpu() == "5");
  CHECK(gemm->direction() == "improved");
  CHECK(gemm->change_pct() == Approx(10));
  // Regressions are listed first.
  REQUIRE(c.moved_size() > 0);
  CHECK(c.moved(0).direction() == "regressed");

  bool appeared = false, cleared = false;
  for (const auto& f : c.findings()) {
    if (f.change() == "appeared" && f.check_id() == "hostcheck.ecc" && f.node() == "node-2") {
      appeared = true;
      CHECK(f.severity() == "fail");
    }
    if (f.change() == "cleared" && f.check_id() == "hostcheck.ntp" && f.node() == "node-3") {
      cleared = true;
    }
  }
  CHECK(appeared);
  CHECK(cleared);

  bool node2_worse = false;
  for (const auto& v : c.verdicts()) {
    if (v.node() == "node-2") {
      node2_worse = v.worse() && v.after() == "fail";
      CHECK(v.before() != "fail");
    }
  }
  CHECK(node2_worse);
  CHECK(c.tier_a() == a.tier());
  CHECK(c.tier_b() == b.tier());
  CHECK(c.tier_changed());
  CHECK(c.regressions() >= 4);  // 2 rtt + 1 finding + 1 verdict (+ tier if worse)

  const std::string text = RenderCompareText(c);
  CHECK(text.find("regressed connectivity node-2 rtt_ms (dst=node-1, src=node-2): 0.2 ms -> "
                  "0.4 ms (+100.0%; lower is better)") != std::string::npos);
  const std::string html = RenderCompareHtml(c);
  CHECK(html.find("&lt;ECC&gt;") != std::string::npos);
  CHECK(html.find("<ECC>") == std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  const std::string json = RenderCompareJson(c);
  CHECK(json.find("\"change_pct\": 100") != std::string::npos);

  // A lower threshold lists the 3% GEMM change.
  CompareOptions low;
  low.threshold_pct = 2;
  const v1::CompareChange* small = Moved(CompareScorecards(a, b, low), "node-1", "gemm_tflops");
  REQUIRE(small != nullptr);
  CHECK(small->change_pct() == Approx(3));
}

TEST_CASE("comparing a run with itself finds nothing", "[compare]") {
  const v1::Scorecard a = BuildScorecard(GpuRun());
  const Comparison c = CompareScorecards(a, a);
  CHECK(c.moved().empty());
  CHECK(c.findings().empty());
  CHECK(c.verdicts().empty());
  CHECK_FALSE(c.tier_changed());
  CHECK(c.regressions() == 0);
  CHECK(c.metrics_compared() == a.metric_summary_size());
}

TEST_CASE("a metric run B lacks is listed as not measured there, never as a change",
          "[compare]") {
  RunData after = GpuRun();
  std::vector<v1::ExportedRecord> kept;
  for (const auto& r : after.records) {
    if (!(r.node() == "node-3" && r.suite() == "gemm" && r.record().has_measurement())) {
      kept.push_back(r);
    }
  }
  after.records = kept;
  const Comparison c = CompareScorecards(BuildScorecard(GpuRun()), BuildScorecard(after));
  CHECK(c.only_in_a() == 8);
  REQUIRE(c.missing_in_b_size() == 8);
  CHECK(c.missing_in_b(0).find("node-3") != std::string::npos);
  CHECK(Moved(c, "node-3", "gemm_tflops") == nullptr);
}

}  // namespace
}  // namespace cmax::reports

namespace cmax::reports {
namespace {

TEST_CASE("a metric whose better direction is unknown is changed, not a regression",
          "[compare]") {
  RunData after = testing::GpuRun();
  testing::SetMetric(&after, "node-1", "memory_total_gib", 1500);  // from 2015.6 GiB
  const Comparison c = CompareScorecards(BuildScorecard(testing::GpuRun()), BuildScorecard(after));
  const v1::CompareChange* mem = Moved(c, "node-1", "memory_total_gib");
  REQUIRE(mem != nullptr);
  CHECK(mem->direction() == "changed");
  CHECK(mem->better().empty());
  CHECK(mem->change_pct() == Approx((1500 - 2015.6) / 2015.6 * 100));
  CHECK(c.regressions() == 0);
  CHECK(RenderCompareText(c).find("better direction unknown") != std::string::npos);
}

}  // namespace
}  // namespace cmax::reports
