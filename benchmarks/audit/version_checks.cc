#include "benchmarks/audit/version_checks.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"

namespace cmax::audit {
namespace {

// The branch a fixed version belongs to, for ladders: "1.2" for semver and
// rpm, "570" for drivers, the train "39" for firmware (NVIDIA's firmware bulletins
// give one fix per train, for every family on it: "xx.39.8002"); "" where a
// scheme has no branches.
std::string BranchKey(VersionScheme scheme, const std::string& v) {
  switch (scheme) {
    case VersionScheme::kSemver: return MajorMinor(v);
    // MLNX_OFED "24.10-3.2.5.0": the release, "24.10" (the only component
    // with this scheme; distribution packages are compared apart).
    case VersionScheme::kRpm: return MajorMinor(v);
    case VersionScheme::kDriver: {
      auto b = DriverBranch(v);
      return b.ok() ? absl::StrCat(*b) : "";
    }
    case VersionScheme::kFirmware: {
      auto t = FirmwareTrain(v);
      return t.ok() ? t->substr(t->find('.') + 1) : "";
    }
    default: return "";
  }
}

// Orders versions across branches (a < b). Error when either does not parse.
absl::StatusOr<bool> Less(VersionScheme scheme, const std::string& a, const std::string& b) {
  if (scheme == VersionScheme::kDriver) {
    auto ba = DriverBranch(a);
    if (!ba.ok()) return ba.status();
    auto bb = DriverBranch(b);
    if (!bb.ok()) return bb.status();
    if (*ba != *bb) return *ba < *bb;
  }
  if (scheme == VersionScheme::kFirmware) {
    // Trains order by number, whatever the family (newer trains are newer).
    const std::string ta = BranchKey(scheme, a), tb = BranchKey(scheme, b);
    if (ta.empty()) return FirmwareTrain(a).status();
    if (tb.empty()) return FirmwareTrain(b).status();
    if (ta != tb) return CompareRpm(ta, tb) < 0;
  }
  auto c = CompareVersions(scheme, a, b);
  if (!c.ok()) return c.status();
  return *c < 0;
}

std::string SeriesName(VersionScheme scheme, const std::string& key) {
  if (scheme == VersionScheme::kDriver) return absl::StrCat("R", key);
  if (scheme == VersionScheme::kFirmware) return absl::StrCat("train ", key);
  return absl::StrCat("the ", key, " series");
}

// True when `v` lies in one of the advisory's affected ranges that the
// source marks "(no fix)" (">= 24.0.0 (no fix)", "<= 550.54.15 (no fix)");
// that range goes to `range`. Clauses are "op version" joined by ", ".
bool InUnfixedRange(const Advisory& a, VersionScheme scheme, const std::string& v,
                    std::string* range) {
  for (const auto& text : a.affected) {
    if (!absl::StrContains(text, "(no fix)")) continue;
    absl::string_view body = absl::StripSuffix(text, "(no fix)");
    bool holds = true;
    for (absl::string_view clause : absl::StrSplit(body, ',', absl::SkipWhitespace())) {
      clause = absl::StripAsciiWhitespace(clause);
      const size_t cut = clause.find_first_not_of("<>=");
      if (cut == 0 || cut == absl::string_view::npos) return false;
      const std::string op(clause.substr(0, cut));
      const std::string bound(absl::StripAsciiWhitespace(clause.substr(cut)));
      auto below = Less(scheme, v, bound);
      auto above = Less(scheme, bound, v);
      if (!below.ok() || !above.ok()) {
        holds = false;
        break;
      }
      if (op == "<") holds = holds && *below;
      else if (op == "<=") holds = holds && !*above;
      else if (op == ">=") holds = holds && !*below;
      else if (op == ">") holds = holds && *above;
      else holds = holds && !*below && !*above;
    }
    if (holds) {
      *range = text;
      return true;
    }
  }
  return false;
}

// Upstream ladder evaluation.
AdvisoryVerdict Ladder(const Advisory& a, VersionScheme scheme, const std::string& v) {
  AdvisoryVerdict out;
  out.compared = v;
  if (!a.introduced.empty()) {
    auto below = Less(scheme, v, a.introduced);
    if (!below.ok()) {
      out.why = std::string(below.status().message());
      return out;
    }
    if (*below) {
      out.kind = AdvisoryVerdict::kNotAffected;
      out.required = absl::StrCat("< ", a.introduced, " or >= ", absl::StrJoin(a.fixed, " / "));
      out.why = absl::StrCat(v, " predates the first affected version ", a.introduced);
      return out;
    }
  }
  const std::string key = BranchKey(scheme, v);
  for (const auto& f : a.fixed) {
    if (key.empty() || BranchKey(scheme, f) != key) continue;
    auto less = Less(scheme, v, f);
    if (!less.ok()) {
      out.why = std::string(less.status().message());
      return out;
    }
    out.required = absl::StrCat(">= ", f);
    out.kind = *less ? AdvisoryVerdict::kVulnerable : AdvisoryVerdict::kFixed;
    out.why = *less ? absl::StrCat(v, " is older than ", f, ", the fixed release of ",
                                   SeriesName(scheme, key))
                    : absl::StrCat(v, " includes the fix (", f, ")");
    return out;
  }
  // No fix on this branch: in a range the source says has no fix, vulnerable.
  std::string unfixed;
  if (InUnfixedRange(a, scheme, v, &unfixed)) {
    out.kind = AdvisoryVerdict::kVulnerable;
    out.required = absl::StrCat(">= ", absl::StrJoin(a.fixed, " / >= "));
    out.why = absl::StrCat(v, " is in the affected range ", unfixed,
                           ": move to a fixed release (", absl::StrJoin(a.fixed, ", "), ")");
    return out;
  }
  // Otherwise fixed only when newer than every listed fix.
  std::vector<std::string> newer;
  for (const auto& f : a.fixed) {
    auto less = Less(scheme, v, f);
    if (!less.ok()) {
      out.why = std::string(less.status().message());
      return out;
    }
    if (*less) newer.push_back(f);
  }
  out.required = absl::StrCat(">= ", absl::StrJoin(a.fixed, " / >= "));
  if (newer.empty()) {
    out.kind = AdvisoryVerdict::kFixed;
    out.why = absl::StrCat(v, " is newer than every fixed release (", absl::StrJoin(a.fixed, ", "),
                           ")");
  } else {
    out.kind = AdvisoryVerdict::kVulnerable;
    out.why = key.empty()
                  ? absl::StrCat(v, " is older than the fixed release ", newer.front())
                  : absl::StrCat(v, ": ", SeriesName(scheme, key),
                                 " has no fixed release; fixes exist only in ",
                                 absl::StrJoin(a.fixed, ", "));
  }
  return out;
}

CheckResult Base(const Advisory& a, const ComponentInfo& info, const ComponentVersion& v) {
  CheckResult r;
  r.check_id = absl::StrCat("audit.advisory.", a.id);
  r.category = "security";
  r.component = info.id;
  r.subject = v.device.empty() ? absl::StrCat("component:", info.id)
                               : absl::StrCat("component:", info.id, ":", v.device);
  r.title = absl::StrCat(info.name, ": ", a.id,
                         a.cves.empty() ? "" : " (" + absl::StrJoin(a.cves, ", ") + ")");
  r.found = v.Describe();
  r.advisory_id = a.id;
  r.advisory_severity = a.severity;
  r.cves = a.cves;
  r.links.push_back(a.url);
  for (const auto& l : a.links) r.links.push_back(l);
  if (!a.upgrade_url.empty()) r.links.push_back(a.upgrade_url);
  r.description = a.description;
  r.remediation = a.remediation;
  r.evidence.push_back(absl::StrCat(info.name, " ", v.Describe()));
  return r;
}

}  // namespace

AdvisoryVerdict EvaluateAdvisory(const Advisory& a, const ComponentInfo& info,
                                 const ComponentVersion& v) {
  const bool package = v.source == "dpkg" || v.source == "rpm";
  if (package && v.distribution_package) {
    auto it = a.distributions.find(v.distro);
    if (it != a.distributions.end()) {
      AdvisoryVerdict out;
      out.compared = v.version;
      int c = v.source == "dpkg" ? CompareDebian(v.version, it->second)
                                 : CompareRpm(v.version, it->second);
      out.kind = c < 0 ? AdvisoryVerdict::kVulnerable : AdvisoryVerdict::kFixed;
      out.required = absl::StrCat(">= ", it->second, " (", v.distro, " package)");
      out.why = c < 0 ? absl::StrCat(v.distro, " package ", v.version, " is older than ",
                                     it->second, ", the distribution's fixed package")
                      : absl::StrCat(v.distro, " package ", v.version,
                                     " carries the distribution's fix (", it->second, ")");
      return out;
    }
    // No distribution fix recorded: only a package already at upstream's fix
    // is known to be fixed.
    std::string base = UpstreamBase(v.version);
    AdvisoryVerdict up = Ladder(a, info.scheme, base);
    if (up.kind == AdvisoryVerdict::kVulnerable) {
      up.kind = AdvisoryVerdict::kUnknown;
      up.why = absl::StrCat(
          v.distro.empty() ? "distribution" : v.distro, " package ", v.version,
          " is based on upstream ", base, " (", up.why,
          "), and no fixed package version is recorded for ",
          v.distro.empty() ? "this distribution" : v.distro,
          ": the distribution may have backported the fix. Check its security tracker.");
    }
    return up;
  }
  if (a.fixed.empty()) {
    AdvisoryVerdict out;
    out.compared = v.version;
    out.why = "the advisory lists only distribution fixes, and this is not a distribution package";
    return out;
  }
  std::string compared = package ? UpstreamBase(v.version) : v.version;
  if (compared.empty()) compared = v.version;
  return Ladder(a, info.scheme, compared);
}

namespace {

CheckResult ComponentCheck(const std::string& prefix, const ComponentVersion& v,
                           const std::string& name, CheckStatus status) {
  CheckResult r;
  r.check_id = absl::StrCat(prefix, v.component);
  r.category = "security";
  r.status = status;
  r.subject = absl::StrCat("component:", v.component, v.device.empty() ? "" : ":" + v.device);
  r.component = v.component;
  r.found = v.Describe();
  r.title = name;
  if (!v.evidence.empty()) r.evidence.push_back(v.evidence);
  return r;
}

std::string DateText(absl::CivilDay day) { return absl::FormatCivilTime(day); }

// A miss (kVulnerable) in time and by severity: FAIL for critical and high,
// WARN for medium and low; WARN within the grace period after publication.
void JudgeMiss(const Advisory& a, const JudgeOptions& options, CheckResult* r) {
  const bool severe = a.severity == "critical" || a.severity == "high";
  r->status = severe ? CheckStatus::kFail : CheckStatus::kWarn;
  if (!severe) absl::StrAppend(&r->why, " (", a.severity, " severity: a warning)");
  absl::CivilDay published;
  if (options.grace_days <= 0 || !options.today || a.published.empty() ||
      !absl::ParseCivilTime(a.published, &published)) {
    return;
  }
  const absl::CivilDay grace_end = published + options.grace_days;
  if (*options.today >= grace_end) return;
  r->status = CheckStatus::kWarn;
  absl::StrAppend(&r->why, "; within the ", options.grace_days,
                  "-day grace period after the advisory's publication on ", a.published,
                  ": a warning until ", DateText(grace_end), ", a failure from then on");
}

CheckResult JudgeOne(const Advisory& a, const ComponentInfo& info, const ComponentVersion& v,
                     const JudgeOptions& options) {
  CheckResult r = Base(a, info, v);
  AdvisoryVerdict verdict = EvaluateAdvisory(a, info, v);
  r.required = verdict.required;
  r.why = verdict.why;
  if (!a.published.empty()) r.evidence.push_back(absl::StrCat(a.id, " published ", a.published));
  switch (verdict.kind) {
    case AdvisoryVerdict::kFixed:
    case AdvisoryVerdict::kNotAffected: r.status = CheckStatus::kPass; break;
    case AdvisoryVerdict::kVulnerable: JudgeMiss(a, options, &r); break;
    case AdvisoryVerdict::kUnknown: r.status = CheckStatus::kUnknown; break;
  }
  return r;
}

// The checks for one collected component (see CheckAdvisories).
std::vector<CheckResult> CheckComponent(const ComponentVersion& v, const AdvisoryDb& db,
                                        const JudgeOptions& options) {
  auto info_it = db.components.find(v.component);
  const std::string name = info_it == db.components.end() ? v.component : info_it->second.name;
  std::vector<const Advisory*> advisories;
  for (const auto& a : db.advisories) {
    if (a.component == v.component) advisories.push_back(&a);
  }
  if (!v.installed) {
    if (advisories.empty()) return {};
    CheckResult r = ComponentCheck("audit.installed.", v, name + ": not installed",
                                   CheckStatus::kSkipped);
    r.found = "not installed";
    r.why = absl::StrCat("no ", name, " found (files, package database, commands); its ",
                         advisories.size(), " advisories do not apply");
    return {r};
  }
  if (!db.error.empty()) {
    CheckResult r = ComponentCheck("audit.version.", v, name + ": not judged",
                                   CheckStatus::kUnknown);
    r.why = absl::StrCat("the advisory table is unusable (", db.error, "): ", v.Describe(),
                         " was not checked against any advisory");
    r.not_measured = true;
    return {r};
  }
  if (v.version.empty()) {
    CheckResult r = ComponentCheck("audit.version.", v, name + ": version unknown",
                                   CheckStatus::kUnknown);
    r.why = absl::StrCat("installed, but its version could not be read (", v.error, "); ",
                         advisories.size(), " advisories not checked");
    return {r};
  }
  if (info_it == db.components.end() || advisories.empty()) {
    CheckResult r = ComponentCheck("audit.advisories.", v, name + ": no advisories in the table",
                                   CheckStatus::kUnknown);
    r.why = absl::StrCat("the advisory table (generated ", db.generated.empty() ? "?" : db.generated,
                         ") has no advisory for ", name, ": ", v.version, " is not judged");
    r.not_measured = true;  // nothing to compare with: never a pass
    return {r};
  }
  std::vector<CheckResult> out;
  for (const Advisory* a : advisories) out.push_back(JudgeOne(*a, info_it->second, v, options));
  return out;
}

}  // namespace

std::vector<CheckResult> CheckAdvisories(const std::vector<ComponentVersion>& versions,
                                         const AdvisoryDb& db, const JudgeOptions& options) {
  std::vector<CheckResult> out;
  std::set<std::string> reported_missing;
  for (const auto& v : versions) {
    // One "not installed" per component (per-device components repeat).
    if (!v.installed && !reported_missing.insert(v.component).second) continue;
    for (auto& r : CheckComponent(v, db, options)) out.push_back(std::move(r));
  }
  return out;
}

namespace {

// One kernel advisory (see CheckKernelAdvisories).
CheckResult JudgeKernel(const Advisory& a, const ComponentInfo& info, const KernelInfo& k,
                        const ComponentVersion& v, const JudgeOptions& options) {
  CheckResult r = Base(a, info, v);
  auto fix = a.distributions.find(v.distro);
  if (fix == a.distributions.end()) {
    r.status = CheckStatus::kUnknown;
    r.why = absl::StrCat("no fixed kernel package is recorded for ",
                         v.distro.empty() ? "this distribution" : v.distro);
    return r;
  }
  r.required = absl::StrCat(">= ", fix->second, " (", v.distro, " package, running)");
  if (v.version.empty()) {
    r.status = CheckStatus::kUnknown;
    r.why = absl::StrCat("the running kernel ", k.running,
                         " has no linux-image package in dpkg: its package version is unknown");
    return r;
  }
  if (CompareDebian(v.version, fix->second) >= 0) {
    r.status = CheckStatus::kPass;
    r.why = absl::StrCat("the running kernel's package ", v.version, " carries the fix");
    return r;
  }
  const bool pending =
      !k.newest_package.empty() && CompareDebian(k.newest_package, fix->second) >= 0;
  r.why = pending ? absl::StrCat("the fixed kernel (", k.newest, ", package ", k.newest_package,
                                 ") is installed but not running: the running ", k.running,
                                 " (", v.version, ") is vulnerable until a reboot")
                  : absl::StrCat("the running kernel's package ", v.version, " is older than ",
                                 fix->second, ", and no fixed kernel is installed");
  r.remediation = pending ? "Drain the node and reboot into the installed fixed kernel."
                          : absl::StrCat("Install the fixed kernel (", fix->second,
                                         " or newer) and reboot.");
  JudgeMiss(a, options, &r);
  return r;
}

}  // namespace

std::vector<CheckResult> CheckKernelAdvisories(const KernelInfo& k, const std::string& distro,
                                               const AdvisoryDb& db, const JudgeOptions& options) {
  std::vector<CheckResult> out;
  auto info = db.components.find("kernel");
  if (info == db.components.end() || k.running.empty()) return out;
  ComponentVersion v;
  v.component = "kernel";
  v.installed = true;
  v.version = k.running_package;
  v.source = "dpkg";
  v.package = "linux-image-" + k.running;
  v.distribution_package = true;
  v.distro = distro;
  v.evidence = "/proc/sys/kernel/osrelease " + k.running;
  for (const auto& a : db.advisories) {
    if (a.component == "kernel") out.push_back(JudgeKernel(a, info->second, k, v, options));
  }
  return out;
}

CheckResult CheckTableAge(const AdvisoryDb& db, const JudgeOptions& options) {
  CheckResult r;
  r.check_id = "audit.advisories.age";
  r.category = "security";
  r.subject = "node";
  r.title = "Advisory table date";
  r.found = db.generated.empty() ? "no generated date" : "generated " + db.generated;
  r.required = absl::StrCat("generated within ", options.max_table_age_days, " days");
  r.evidence.push_back(db.path);
  r.remediation = "Run `cmax-bench audit refresh --from DIR --out FILE` on the vendors' current "
                  "advisories and audit with --advisories FILE (docs/audit.md).";
  absl::CivilDay generated;
  if (db.generated.empty() || !absl::ParseCivilTime(db.generated, &generated)) {
    r.status = CheckStatus::kWarn;
    r.why = "the advisory table does not say when it was generated: how current it is cannot be told";
    return r;
  }
  if (!options.today) {
    r.status = CheckStatus::kUnknown;
    r.why = "today's date is unknown: the table's age cannot be judged";
    return r;
  }
  const int64_t age = *options.today - generated;
  if (age > options.max_table_age_days) {
    r.status = CheckStatus::kWarn;
    r.why = absl::StrCat("the advisory table was generated on ", db.generated, ", ", age,
                         " days ago (more than ", options.max_table_age_days,
                         "): advisories published since are not checked");
    return r;
  }
  r.status = CheckStatus::kInfo;
  r.remediation.clear();
  r.why = absl::StrCat("the advisory table was generated on ", db.generated, ", ",
                       std::max<int64_t>(age, 0), " days ago");
  return r;
}

CheckResult CheckDriverBranch(const ComponentVersion& driver, const AdvisoryDb& db,
                              const std::string& today_ym) {
  CheckResult r;
  r.check_id = "audit.driver.branch";
  r.category = "lifecycle";
  r.subject = "component:driver";
  r.component = "driver";
  r.found = driver.Describe();
  r.links.push_back(db.driver_table_source);
  if (!driver.installed || driver.version.empty()) {
    r.status = driver.installed ? CheckStatus::kUnknown : CheckStatus::kSkipped;
    r.title = "NVIDIA driver branch: no driver";
    r.why = driver.installed ? "the driver version could not be read" : "no NVIDIA driver found";
    return r;
  }
  if (!db.error.empty()) {
    r.status = CheckStatus::kUnknown;
    r.title = "NVIDIA driver branch: not judged";
    r.why = absl::StrCat("the advisory table is unusable (", db.error, ")");
    r.not_measured = true;
    return r;
  }
  auto branch = DriverBranch(driver.version);
  if (!branch.ok()) {
    r.status = CheckStatus::kUnknown;
    r.title = "NVIDIA driver branch: unreadable version";
    r.why = std::string(branch.status().message());
    return r;
  }
  r.title = absl::StrCat("NVIDIA driver branch R", *branch);
  const DriverBranchInfo* info = FindDriverBranch(db, *branch);
  if (info == nullptr) {
    r.status = CheckStatus::kUnknown;
    r.required = "a supported branch";
    r.why = absl::StrCat("R", *branch, " is not in the branch table (as of ", db.driver_table_as_of,
                         "): update the advisory file");
    return r;
  }
  if (!info->source.empty() && info->source != db.driver_table_source) {
    r.links.insert(r.links.begin(), info->source);
  }
  bool eol = info->status == "eol" || (!info->eol.empty() && today_ym > info->eol);
  std::string supported;
  for (const auto& b : db.driver_branches) {
    if (b.status == "supported" && (b.eol.empty() || today_ym <= b.eol)) {
      supported += absl::StrCat(supported.empty() ? "" : ", ", "R", b.branch);
    }
  }
  r.required = absl::StrCat("a supported branch (", supported.empty() ? "none listed" : supported, ")");
  if (!eol) {
    r.status = CheckStatus::kPass;
    r.why = absl::StrCat("R", *branch, " ", info->designation, " is supported",
                         info->eol.empty() ? "" : " until " + info->eol);
    return r;
  }
  r.status = CheckStatus::kWarn;
  r.why = absl::StrCat("R", *branch, " ", info->designation, " is end of life",
                       info->eol.empty() ? "" : " since " + info->eol,
                       ": it gets no more security fixes");
  r.remediation = absl::StrCat("Move to a supported branch (", supported, ").");
  // Security fixes that exist only on other branches, above this driver.
  auto info_it = db.components.find("driver");
  if (info_it != db.components.end()) {
    std::vector<std::string> missed;
    for (const auto& a : db.advisories) {
      if (a.component != "driver") continue;
      AdvisoryVerdict v = EvaluateAdvisory(a, info_it->second, driver);
      if (v.kind == AdvisoryVerdict::kVulnerable) {
        missed.push_back(absl::StrCat(a.id, " (fixed only in ", absl::StrJoin(a.fixed, ", "), ")"));
        r.links.push_back(a.url);
      }
    }
    if (!missed.empty()) {
      r.status = CheckStatus::kFail;
      r.category = "security";
      r.why += absl::StrCat("; security fixes exist only on other branches: ",
                            absl::StrJoin(missed, "; "));
    }
  }
  return r;
}

std::vector<CheckResult> CheckKernel(const KernelInfo& k) {
  std::vector<CheckResult> out;
  CheckResult newest;
  newest.check_id = "audit.kernel.newest";
  newest.category = "lifecycle";
  newest.subject = "component:kernel";
  newest.component = "kernel";
  newest.title = "Running kernel is the newest installed";
  newest.found = k.running.empty() ? "unknown" : k.running;
  if (k.running.empty()) {
    newest.status = CheckStatus::kUnknown;
    newest.why = "cannot read /proc/sys/kernel/osrelease";
    newest.not_measured = true;  // no input: the check could not run
  } else if (k.installed.empty()) {
    newest.status = CheckStatus::kSkipped;
    newest.why = "no installed kernels under /lib/modules or /boot (a container?)";
  } else {
    newest.required = absl::StrCat(">= ", k.newest, " (newest installed)");
    if (CompareDebian(k.running, k.newest) < 0) {
      newest.status = CheckStatus::kWarn;
      newest.why = absl::StrCat("running ", k.running, " but ", k.newest,
                                " is installed: the newer kernel (and its fixes) is not in use");
      newest.remediation = "Reboot into the newest installed kernel.";
    } else {
      newest.status = CheckStatus::kPass;
      newest.why = absl::StrCat("running the newest of ", k.installed.size(), " installed kernels");
    }
    newest.evidence.push_back(absl::StrCat("installed: ", absl::StrJoin(k.installed, ", ")));
  }
  out.push_back(newest);

  CheckResult reboot;
  reboot.check_id = "audit.kernel.reboot_required";
  reboot.category = "lifecycle";
  reboot.subject = "node";
  reboot.component = "kernel";
  reboot.title = "No reboot pending";
  reboot.found = k.reboot_required ? "reboot required" : "no reboot-required flag";
  if (k.reboot_required) {
    reboot.status = CheckStatus::kWarn;
    reboot.why = absl::StrCat("/var/run/reboot-required exists",
                              k.reboot_packages.empty()
                                  ? ""
                                  : " (for " + absl::StrJoin(k.reboot_packages, ", ") + ")",
                              ": installed updates are not active yet");
    reboot.remediation = "Drain the node and reboot it.";
  } else {
    reboot.status = CheckStatus::kPass;
    reboot.why = "no /var/run/reboot-required";
  }
  out.push_back(reboot);
  return out;
}

std::vector<CheckResult> CheckFirmwareUniform(const std::vector<ComponentVersion>& versions) {
  // family -> version -> devices
  std::map<std::string, std::map<std::string, std::vector<std::string>>> by_family;
  for (const auto& v : versions) {
    if (v.component != "nic_firmware" || !v.installed || v.version.empty()) continue;
    std::string family = v.version.substr(0, v.version.find('.'));
    by_family[family][v.version].push_back(v.device);
  }
  std::vector<CheckResult> out;
  for (const auto& [family, by_version] : by_family) {
    CheckResult r;
    r.check_id = absl::StrCat("audit.firmware.uniform.", family);
    r.category = "lifecycle";
    r.subject = "node";
    r.component = "nic_firmware";
    r.title = absl::StrCat("NIC firmware family ", family, " uniform on this node");
    std::vector<std::string> parts;
    for (const auto& [ver, devs] : by_version) {
      parts.push_back(absl::StrCat(ver, " on ", absl::StrJoin(devs, ", ")));
    }
    r.found = absl::StrJoin(parts, "; ");
    if (by_version.size() > 1) {
      r.status = CheckStatus::kWarn;
      r.why = "NICs of one family run different firmware: " + r.found;
      r.remediation = "Flash every NIC of the family to the same (newest) firmware.";
    } else {
      r.status = CheckStatus::kPass;
      r.why = "all NICs of the family run " + by_version.begin()->first;
    }
    out.push_back(r);
  }
  return out;
}

}  // namespace cmax::audit

