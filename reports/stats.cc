#include "reports/stats.h"

#include <algorithm>
#include <cmath>

#include "common/median.h"

namespace cmax::reports {

std::string BetterName(Better better) { return better == Better::kHigher ? "higher" : "lower"; }

std::optional<Better> BetterFromName(std::string_view name) {
  if (name == "higher") return Better::kHigher;
  if (name == "lower") return Better::kLower;
  return std::nullopt;
}

FleetStats ComputeFleetStats(std::vector<double> values) {
  FleetStats s;
  s.n = values.size();
  if (values.empty()) return s;
  std::sort(values.begin(), values.end());
  s.min = values.front();
  s.max = values.back();
  double sum = 0;
  for (double v : values) sum += v;
  s.mean = sum / static_cast<double>(s.n);
  double var = 0;
  for (double v : values) var += (v - s.mean) * (v - s.mean);
  s.stddev = s.n > 1 ? std::sqrt(var / static_cast<double>(s.n - 1)) : 0;
  // The one quantile (common/median.h): the fleet's median is the suites'.
  s.median = SortedQuantile(values, 0.5);
  s.q1 = SortedQuantile(values, 0.25);
  s.q3 = SortedQuantile(values, 0.75);
  s.iqr = s.q3 - s.q1;
  s.low_mild = s.q1 - 1.5 * s.iqr;
  s.low_extreme = s.q1 - 3 * s.iqr;
  s.high_mild = s.q3 + 1.5 * s.iqr;
  s.high_extreme = s.q3 + 3 * s.iqr;
  return s;
}

std::vector<Outlier> FindOutliers(const std::vector<Keyed>& items, Better better, size_t min_n,
                                  double min_relative_gap) {
  std::vector<Outlier> out;
  if (items.size() < min_n) return out;
  std::vector<double> values;
  values.reserve(items.size());
  for (const auto& k : items) values.push_back(k.value);
  FleetStats s = ComputeFleetStats(values);
  for (const auto& k : items) {
    bool mild = better == Better::kHigher ? k.value < s.low_mild : k.value > s.high_mild;
    if (!mild) continue;
    double gap = s.median != 0 ? std::fabs(k.value - s.median) / std::fabs(s.median) : 1;
    if (gap < min_relative_gap) continue;
    Outlier o;
    o.item = k;
    o.extreme = better == Better::kHigher ? k.value < s.low_extreme : k.value > s.high_extreme;
    o.relative_to_median = s.median != 0 ? k.value / s.median : 0;
    out.push_back(o);
  }
  return out;
}

}  // namespace cmax::reports
