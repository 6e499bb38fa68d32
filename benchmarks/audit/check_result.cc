#include "benchmarks/audit/check_result.h"

namespace cmax::audit {

std::string StatusName(CheckStatus status) {
  switch (status) {
    case CheckStatus::kPass: return "PASS";
    case CheckStatus::kInfo: return "INFO";
    case CheckStatus::kWarn: return "WARN";
    case CheckStatus::kFail: return "FAIL";
    case CheckStatus::kCritical: return "CRITICAL";
    case CheckStatus::kUnknown: return "UNKNOWN";
    case CheckStatus::kSkipped: return "SKIPPED";
  }
  return "UNKNOWN";
}

v1::Severity FindingSeverity(const CheckResult& result) {
  switch (result.status) {
    case CheckStatus::kPass:
    case CheckStatus::kInfo:
    case CheckStatus::kSkipped:
      return v1::SEVERITY_INFO;
    case CheckStatus::kWarn:
    case CheckStatus::kUnknown:
      return v1::SEVERITY_WARN;
    case CheckStatus::kFail:
      return result.advisory_severity == "critical" ? v1::SEVERITY_CRITICAL : v1::SEVERITY_FAIL;
    case CheckStatus::kCritical:
      return v1::SEVERITY_CRITICAL;
  }
  return v1::SEVERITY_WARN;
}

bool IsNotMeasured(const CheckResult& result) {
  return result.status == CheckStatus::kSkipped || result.not_measured;
}

bool IsFailure(CheckStatus status) {
  return status == CheckStatus::kFail || status == CheckStatus::kCritical;
}

}  // namespace cmax::audit
