#include "benchmarks/health/health_result.h"

namespace cmax::health {

v1::Finding& HealthResult::Find(const std::string& check_id, v1::Severity severity,
                                const std::string& category, const std::string& subject,
                                const std::string& title, const std::string& detail,
                                const std::string& action) {
  v1::Finding& f = findings.emplace_back();
  f.set_check_id(check_id);
  f.set_severity(severity);
  f.set_category(category);
  f.set_subject(subject);
  f.set_title(title);
  f.set_detail(detail);
  f.set_action(action);
  f.set_suite("health");
  return f;
}

void HealthResult::Measure(const std::string& metric, double value, const std::string& unit,
                           const std::map<std::string, std::string>& labels) {
  v1::Measurement& m = measurements.emplace_back();
  m.set_suite("health");
  m.set_metric(metric);
  m.set_value(value);
  m.set_unit(unit);
  for (const auto& [k, v] : labels) (*m.mutable_labels())[k] = v;
}

void HealthResult::Log(const std::string& level, const std::string& message) {
  logs.push_back(level + ": " + message);
}

std::vector<const v1::Finding*> HealthResult::FindingsWithId(const std::string& check_id) const {
  std::vector<const v1::Finding*> out;
  for (const auto& f : findings) {
    if (f.check_id() == check_id) out.push_back(&f);
  }
  return out;
}

v1::Severity HealthResult::WorstSeverity() const {
  v1::Severity worst = v1::SEVERITY_UNSPECIFIED;
  for (const auto& f : findings) {
    if (f.not_measured()) continue;  // a check that could not run has no outcome
    if (f.severity() > worst) worst = f.severity();
  }
  return worst;
}

}  // namespace cmax::health
