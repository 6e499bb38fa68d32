// Metrics judged against the fleet (fleet_judge.cc), from the suites'
// declarations (MetricSpec::fleet): which category each
// feeds, which direction is better, and which labels define comparable
// groups (a 4 KiB and a 16 GiB all_reduce are never compared).
#ifndef CMAX_REPORTS_METRIC_TABLE_H_
#define CMAX_REPORTS_METRIC_TABLE_H_

#include <string>
#include <vector>

#include "reports/stats.h"

namespace cmax {
enum class MetricBetter;  // common/suite_catalog.h
}  // namespace cmax

namespace cmax::reports {

// The one reading of a declared direction (MetricSpec::better) in reports/:
// "higher", "lower", or "" for kNeither (no side is better).
std::string BetterName(::cmax::MetricBetter better);

struct FleetMetric {
  std::string metric;                   // Measurement.metric
  std::string category;                 // scorecard category
  Better better;
  // Labels that must match to compare. For "job" and "gpu" only the kind
  // matters: "all" (a total over jobs or GPUs) or one of them (any other
  // value), so per-job figures are compared with per-job figures of every
  // node, totals with totals.
  std::vector<std::string> group_keys;
  // MetricSpec::fleet_min_margin: the least relative distance from the
  // median that makes an outlier.
  double min_margin = 0.03;
  // MetricSpec::fleet_totals_only: only "all" figures are compared.
  bool totals_only = false;
};

// Every metric compared across the fleet, in table order.
const std::vector<FleetMetric>& FleetMetrics();
// nullptr when the metric is not in the table.
const FleetMetric* FindFleetMetric(const std::string& metric);

// The least relative distance from the median that makes `metric` an
// outlier in any judge that compares peers (the fleet judge, storage
// stragglers, rdma links, collective pairs): its declared
// MetricSpec::fleet_min_margin, or 3% for a metric no suite declares.
double OutlierMargin(const std::string& metric);

}  // namespace cmax::reports

#endif  // CMAX_REPORTS_METRIC_TABLE_H_
