#include "common/median.h"

#include <algorithm>
#include <cmath>
#include <cstddef>

namespace cmax {

double SortedQuantile(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) return 0;
  double pos = q * static_cast<double>(sorted.size() - 1);
  size_t lo = static_cast<size_t>(std::floor(pos));
  size_t hi = std::min(lo + 1, sorted.size() - 1);
  double frac = pos - static_cast<double>(lo);
  // On an order statistic, that value itself: the interpolation would give
  // NaN next to an infinite neighbour (inf * 0).
  if (frac == 0) return sorted[lo];
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

double Median(std::vector<double> values) {
  // std::sort needs a strict weak order, which NaN breaks.
  values.erase(std::remove_if(values.begin(), values.end(), [](double v) { return std::isnan(v); }),
               values.end());
  std::sort(values.begin(), values.end());
  return SortedQuantile(values, 0.5);
}

}  // namespace cmax
