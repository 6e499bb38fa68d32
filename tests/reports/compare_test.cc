#include "reports/compare.h"

#include <catch2/catch.hpp>
#include <cmath>

#include "absl/strings/str_cat.h"

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
  // +150%: beyond rtt_ms's declared noise (100%, a round trip 2x the fleet's).
  SetMetric(&after, "node-2", "rtt_ms", 0.5, "", /*as_peer=*/true);
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
  CHECK(rtt->after() == Approx(0.5));
  CHECK(rtt->change_pct() == Approx(150));
  CHECK(rtt->noise_pct() == Approx(100));
  CHECK(rtt->noise_basis() == "declared noise");
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
                  "0.5 ms (+150.0%; lower is better; noise 100%, declared noise)") !=
        std::string::npos);
  CHECK(text.find("cleared [warn] node-3: hostcheck.ntp node: clock not synchronised") !=
        std::string::npos);
  const std::string html = RenderCompareHtml(c);
  CHECK(html.find("&lt;ECC&gt;") != std::string::npos);
  CHECK(html.find("<ECC>") == std::string::npos);
  CHECK(html.find("<script") == std::string::npos);
  const std::string json = RenderCompareJson(c);
  CHECK(json.find("\"noise_basis\": \"declared noise\"") != std::string::npos);

  // A lower threshold lists a 3.5% GEMM change: beyond gemm_tflops' declared
  // 3% noise and the (zero) spread of its peers.
  SetMetric(&after, "node-1", "gemm_tflops", 828, "3");
  const v1::Scorecard b2 = BuildScorecard(after);
  CHECK(Moved(CompareScorecards(a, b2), "node-1", "gemm_tflops") == nullptr);
  CompareOptions low;
  low.threshold_pct = 2;
  const Comparison listed = CompareScorecards(a, b2, low);  // Moved points into it
  const v1::CompareChange* small = Moved(listed, "node-1", "gemm_tflops");
  REQUIRE(small != nullptr);
  CHECK(small->change_pct() == Approx(3.5));
  CHECK(small->noise_basis() == "declared noise");
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

