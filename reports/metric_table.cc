#include "reports/metric_table.h"

namespace cmax::reports {

const std::vector<FleetMetric>& FleetMetrics() {
  // Grouping keys are the labels the suites put on these metrics; values
  // with different group labels measure different things.
  static const std::vector<FleetMetric> table = {
      {"gemm_tflops", "Compute", Better::kHigher, {"dtype", "m", "n", "k"}},
      {"memory_bandwidth_gbps", "Compute", Better::kHigher, {"test"}},
      {"busbw_gbps", "Networking", Better::kHigher, {"op", "size_bytes"}},
      // rtt_ms (connectivity) is judged per node pair by
      // judges/connectivity_judge.cc, which blames the node behind the slow
      // pairs rather than the pair's source.
      {"storage_bandwidth_mbps", "Storage", Better::kHigher, {"pattern"}},
      {"burnin_tflops_mean", "Reliability", Better::kHigher, {}},
  };
  return table;
}

const FleetMetric* FindFleetMetric(const std::string& metric) {
  for (const auto& m : FleetMetrics()) {
    if (m.metric == metric) return &m;
  }
  return nullptr;
}

}  // namespace cmax::reports