namespace cmax::audit {
namespace {

const ComponentVersion* Find(const std::vector<ComponentVersion>& versions,
                             const std::string& component) {
  for (const auto& v : versions) {
    if (v.component == component) return &v;
  }
  return nullptr;
}

}  // namespace

CheckResult JudgeFabricManager(const ComponentVersion& fm, const ComponentVersion* driver) {
  CheckResult r;
  r.check_id = "audit.fabric_manager.driver_match";
  r.category = "security";
  r.subject = "component:fabric_manager";
  r.component = "fabric_manager";
  r.title = "Fabric Manager: same version as the driver";
  r.found = absl::StrCat("Fabric Manager ", fm.Describe(), "; driver ",
                         driver == nullptr ? "not collected" : driver->Describe());
  r.evidence.push_back(r.found);
  r.links.push_back(kFabricManagerGuide);
  r.links.push_back(kFabricManagerDriverMatch);
  const std::string driver_version = driver != nullptr ? driver->version : "";
  r.required = driver_version.empty() ? "= the driver's version" : "= " + driver_version;
  if (fm.version.empty() || driver_version.empty()) {
    r.status = CheckStatus::kUnknown;
    r.why = fm.version.empty() ? "Fabric Manager is installed but its version could not be read"
                               : "the driver's version could not be read";
    return r;
  }
  if (fm.version == driver_version) {
    r.status = CheckStatus::kPass;
    r.why = absl::StrCat("Fabric Manager and the driver are both ", driver_version);
    return r;
  }
  r.status = CheckStatus::kFail;
  r.why = absl::StrCat("Fabric Manager ", fm.version, " does not match the driver ",
                       driver_version, ": Fabric Manager must be the same version as the driver");
  r.remediation = absl::StrCat("Install Fabric Manager ", driver_version,
                               " (the package of the running driver's version).");
  return r;
}

std::vector<CheckResult> CheckFabricManager(const std::vector<ComponentVersion>& versions) {
  const ComponentVersion* fm = Find(versions, "fabric_manager");
  if (fm == nullptr || !fm->installed) return {};
  const ComponentVersion* driver = Find(versions, "driver");
  return {JudgeFabricManager(*fm, driver != nullptr && driver->installed ? driver : nullptr)};
}

}  // namespace cmax::audit