namespace cmax::reports {
namespace {

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// A storage total as the suite writes it: besides the labels that say what
// was measured, its run's instants, per-second series, rank and bytes moved.
void AddStorageTotal(RunData* d, const std::string& node, double p99_us, int run) {
  const std::string rank = std::to_string((run + node.back()) % 3);
  d->records.push_back(testing::Meas(
      node, "storage", "storage_lat_p99_us", p99_us, "us",
      {{"pattern", "randread"}, {"op", "read"}, {"job", "all"}, {"block_size", "4096"},
       {"bw_series_mbps", run == 0 ? "910,905,899" : "887,902,915,909"},
       {"bw_series_start_unix_ms", std::to_string(1764451065123 + run * 3600000)},
       {"start_unix_ns", std::to_string(1764451065123000000 + run * 3600000000000)},
       {"target_unix_ns", std::to_string(1764451064000000000 + run * 3600000000000)},
       {"rank", rank}, {"io_bytes", std::to_string(4000000000 + run * 12345)}}));
}

TEST_CASE("a storage figure is one key across runs whatever its run's instants, series and rank",
          "[compare]") {
  RunData before = testing::GpuRun(), after = testing::GpuRun();
  for (const auto& n : before.nodes) {
    AddStorageTotal(&before, n, 200, 0);
    AddStorageTotal(&after, n, n == "node-2" ? 900 : 200, 1);
  }
  const Comparison c = CompareScorecards(BuildScorecard(before), BuildScorecard(after));
  const std::string text = RenderCompareText(c);
  INFO(text);
  CHECK(text.find("; 0 not measured in B, 0 not measured in A\n") != std::string::npos);
  CHECK(text.find("metrics not measured in B") == std::string::npos);
  CHECK(text.find("regressed storage node-2 storage_lat_p99_us (block_size=4096, job=all, "
                  "op=read, pattern=randread): 200 us -> 900 us (+350.0%") != std::string::npos);
  CHECK(text.find("bw_series") == std::string::npos);
  CHECK(text.find("unix_ns") == std::string::npos);
}

// node-1 ran orchestration in run A (and failed its scheduler check); run B,
// a quicker plan, never ran it there.
RunData WithOrchestration(bool failing) {
  RunData d = testing::GpuRun();
  d.tasks.push_back(
      testing::Task("node-1", "orchestration", v1::TASK_COMPLETED, failing ? 1 : 0));
  if (failing) {
    d.records.push_back(testing::Find("node-1", "orchestration", "orchestration.scheduler",
                                      v1::SEVERITY_FAIL, "orchestration", "node",
                                      "slurmctld does not answer"));
  }
  return d;
}

TEST_CASE("a check run B did not run is not measured in B, and the verdict it made is not "
          "compared",
          "[compare]") {
  const v1::Scorecard full = BuildScorecard(WithOrchestration(true));
  const v1::Scorecard quick = BuildScorecard(testing::GpuRun());
  REQUIRE(testing::NodeOf(full, "node-1").verdict() == "fail");
  REQUIRE(testing::NodeOf(quick, "node-1").verdict() == "pass");

  const Comparison c = CompareScorecards(full, quick);
  const std::string text = RenderCompareText(c);
  INFO(text);
  CHECK(text.find("  not measured in B [fail] node-1: orchestration.scheduler node: slurmctld "
                  "does not answer\n") != std::string::npos);
  CHECK(text.find("findings (warn or worse): 0 appeared, 0 cleared; 1 not measured in B, 0 not "
                  "measured in A\n") != std::string::npos);
  CHECK(text.find("cleared [fail]") == std::string::npos);
  CHECK(text.find("  node-1: fail in A, pass in B: not compared (only A ran orchestration on "
                  "it)\n") != std::string::npos);
  CHECK(text.find("node-1: fail -> pass") == std::string::npos);
  CHECK(text.find("verdicts: 0 worse, 0 better; 1 changed node not comparable") !=
        std::string::npos);
  CHECK(c.regressions() == 0);
  const std::string html = RenderCompareHtml(c);
  CHECK(html.find("<tr class=\"unmeasured\"><td>not measured in B</td><td>fail</td><td>node-1"
                  "</td><td>orchestration.scheduler</td>") != std::string::npos);
  CHECK(html.find("<td>not compared: only A ran orchestration on it</td>") != std::string::npos);
  CHECK(html.find("<li><strong>no regression</strong></li>") < html.find("<h2>Findings"));

  // The other way round nothing appeared either: run A never ran the check.
  const Comparison back = CompareScorecards(quick, full);
  const std::string back_text = RenderCompareText(back);
  INFO(back_text);
  CHECK(back_text.find("  not measured in A [fail] node-1: orchestration.scheduler") !=
        std::string::npos);
  CHECK(back_text.find("appeared [fail]") == std::string::npos);
  CHECK(back_text.find("node-1: pass in A, fail in B: not compared (only B ran orchestration "
                       "on it)") != std::string::npos);
  // node-1's new fail makes run B's tier worse, but only because B ran more.
  CHECK(back_text.find("tier: Gold -> Silver (not compared: the runs ran different suites or "
                       "nodes)") != std::string::npos);
  CHECK(back.regressions() == 0);
  CHECK(back_text.find("  no regression\n") != std::string::npos);

  // Where run B ran the check too, its absence is a clearance and the
  // verdicts compare.
  const Comparison fixed = CompareScorecards(full, BuildScorecard(WithOrchestration(false)));
  const std::string fixed_text = RenderCompareText(fixed);
  INFO(fixed_text);
  CHECK(fixed_text.find("  cleared [fail] node-1: orchestration.scheduler") != std::string::npos);
  CHECK(fixed_text.find("  node-1: fail -> pass\n") != std::string::npos);
}

// Collective time per GPU, op all_reduce at 1 KiB, on every GPU of the three
// nodes: `jitter(i)` of 20 us for the i-th GPU.
template <typename Jitter>
RunData CollectiveRun(Jitter jitter) {
  RunData d = testing::GpuRun();
  int i = 0;
  for (const auto& n : d.nodes) {
    for (int g = 0; g < 8; ++g, ++i) {
      d.records.push_back(testing::Meas(n, "collective", "time_us", 20 * jitter(i), "us",
                                        {{"gpu", std::to_string(g)}, {"op", "all_reduce"},
                                         {"size_bytes", "1024"}}));
    }
  }
  return d;
}

TEST_CASE("jitter within a metric's spread or its unit's floor is not a regression", "[compare]") {
  // Loopback-like: every GPU's time wanders by up to 25% from run to run.
  const auto a_jitter = [](int i) { return 1 + 0.25 * std::sin(i); };
  const auto b_jitter = [](int i) { return 1 + 0.25 * std::cos(1.3 * i); };
  RunData before = CollectiveRun(a_jitter), after = CollectiveRun(b_jitter);
  // A lone latency (no peers, one value): 8% is within the 10% floor of us.
  before.records.push_back(testing::Meas("node-1", "rdma", "rdma_write_lat_us", 2.0, "us"));
  after.records.push_back(testing::Meas("node-1", "rdma", "rdma_write_lat_us", 2.16, "us"));
  const v1::Scorecard a = BuildScorecard(before);
  const Comparison c = CompareScorecards(a, BuildScorecard(after));
  const std::string text = RenderCompareText(c);
  INFO(text);
  CHECK(c.regressions() == 0);
  CHECK(text.find("  no regression\n") != std::string::npos);
  CHECK(text.find("metrics that moved beyond their noise") == std::string::npos);
  // Many of the 24 moved more than 5%; they are counted, not listed.
  CHECK(c.within_noise() >= 10);
  CHECK(text.find(absl::StrCat(c.within_noise(), " moved within it")) != std::string::npos);

  // Beyond the spread and the floor they are regressions, and say which
  // noise they exceeded.
  RunData worse = CollectiveRun(b_jitter);
  testing::SetMetric(&worse, "node-2", "time_us", 60, "3");  // 3x the typical 20 us
  worse.records.push_back(testing::Meas("node-1", "rdma", "rdma_write_lat_us", 2.5, "us"));
  const Comparison w = CompareScorecards(a, BuildScorecard(worse));
  const std::string worse_text = RenderCompareText(w);
  INFO(worse_text);
  CHECK(w.regressions() == 2);
  CHECK(worse_text.find("  2 regressions\n") != std::string::npos);
  CHECK(worse_text.find("regressed collective node-2 gpu 3 time_us (op=all_reduce, "
                        "size_bytes=1024):") != std::string::npos);
  CHECK(worse_text.find("spread across peers in run A)") != std::string::npos);
  CHECK(worse_text.find("regressed rdma node-1 rdma_write_lat_us: 2 us -> 2.50 us (+25.0%; lower "
                        "is better; noise 10%, unit floor)") != std::string::npos);
}

TEST_CASE("the summary comes first and long lists are bounded, with counts", "[compare]") {
  // 3 nodes x 8 GPUs x 50 sizes, every one three times slower in run B.
  auto run = [](double scale) {
    RunData d = testing::GpuRun();
    for (const auto& n : d.nodes) {
      for (int g = 0; g < 8; ++g) {
        for (int size = 0; size < 50; ++size) {
          d.records.push_back(testing::Meas(
              n, "collective", "time_us", scale * (10 + size), "us",
              {{"gpu", std::to_string(g)}, {"op", "all_reduce"},
               {"size_bytes", std::to_string(size * 1024)}}));
        }
      }
    }
    return d;
  };
  const Comparison c = CompareScorecards(BuildScorecard(run(1)), BuildScorecard(run(3)));
  REQUIRE(c.moved_size() == 1200);

  const std::string text = RenderCompareText(c);
  INFO(text.substr(0, 2000));
  // The header, then the summary.
  CHECK(text.find("compare A = run-1 (quick) -> B = run-1 (quick), threshold 5%\n"
                  "  1200 regressions\n"
                  "  metrics: ") == 0);
  CHECK(text.find("  (and 1180 more: --format json lists every one)\n") != std::string::npos);
  CHECK(Count(text, "\n") < 40);

  const std::string html = RenderCompareHtml(c);
  CHECK(html.find("<h2>Summary</h2>") < html.find("<h2>Metrics that moved beyond their noise"));
  CHECK(html.find("<li><strong>1200 regressions</strong></li>") != std::string::npos);
  CHECK(html.find("<details><summary>180 more</summary>") != std::string::npos);
  CHECK(html.find("<p>And 1000 more: <code>cmaxctl compare --format json</code> lists every "
                  "one.</p>") != std::string::npos);
  CHECK(Count(html, "<tr class=\"regressed\">") == 200);
  CHECK(html.size() < 150 * 1024);

  // The JSON lists every one.
  CHECK(Count(RenderCompareJson(c), "\"direction\": \"regressed\"") == 1200);
}

}  // namespace
}  // namespace cmax::reports

