#include "reports/stats.h"

#include <catch2/catch.hpp>
#include <limits>
#include <vector>

#include "common/median.h"

using cmax::reports::Better;
using cmax::reports::FindOutliers;
using cmax::reports::Keyed;

TEST_CASE("quartiles and fences", "[stats]") {
  auto s = cmax::reports::ComputeFleetStats({1, 2, 3, 4, 5, 6, 7, 8, 9});
  CHECK(s.median == Approx(5));
  CHECK(s.q1 == Approx(3));
  CHECK(s.q3 == Approx(7));
  CHECK(s.low_mild == Approx(-3));
  CHECK(s.high_extreme == Approx(19));
}

TEST_CASE("a GPU planted 15% slow among sixteen is named", "[stats]") {
  std::vector<Keyed> gpus;
  for (int i = 0; i < 16; ++i) {
    double v = 790.0 + (i % 4) * 1.5;  // a tight, realistic spread
    if (i == 11) v = 790.0 * 0.85;
    gpus.push_back({"node-" + std::to_string(i / 8) + "/gpu:" + std::to_string(i % 8),
                    "node-" + std::to_string(i / 8), v});
  }
  auto out = FindOutliers(gpus, Better::kHigher);
  REQUIRE(out.size() == 1);
  CHECK(out[0].item.subject == "node-1/gpu:3");
  CHECK(out[0].extreme);
  CHECK(out[0].relative_to_median == Approx(0.85).epsilon(0.01));
}

TEST_CASE("a uniform fleet and tiny fleets name nobody", "[stats]") {
  std::vector<Keyed> same;
  for (int i = 0; i < 8; ++i) same.push_back({"g" + std::to_string(i), "n", 100.0 + i * 0.01});
  CHECK(FindOutliers(same, Better::kHigher).empty());
  std::vector<Keyed> few = {{"a", "n", 100}, {"b", "n", 10}, {"c", "n", 100}};
  CHECK(FindOutliers(few, Better::kHigher).empty());
}

TEST_CASE("for latencies the high side is bad", "[stats]") {
  std::vector<Keyed> rtts;
  for (int i = 0; i < 10; ++i) rtts.push_back({"p" + std::to_string(i), "n", 0.1 + 0.001 * i});
  rtts.push_back({"slow", "n9", 5.0});
  auto out = FindOutliers(rtts, Better::kLower);
  REQUIRE(out.size() == 1);
  CHECK(out[0].item.subject == "slow");
}

TEST_CASE("the fleet median is the one median of the suites", "[stats]") {
  // reports/stats and common/median share one definition: a suite's figure
  // and the judge's fleet median of the same values cannot disagree.
  CHECK(cmax::reports::ComputeFleetStats({0.7, 0.1}).median == 0.4);
  // On an order statistic next to an infinite value: the value (was NaN).
  CHECK(cmax::reports::ComputeFleetStats({1, 2, std::numeric_limits<double>::infinity()}).median == 2);
  for (const std::vector<double>& v : std::vector<std::vector<double>>{
           {9.5, 1.25, 3, 8, 2.75, 6, 4.5, 7}, {2.550690257394217, 7.6377461897661405}, {1}}) {
    CHECK(cmax::reports::ComputeFleetStats(v).median == cmax::Median(v));
  }
}
