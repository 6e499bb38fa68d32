// The one median (common/median.h): the suites' timed iterations, the
// connectivity RTT and the scorecard's fleet statistics all read it.
#include "common/median.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <vector>

TEST_CASE("stats median of an odd count is the middle value, in any order", "[median]") {
  CHECK(cmax::Median({3, 1, 2}) == 2);
  CHECK(cmax::Median({7}) == 7);
  CHECK(cmax::Median({5, -1, 9, 100, 0}) == 5);
}

TEST_CASE("stats median of an even count is the mean of the two middle values", "[median]") {
  CHECK(cmax::Median({4, 1, 2, 3}) == 2.5);
  CHECK(cmax::Median({10, 20}) == 15);
  CHECK(cmax::Median({-3, 1, 1, 8}) == 1);
}

TEST_CASE("stats median interpolates between the two middle values", "[median]") {
  // The definition reports/RULES.md documents (linear interpolation, numpy's
  // default): a + (b - a) / 2. The suites' former copies computed (a + b) / 2,
  // which for these two values is 0.39999999999999997, one ulp below.
  CHECK(cmax::Median({0.7, 0.1}) == 0.4);
  CHECK((0.1 + 0.7) / 2 != 0.4);  // the former answer, to show the change is real
}

TEST_CASE("stats median of nothing is 0", "[median]") {
  CHECK(cmax::Median({}) == 0);
  CHECK(cmax::SortedQuantile({}, 0.5) == 0);
}

TEST_CASE("stats median leaves NaN out", "[median]") {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  CHECK(cmax::Median({nan, 3, 1, nan, 2}) == 2);
  CHECK(cmax::Median({1, nan, 4}) == 2.5);
  CHECK(cmax::Median({nan, nan}) == 0);
}

TEST_CASE("stats median next to an infinite value is the middle value", "[median]") {
  const double inf = std::numeric_limits<double>::infinity();
  CHECK(cmax::Median({inf, 1, 2}) == 2);  // not 2 + (inf - 2) * 0, which is NaN
  CHECK(cmax::Median({1, inf}) == inf);
  CHECK(cmax::SortedQuantile({1, 2, inf}, 0.5) == 2);
}

TEST_CASE("stats sorted quantile interpolates between order statistics", "[median]") {
  const std::vector<double> sorted = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  CHECK(cmax::SortedQuantile(sorted, 0) == 1);
  CHECK(cmax::SortedQuantile(sorted, 0.25) == 3);
  CHECK(cmax::SortedQuantile(sorted, 1) == 9);
  // numpy.quantile([10, 20, 30, 40], 0.25) == 17.5
  CHECK(cmax::SortedQuantile({10, 20, 30, 40}, 0.25) == Approx(17.5));
}
