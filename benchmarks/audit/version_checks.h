// Checks on component versions: each installed component against its
// advisories, the NVIDIA driver branch against the branch table, the running
// kernel against the newest installed one and a pending reboot, and NIC
// firmware uniformity within the node.
#ifndef CMAX_BENCHMARKS_AUDIT_VERSION_CHECKS_H_
#define CMAX_BENCHMARKS_AUDIT_VERSION_CHECKS_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/time/civil_time.h"
#include "benchmarks/audit/advisories.h"
#include "benchmarks/audit/check_result.h"
#include "benchmarks/audit/collectors.h"

namespace cmax::audit {

// How one version stands against one advisory.
struct AdvisoryVerdict {
  enum Kind { kFixed, kVulnerable, kNotAffected, kUnknown } kind = kUnknown;
  std::string compared;  // the version compared (a package's upstream base, ...)
  std::string required;  // ">= 1.1.12", ">= 1.1.5+ds1-1+deb12u1 (debian/bookworm package)"
  std::string why;
};

// A distribution package with a fixed version recorded for its distribution
// is compared with that version (debian or rpm ordering). A distribution
// package without one is compared by its upstream base: at or above
// upstream's fix is fixed, below is unknown (the distribution may have
// backported the fix). Upstream binaries and vendor packages are compared
// with upstream's fixed versions, branch by branch.
AdvisoryVerdict EvaluateAdvisory(const Advisory& advisory, const ComponentInfo& component,
                                 const ComponentVersion& version);

// How misses are judged in time.
struct JudgeOptions {
  // Today (UTC). Without it no grace period applies and the table's age is
  // not judged.
  std::optional<absl::CivilDay> today;
  // Days after an advisory's publication during which a miss is a WARN
  // (saying when the grace ends), not a FAIL. 0: no grace.
  int grace_days = 0;
  // A table generated longer ago than this is stale (a WARN).
  int max_table_age_days = 30;
};

// One result per (installed component, advisory); one SKIPPED result per
// component with advisories that is not installed; one UNKNOWN result per
// installed component whose version could not be read, whose table has no
// advisory for it (not measured), or when the table itself is unusable
// (db.error). A miss of a critical or high advisory FAILs, of a medium or low
// one WARNs; within the grace period after publication any miss WARNs.
std::vector<CheckResult> CheckAdvisories(const std::vector<ComponentVersion>& versions,
                                         const AdvisoryDb& db, const JudgeOptions& options = {});

// The table's own date: INFO with the date when it is at most
// max_table_age_days old; WARN when older, undated, or when today is unknown
// is never claimed fresh (UNKNOWN). Category security; never a PASS.
CheckResult CheckTableAge(const AdvisoryDb& db, const JudgeOptions& options);

// The driver's branch against the table. `today_ym` is "YYYY-MM"; a branch
// past its end-of-life month is end of life. Supported: PASS; end of life:
// WARN, or FAIL when a driver advisory's fixes exist only on other branches
// and this driver is below them; not in the table: UNKNOWN; no driver: SKIPPED.
CheckResult CheckDriverBranch(const ComponentVersion& driver, const AdvisoryDb& db,
                              const std::string& today_ym);

// The running kernel against the table's kernel advisories, by the dpkg
// version of its linux-image package and the fixed package recorded for
// `distro` (kernel advisories list distribution fixes only). Running a fixed
// package: PASS. Not running it while the newest installed kernel is fixed
// (a reboot pending): judged as a miss (FAIL for critical/high), saying so.
// Package version unknown or no fix recorded for the distribution: UNKNOWN.
std::vector<CheckResult> CheckKernelAdvisories(const KernelInfo& kernel, const std::string& distro,
                                               const AdvisoryDb& db, const JudgeOptions& options);

// Running kernel vs. the newest installed, and /var/run/reboot-required.
std::vector<CheckResult> CheckKernel(const KernelInfo& kernel);

// Fabric Manager against the driver: NVIDIA ships them as one release and
// requires the same version (kFabricManagerGuide; Sidero's Talos guide says
// it in so many words: kFabricManagerDriverMatch). Same version: PASS;
// different: FAIL; either unreadable: UNKNOWN; Fabric Manager not installed:
// no result.
inline constexpr char kFabricManagerGuide[] =
    "https://docs.nvidia.com/datacenter/tesla/fabric-manager-user-guide/index.html";
inline constexpr char kFabricManagerDriverMatch[] =
    "https://www.talos.dev/v1.10/talos-guides/configuration/nvidia-fabricmanager";
CheckResult JudgeFabricManager(const ComponentVersion& fabric_manager,
                               const ComponentVersion* driver);
std::vector<CheckResult> CheckFabricManager(const std::vector<ComponentVersion>& versions);

// WARN when NICs of one firmware family run different versions on this node.
std::vector<CheckResult> CheckFirmwareUniform(const std::vector<ComponentVersion>& versions);

}  // namespace cmax::audit

#endif  // CMAX_BENCHMARKS_AUDIT_VERSION_CHECKS_H_
