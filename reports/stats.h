// Fleet statistics for the rule engine: median, quartiles and Tukey fences
// (1.5x IQR mild, 3x IQR extreme), as SuperBench and DCGM-style fleet
// baselines use them (see shared REFERENCES.md, "Thresholds used by peers").
#ifndef CMAX_REPORTS_STATS_H_
#define CMAX_REPORTS_STATS_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cmax::reports {

struct FleetStats {
  size_t n = 0;
  double min = 0, max = 0, mean = 0, stddev = 0;
  double median = 0, q1 = 0, q3 = 0, iqr = 0;
  double low_mild = 0, low_extreme = 0;    // q1 - 1.5 IQR, q1 - 3 IQR
  double high_mild = 0, high_extreme = 0;  // q3 + 1.5 IQR, q3 + 3 IQR
};

// Quartiles by linear interpolation between order statistics (the same as
// numpy's default; cmax::SortedQuantile, common/median.h, so the median is
// cmax::Median's). Empty input gives n == 0 and zeros.
FleetStats ComputeFleetStats(std::vector<double> values);

// One value of one subject (a GPU, a node, a pair) for outlier detection.
struct Keyed {
  std::string subject;  // e.g. "node-3/gpu:5 (GPU-1234...)"
  std::string node;     // the node to blame, empty for none
  double value = 0;
};

// The side of the fence FindOutliers looks at. Its one word form, as the
// scorecard writes a direction (Chart.better, CompareMetric.better), is
// BetterName / BetterFromName; a declared MetricSpec::better is read only by
// BetterName(MetricBetter) (metric_table.h).
enum class Better { kHigher, kLower };

// "higher" or "lower".
std::string BetterName(Better better);
// kHigher for "higher", kLower for "lower"; nullopt for "" (no known
// direction: both sides are outliers) or any other word.
std::optional<Better> BetterFromName(std::string_view name);

struct Outlier {
  Keyed item;
  bool extreme = false;           // beyond the 3x IQR fence
  double relative_to_median = 0;  // value / median
};

// Subjects on the bad side of the mild fence. With fewer than `min_n` values
// nothing is named (too few peers). Because a tight fleet has a tiny IQR,
// a value is only named when it is also at least `min_relative_gap` away from
// the median (0.03 = 3%), so noise in a uniform fleet is not a defect.
std::vector<Outlier> FindOutliers(const std::vector<Keyed>& items, Better better,
                                  size_t min_n = 4, double min_relative_gap = 0.03);

}  // namespace cmax::reports

#endif  // CMAX_REPORTS_STATS_H_
