// The audit suite as a library: collect versions, run every check, and
// report. `cmax-bench audit` (audit_main.cc) wires flags to this.
#ifndef CMAX_BENCHMARKS_AUDIT_AUDIT_H_
#define CMAX_BENCHMARKS_AUDIT_AUDIT_H_

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "benchmarks/audit/advisories.h"
#include "benchmarks/audit/check_result.h"
#include "benchmarks/audit/collectors.h"
#include "benchmarks/audit/ib_isolation.h"
#include "benchmarks/audit/tenant_isolation.h"
#include "common/record_io.h"

namespace cmax::audit {

struct AuditOptions {
  std::string root = "/";
  Tenancy tenancy = Tenancy::kUnspecified;
  std::vector<HostPort> forbidden;
  std::string today_ym;  // "YYYY-MM"; empty: the current month (UTC)
  std::string today;     // "YYYY-MM-DD" for the table's age and grace; empty: today (UTC)
  int grace_days = 0;            // see JudgeOptions (version_checks.h)
  int max_table_age_days = 30;
  std::chrono::milliseconds command_timeout{10000};
  std::chrono::milliseconds connect_timeout{1000};
};

struct AuditReport {
  std::string root;
  std::string distro;
  std::string advisories_path;
  std::string advisories_generated;  // the table's `generated` date, or empty
  std::string advisories_error;      // why the table is unusable, or empty
  std::vector<ComponentVersion> versions;
  KernelInfo kernel;
  std::vector<CheckResult> checks;
};

// Runs every collector and check. Never fails: what cannot be measured is
// UNKNOWN or SKIPPED in the report. A `db` with `error` set (the table could
// not be loaded) leaves every version check UNKNOWN with that reason.
AuditReport RunAuditChecks(const AuditOptions& options, const AdvisoryDb& db);

// 0 when nothing failed, 1 when any check is FAIL or CRITICAL.
int ExitCodeFor(const AuditReport& report);

// Human output: versions, then one status line per check; verbosity 1 adds
// advisory ids and links, 2 the description and remediation. `hyperlinks`
// writes links as OSC 8 terminal hyperlinks.
void WriteHuman(const AuditReport& report, int verbosity, bool hyperlinks, FILE* out);

// Records: a component_version Measurement per component (value 1; labels
// component, version, source, ...) and a Finding per check.
void WriteRecords(const AuditReport& report, RecordWriter& writer);

}  // namespace cmax::audit

#endif  // CMAX_BENCHMARKS_AUDIT_AUDIT_H_
