// What the health checks produce: findings, measurements and log lines, kept
// in memory so the checks are testable without a RecordWriter. RunHealth
// writes them out at the end.
#ifndef CMAX_BENCHMARKS_HEALTH_HEALTH_RESULT_H_
#define CMAX_BENCHMARKS_HEALTH_HEALTH_RESULT_H_

#include <map>
#include <string>
#include <vector>

#include "cmax/v1/record.pb.h"

namespace cmax::health {

struct HealthResult {
  std::vector<v1::Finding> findings;
  std::vector<v1::Measurement> measurements;
  std::vector<std::string> logs;  // "level: message"

  // Adds a finding; returns it for evidence/links to be appended.
  v1::Finding& Find(const std::string& check_id, v1::Severity severity,
                    const std::string& category, const std::string& subject,
                    const std::string& title, const std::string& detail,
                    const std::string& action);
  void Measure(const std::string& metric, double value, const std::string& unit,
               const std::map<std::string, std::string>& labels);
  void Log(const std::string& level, const std::string& message);

  // Findings with this check id (tests and the human table).
  std::vector<const v1::Finding*> FindingsWithId(const std::string& check_id) const;
  // Highest severity among the findings with an outcome (not_measured ones,
  // checks that could not run, excluded), SEVERITY_UNSPECIFIED when none.
  v1::Severity WorstSeverity() const;
};

}  // namespace cmax::health

#endif  // CMAX_BENCHMARKS_HEALTH_HEALTH_RESULT_H_
