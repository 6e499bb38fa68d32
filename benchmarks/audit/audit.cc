#include "benchmarks/audit/audit.h"

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "benchmarks/audit/version_checks.h"

namespace cmax::audit {

void AttachLinks(const AdvisoryDb& db, std::vector<CheckResult>& checks) {
  for (auto& c : checks) {
    auto comp = db.components.find(c.component);
    if (comp != db.components.end()) {
      c.component_name = comp->second.name;
      c.upgrade_url = comp->second.upgrade_url;
    }
    if (c.advisory_id.empty()) continue;
    for (const auto& a : db.advisories) {
      if (a.id != c.advisory_id || a.component != c.component) continue;
      c.advisory_url = a.url;
      if (!a.upgrade_url.empty()) c.upgrade_url = a.upgrade_url;
      break;
    }
  }
}

AuditReport RunAuditChecks(const AuditOptions& options, const AdvisoryDb& db) {
  Sysroot root(options.root);
  CommandRunner commands(root, options.command_timeout);
  Collector collector(root, commands);

  AuditReport report;
  report.root = root.root();
  report.distro = collector.distro();
  report.advisories_path = db.path;
  report.advisories_generated = db.generated;
  report.advisories_error = db.error;
  report.versions = collector.CollectAll();
  report.kernel = collector.Kernel();

  std::string today = options.today_ym.empty()
                          ? absl::FormatTime("%Y-%m", absl::Now(), absl::UTCTimeZone())
                          : options.today_ym;
  if (!db.error.empty()) {
    // The table is unusable: only the version checks, each UNKNOWN with the
    // reason (the audit as a whole could not run; the driver's branch is
    // among them as audit.version.driver).
    for (auto& r : CheckAdvisories(report.versions, db)) report.checks.push_back(std::move(r));
    AttachLinks(db, report.checks);
    return report;
  }
  for (const auto& v : report.versions) {
    if (v.component == "driver") {
      report.checks.push_back(CheckDriverBranch(v, db, today));
      break;
    }
  }
  JudgeOptions judge;
  judge.grace_days = options.grace_days;
  judge.max_table_age_days = options.max_table_age_days;
  absl::CivilDay day;
  if (options.today.empty()) {
    judge.today = absl::ToCivilDay(absl::Now(), absl::UTCTimeZone());
  } else if (absl::ParseCivilTime(options.today, &day)) {
    judge.today = day;
  }
  if (db.error.empty()) report.checks.push_back(CheckTableAge(db, judge));
  for (auto& r : CheckAdvisories(report.versions, db, judge)) {
    report.checks.push_back(std::move(r));
  }
  for (auto& r : CheckKernelAdvisories(report.kernel, report.distro, db, judge)) {
    report.checks.push_back(std::move(r));
  }
  for (auto& r : CheckKernel(report.kernel)) report.checks.push_back(std::move(r));
  for (auto& r : CheckFirmwareUniform(report.versions)) report.checks.push_back(std::move(r));
  for (auto& r : CheckFabricManager(report.versions)) report.checks.push_back(std::move(r));
  for (auto& r : CheckInfiniband(root, options.tenancy, commands)) {
    report.checks.push_back(std::move(r));
  }
  for (auto& r : CheckForbiddenTargets(options.forbidden, options.connect_timeout)) {
    report.checks.push_back(std::move(r));
  }
  report.checks.push_back(CheckBmcDevice(root));
  report.checks.push_back(CheckNcclSystemEnv(root));
  AttachLinks(db, report.checks);
  return report;
}

int ExitCodeFor(const AuditReport& report) {
  for (const auto& c : report.checks) {
    if (IsFailure(c.status)) return 1;
  }
  return 0;
}

}  // namespace cmax::audit
