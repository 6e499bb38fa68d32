// Expectations judge: the plan's metric floors (expect.metrics) against the
// Measurements (RULES.md, rule 3). A key is "metric" or "metric.qualifier";
// the qualifier matches any label value (gemm_tflops.bf16: metric
// gemm_tflops with a label whose value is "bf16").
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/suite_catalog.h"
#include "reports/judge_util.h"
#include "reports/metric_table.h"
#include "reports/run_data.h"

namespace cmax::reports {
namespace {

struct Key {
  std::string metric;
  std::string qualifier;  // empty: any labels
};

bool HasLabelValue(const v1::Measurement& m, const std::string& value) {
  for (const auto& [k, v] : m.labels()) {
    if (v == value) return true;
  }
  return false;
}

// The exact metric name wins; otherwise split at the first '.'.
Key ParseKey(const std::string& key, const RunData& data) {
  for (const auto& rec : data.records) {
    if (rec.record().has_measurement() && rec.record().measurement().metric() == key) {
      return {key, ""};
    }
  }
  size_t dot = key.find('.');
  if (dot == std::string::npos) return {key, ""};
  return {key.substr(0, dot), key.substr(dot + 1)};
}

// The suite's catalog category; for a suite the catalog does not know, the
// fleet metric table's category, else Reliability.
std::string CategoryFor(const std::string& suite, const std::string& metric) {
  if (FindSuite(suite) != nullptr) return SuiteCategory(suite);
  if (const FleetMetric* fm = FindFleetMetric(metric)) return fm->category;
  return "Reliability";
}

std::string LabelsText(const v1::Measurement& m) {
  std::map<std::string, std::string> sorted(m.labels().begin(), m.labels().end());
  return absl::StrJoin(sorted, ", ", absl::PairFormatter("="));
}

}  // namespace

void ExpectationsJudge(const RunData& data, std::vector<v1::RuleResult>* out) {
  std::map<std::string, double> floors(data.plan.expect().metrics().begin(),
                                       data.plan.expect().metrics().end());
  for (const auto& [key, minimum] : floors) {
    // Collective bandwidth floors apply at a run's largest size, per group
    // of nodes: collective_judge.cc judges them.
    if (key.rfind("busbw_gbps.", 0) == 0 || key == "busbw_gbps") continue;
    const Key k = ParseKey(key, data);
    const std::string rule_id = absl::StrCat("expect.metrics.", key);
    size_t matched = 0, passed = 0;
    double lowest = 0;
    std::string lowest_subject, unit, category;
    for (const auto& rec : data.records) {
      if (!rec.record().has_measurement()) continue;
      const v1::Measurement& m = rec.record().measurement();
      if (m.metric() != k.metric) continue;
      if (!k.qualifier.empty() && !HasLabelValue(m, k.qualifier)) continue;
      const std::string suite = m.suite().empty() ? rec.suite() : m.suite();
      const std::string node = RecordNode(rec);
      const std::string subject = DescribeSubject(node, m);
      category = CategoryFor(suite, m.metric());
      unit = m.unit();
      if (matched == 0 || m.value() < lowest) {
        lowest = m.value();
        lowest_subject = subject;
      }
      ++matched;
      if (m.value() >= minimum) {
        ++passed;
        continue;
      }
      v1::RuleResult r;
      r.set_rule_id(rule_id);
      r.set_category(category);
      r.set_outcome("fail");
      r.set_node(node);
      r.set_subject(subject);
      r.set_message(absl::StrCat(subject, ": ", m.metric(), " ", FormatValue(m.value(), m.unit()),
                                 " is below the plan's minimum ", FormatValue(minimum, m.unit()),
                                 " (", key, ")"));
      r.add_evidence(absl::StrCat("measured ", FormatValue(m.value(), m.unit()), " by ", suite));
      r.add_evidence(absl::StrCat("plan ", data.plan.name(), " expects ", key, " >= ",
                                  FormatNumber(minimum)));
      if (!m.labels().empty()) r.add_evidence(absl::StrCat("labels: ", LabelsText(m)));
      r.set_value(m.value());
      r.set_expected(minimum);
      r.set_unit(m.unit());
      r.set_action("rerun the suite on this node; if it stays low, check clocks, power and "
                   "thermal limits and the driver");
      out->push_back(std::move(r));
    }
    v1::RuleResult r;
    r.set_rule_id(rule_id);
    r.set_expected(minimum);
    r.set_subject(key);
    if (matched == 0) {
      const FleetMetric* fm = FindFleetMetric(k.metric);
      r.set_category(fm != nullptr ? fm->category : "Reliability");
      r.set_outcome("not_measured");
      r.set_message(absl::StrCat("the plan expects ", key, " >= ", FormatNumber(minimum),
                                 " but no suite measured it"));
      out->push_back(std::move(r));
      continue;
    }
    if (passed == 0) continue;  // every value failed and was named above
    r.set_category(category);
    r.set_outcome("pass");
    r.set_unit(unit);
    r.set_value(lowest);
    r.set_message(absl::StrCat(key, " >= ", FormatValue(minimum, unit), ": ", passed, " of ",
                               matched, " measurements at or above (lowest ",
                               FormatValue(lowest, unit), " on ", lowest_subject, ")"));
    out->push_back(std::move(r));
  }
}

}  // namespace cmax::reports