namespace cmax::reports {
namespace {

TEST_CASE("a collapse is a regression even where the spread is wider than 100%", "[compare]") {
  // Transfers between the three nodes that vary fourfold in run A: a noise
  // of more than 100% that no fall in percent could exceed.
  RunData before = testing::GpuRun(), after = testing::GpuRun();
  const double rates[] = {1000, 3000, 500, 2500, 800, 4000};
  int i = 0;
  for (const auto& n : before.nodes) {
    for (const auto& peer : before.nodes) {
      if (peer == n) continue;
      const double rate = rates[i++];
      before.records.push_back(testing::Meas(n, "connectivity", "transfer_mbps", rate, "Mbit/s",
                                             {{"src", n}, {"dst", peer}}));
      // node-1 -> node-2 collapses to 1%; the others halve or double.
      const double b =
          n == "node-1" && peer == "node-2" ? rate / 100 : (i % 2 ? rate / 2 : rate * 2);
      after.records.push_back(testing::Meas(n, "connectivity", "transfer_mbps", b, "Mbit/s",
                                            {{"src", n}, {"dst", peer}}));
    }
  }
  const Comparison c = CompareScorecards(BuildScorecard(before), BuildScorecard(after));
  const std::string text = RenderCompareText(c);
  INFO(text);
  CHECK(c.regressions() == 1);
  // 3 IQR of run A's six rates relative to their median: 3 x 2025 / 1750.
  CHECK(text.find("  regressed connectivity node-1 transfer_mbps (dst=node-2, src=node-1): "
                  "1000 Mbit/s -> 10 Mbit/s (-99.0%; higher is better; noise 347.1%, spread "
                  "across peers in run A)") != std::string::npos);
}

}  // namespace
}  // namespace cmax::reports
