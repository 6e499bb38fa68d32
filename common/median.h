// The one median (and quantile) of cmax: the suites' timed iterations
// (gemm, memory), the connectivity suite's ping-pong RTT, the judges and the
// fleet statistics of the scorecard (reports/stats.h) all use it, so a
// figure and the judge's view of it cannot disagree.
//
// Definition (the one reports/RULES.md documents for the fleet, "quartiles
// Q1, Q3" through reports/stats.h): linear interpolation between order
// statistics, numpy's default ("linear", Hyndman & Fan type 7). For the
// median this is the middle value of an odd count and the mean of the two
// middle values of an even count.
#ifndef CMAX_COMMON_MEDIAN_H_
#define CMAX_COMMON_MEDIAN_H_

#include <vector>

namespace cmax {

// The q-quantile (q in [0, 1]) of values already sorted ascending, by linear
// interpolation between the order statistics around q * (n - 1). 0 when
// `sorted` is empty. The caller sorts (and leaves out NaN, which has no place
// in an order).
double SortedQuantile(const std::vector<double>& sorted, double q);

// The median of `values` in any order. NaN values are left out; 0 when no
// value is left (empty input, or only NaN), as every copy this replaces
// answered for an empty input.
double Median(std::vector<double> values);

}  // namespace cmax

#endif  // CMAX_COMMON_MEDIAN_H_
