// One audit check's outcome, shared by every check and by the reporters.
#ifndef CMAX_BENCHMARKS_AUDIT_CHECK_RESULT_H_
#define CMAX_BENCHMARKS_AUDIT_CHECK_RESULT_H_

#include <string>
#include <vector>

#include "cmax/v1/record.pb.h"

namespace cmax::audit {

// PASS, INFO (a fact, no verdict), WARN, FAIL, CRITICAL, UNKNOWN (could not
// tell: never a pass), SKIPPED (does not apply: component not installed, no
// such port; written as not measured).
enum class CheckStatus { kPass, kInfo, kWarn, kFail, kCritical, kUnknown, kSkipped };

std::string StatusName(CheckStatus status);  // "PASS", "WARN", ...

struct CheckResult {
  std::string check_id;   // "audit.advisory.NVIDIA-5659", "audit.ib.pkey"
  std::string category;   // "security" or "lifecycle"
  CheckStatus status = CheckStatus::kUnknown;
  std::string subject;    // "component:runc", "port:mlx5_0/1", "node"
  std::string component;  // advisory-table component id, when about one
  std::string title;      // short: "runc: GHSA-xr7r-f8xq-vfvv (CVE-2024-21626)"
  std::string found;      // "1.1.11 [upstream binary: /usr/sbin/runc --version]"
  std::string required;   // ">= 1.1.12"
  std::string why;        // one or two sentences
  std::string advisory_id;
  std::string advisory_severity;  // low..critical, for advisories
  std::vector<std::string> cves;
  std::vector<std::string> links;   // advisory first, then references, upgrade
  // Set from the table after the checks ran (AttachLinks, audit.h): the
  // advisory's own page, the component's upgrade page and display name.
  std::string advisory_url;
  std::string upgrade_url;
  std::string component_name;
  std::string description;
  std::string remediation;          // what to do (Finding.action)
  std::vector<std::string> evidence;
  // The check could not run here (its tool is missing or was refused, its
  // input unreadable): written with Finding.not_measured, so the scorecard
  // counts it as "not measured", never as a pass or a warning. SKIPPED
  // results are always written so. An UNKNOWN whose input was read but does
  // not settle the question (a version missing from the advisory table, an
  // installed component whose version cannot be parsed) stays a warning.
  bool not_measured = false;
};

// True when the result's Finding carries not_measured: SKIPPED, or a check
// marked not_measured.
bool IsNotMeasured(const CheckResult& result);

// The Finding severity of a result: PASS/INFO/SKIPPED -> info, WARN and
// UNKNOWN -> warn, FAIL -> fail (critical for a failed advisory rated
// critical), CRITICAL -> critical. With IsNotMeasured the Finding also
// carries not_measured and the scorecard ignores the severity.
v1::Severity FindingSeverity(const CheckResult& result);

// True for FAIL and CRITICAL (the suite then exits 1).
bool IsFailure(CheckStatus status);

}  // namespace cmax::audit

#endif  // CMAX_BENCHMARKS_AUDIT_CHECK_RESULT_H_
