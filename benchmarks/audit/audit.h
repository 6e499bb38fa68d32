// The audit suite as a library: collect versions, run every check, and
// report. `cmax-bench audit` (audit_main.cc) wires flags to this.
#ifndef CMAX_BENCHMARKS_AUDIT_AUDIT_H_
#define CMAX_BENCHMARKS_AUDIT_AUDIT_H_

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
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

// Fills each check's advisory_url, upgrade_url and component_name from the
// table (the advisory's entry, else the component's upgrade page).
void AttachLinks(const AdvisoryDb& db, std::vector<CheckResult>& checks);

// How the human output writes URLs: OSC 8 terminal hyperlinks, plain text,
// or auto (OSC 8 on a terminal whose TERM is set and not "dumb").
enum class LinkMode { kAuto, kOsc8, kPlain };

// "auto", "osc8" or "plain" (empty: auto); INVALID_ARGUMENT otherwise.
absl::StatusOr<LinkMode> ParseLinkMode(const std::string& text);

// Whether to write OSC 8: osc8 yes, plain no, auto when `is_tty` and `term`
// (TERM, nullptr when unset) is neither empty nor "dumb".
bool UseHyperlinks(LinkMode mode, bool is_tty, const char* term);

struct HumanOptions {
  // 0: status, found, required and the verdict; 1 (-v) adds the advisory
  // (id, severity, CVEs) and its links; 2 (-vv) why it matters and the
  // evidence; 3 (-vvv) how to fix and the upgrade page.
  int verbosity = 0;
  bool hyperlinks = false;  // URLs as OSC 8 hyperlinks
  bool color = false;       // statuses in ANSI colours
};

// Human output: versions, then the checks as HumanOptions says. Where the
// table gives no description or remediation, "why it matters" and "how to
// fix" are said from what it holds (severity, CVEs, floor, upgrade page).
void WriteHuman(const AuditReport& report, const HumanOptions& options, FILE* out);

// Records: a component_version Measurement per component (value 1; labels
// component, version, source, ...) and a Finding per check.
void WriteRecords(const AuditReport& report, RecordWriter& writer);

}  // namespace cmax::audit

#endif  // CMAX_BENCHMARKS_AUDIT_AUDIT_H_
