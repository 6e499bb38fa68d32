#include "reports/metric_table.h"

#include "common/suite_declaration.h"
#include "reports/judge_util.h"

namespace cmax::reports {

std::string BetterName(::cmax::MetricBetter better) {
  switch (better) {
    case ::cmax::MetricBetter::kHigher:
      return BetterName(Better::kHigher);
    case ::cmax::MetricBetter::kLower:
      return BetterName(Better::kLower);
    case ::cmax::MetricBetter::kNeither:
      break;
  }
  return "";
}

const std::vector<FleetMetric>& FleetMetrics() {
  // The metrics the suites declare as compared across the fleet
  // (MetricSpec::fleet, in each suite's <suite>_declaration.cc), in catalog
  // order, each feeding its suite's category. Metrics a suite's own judge
  // compares (busbw_gbps, rtt_ms, the rdma figures) are not here: their
  // declarations say which judge and why.
  static const std::vector<FleetMetric>* table = [] {
    auto* t = new std::vector<FleetMetric>;
    for (const SuiteInfo& suite : SuiteCatalog()) {
      for (const MetricSpec& m : suite.metrics) {
        if (!m.fleet) continue;
        t->push_back({m.name, CanonicalCategory(suite.category),
                      // Without a declared direction, lower is taken as better
                      // (as before); the declarations test requires one.
                      BetterFromName(BetterName(m.better)).value_or(Better::kLower),
                      m.fleet_group_keys, m.fleet_min_margin, m.fleet_totals_only});
      }
    }
    return t;
  }();
  return *table;
}

const FleetMetric* FindFleetMetric(const std::string& metric) {
  for (const auto& m : FleetMetrics()) {
    if (m.metric == metric) return &m;
  }
  return nullptr;
}

double OutlierMargin(const std::string& metric) {
  for (const SuiteInfo& suite : SuiteCatalog()) {
    if (const MetricSpec* m = FindSuiteMetric(suite, metric)) return m->fleet_min_margin;
  }
  return MetricSpec{}.fleet_min_margin;
}

}  // namespace cmax::reports
