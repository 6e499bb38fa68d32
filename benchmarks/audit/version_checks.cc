#include "benchmarks/audit/version_checks.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace cmax::audit {
namespace {

// The branch a fixed version belongs to, for ladders: "1.2" for semver,
// "570" for drivers, "28.39" for firmware; "" where a scheme has no branches.
std::string BranchKey(VersionScheme scheme, const std::string& v) {
  switch (scheme) {
    case VersionScheme::kSemver: return MajorMinor(v);
    case VersionScheme::kDriver: {
      auto b = DriverBranch(v);
      return b.ok() ? absl::StrCat(*b) : "";
    }
    case VersionScheme::kFirmware: {
      auto t = FirmwareTrain(v);
      return t.ok() ? *t : "";
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
    auto ta = FirmwareTrain(a);
    if (!ta.ok()) return ta.status();
    auto tb = FirmwareTrain(b);
    if (!tb.ok()) return tb.status();
    if (*ta != *tb) return CompareRpm(*ta, *tb) < 0;
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
  // No fix on this branch: fixed only when newer than every listed fix.
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

std::vector<CheckResult> CheckAdvisories(const std::vector<ComponentVersion>& versions,
                                         const AdvisoryDb& db) {
  std::vector<CheckResult> out;
  std::set<std::string> reported_missing;
  for (const auto& v : versions) {
    auto info_it = db.components.find(v.component);
    if (info_it == db.components.end()) continue;
    const ComponentInfo& info = info_it->second;
    std::vector<const Advisory*> advisories;
    for (const auto& a : db.advisories) {
      if (a.component == v.component) advisories.push_back(&a);
    }
    if (advisories.empty()) continue;
    if (!v.installed) {
      if (!reported_missing.insert(v.component).second) continue;
      CheckResult r;
      r.check_id = absl::StrCat("audit.installed.", v.component);
      r.category = "security";
      r.status = CheckStatus::kSkipped;
      r.subject = absl::StrCat("component:", v.component);
      r.component = v.component;
      r.title = absl::StrCat(info.name, ": not installed");
      r.found = "not installed";
      r.why = absl::StrCat("no ", info.name, " found (files, package database, commands); its ",
                           advisories.size(), " advisories do not apply");
      out.push_back(r);
      continue;
    }
    if (v.version.empty()) {
      CheckResult r;
      r.check_id = absl::StrCat("audit.version.", v.component);
      r.category = "security";
      r.status = CheckStatus::kUnknown;
      r.subject = absl::StrCat("component:", v.component);
      r.component = v.component;
      r.title = absl::StrCat(info.name, ": version unknown");
      r.found = v.Describe();
      r.why = absl::StrCat("installed, but its version could not be read (", v.error, "); ",
                           advisories.size(), " advisories not checked");
      r.evidence.push_back(v.evidence);
      out.push_back(r);
      continue;
    }
    for (const Advisory* a : advisories) {
      CheckResult r = Base(*a, info, v);
      AdvisoryVerdict verdict = EvaluateAdvisory(*a, info, v);
      r.required = verdict.required;
      r.why = verdict.why;
      switch (verdict.kind) {
        case AdvisoryVerdict::kFixed:
        case AdvisoryVerdict::kNotAffected: r.status = CheckStatus::kPass; break;
        case AdvisoryVerdict::kVulnerable: r.status = CheckStatus::kFail; break;
        case AdvisoryVerdict::kUnknown: r.status = CheckStatus::kUnknown; break;
      }
      out.push_back(r);
    }
  }
  return out;
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
