// Human and record output of the audit (declared in audit.h).
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "benchmarks/audit/audit.h"

namespace cmax::audit {
namespace {

// OSC 8 hyperlink: ESC ] 8 ; ; URL ESC \ TEXT ESC ] 8 ; ; ESC \ .
std::string Link(const std::string& url, bool hyperlinks) {
  if (!hyperlinks) return url;
  return absl::StrCat("\033]8;;", url, "\033\\", url, "\033]8;;\033\\");
}

const char* Color(CheckStatus s) {
  switch (s) {
    case CheckStatus::kPass: return "\033[32m";
    case CheckStatus::kWarn:
    case CheckStatus::kUnknown: return "\033[33m";
    case CheckStatus::kFail:
    case CheckStatus::kCritical: return "\033[31m";
    default: return "";
  }
}

std::string VersionLabel(const ComponentVersion& v) {
  if (!v.installed) return "not installed";
  return v.version.empty() ? "unknown" : v.version;
}

}  // namespace

void WriteHuman(const AuditReport& report, int verbosity, bool hyperlinks, FILE* out) {
  std::string table = report.advisories_path;
  if (!report.advisories_error.empty()) {
    absl::StrAppend(&table, "  (unusable: ", report.advisories_error, ")");
  } else {
    absl::StrAppend(&table, "  (generated ",
                    report.advisories_generated.empty() ? "unknown" : report.advisories_generated,
                    ")");
  }
  std::fprintf(out, "cmax audit  root %s  distribution %s\nadvisories  %s\n\n",
               report.root.c_str(), report.distro.empty() ? "unknown" : report.distro.c_str(),
               table.c_str());
  std::fprintf(out, "%-20s %-28s %s\n", "COMPONENT", "VERSION", "SOURCE");
  for (const auto& v : report.versions) {
    std::string name = v.device.empty() ? v.component : absl::StrCat(v.component, ":", v.device);
    std::string src = !v.installed ? "" : v.source;
    if (!v.package.empty()) {
      src += absl::StrCat(" ", v.package, v.distribution_package ? " (" + v.distro + ")" : "");
    }
    if (v.installed && !v.evidence.empty() && verbosity > 0) src += "  " + v.evidence;
    if (v.installed && v.version.empty() && !v.error.empty()) src += "  (" + v.error + ")";
    std::fprintf(out, "%-20s %-28s %s\n", name.c_str(), VersionLabel(v).c_str(), src.c_str());
  }
  std::fprintf(out, "%-20s %-28s %s\n\n", "kernel",
               report.kernel.running.empty() ? "unknown" : report.kernel.running.c_str(),
               report.kernel.newest.empty()
                   ? "running"
                   : absl::StrCat("running; newest installed ", report.kernel.newest).c_str());

  std::map<CheckStatus, int> counts;
  for (const auto& c : report.checks) {
    ++counts[c.status];
    std::string status = StatusName(c.status);
    std::string shown = hyperlinks ? absl::StrCat(Color(c.status), status, "\033[0m") : status;
    std::fprintf(out, "%-*s %s\n", hyperlinks ? 8 + static_cast<int>(shown.size() - status.size()) : 8,
                 shown.c_str(), c.title.c_str());
    std::string line = absl::StrCat("found ", c.found.empty() ? "-" : c.found);
    if (!c.required.empty()) absl::StrAppend(&line, "; required ", c.required);
    std::fprintf(out, "         %s\n", line.c_str());
    if (!c.why.empty()) std::fprintf(out, "         %s\n", c.why.c_str());
    if (verbosity >= 1) {
      if (!c.advisory_id.empty()) {
        std::fprintf(out, "         advisory %s (%s)%s\n", c.advisory_id.c_str(),
                     c.advisory_severity.c_str(),
                     c.cves.empty() ? "" : absl::StrCat(": ", absl::StrJoin(c.cves, ", ")).c_str());
      }
      for (const auto& l : c.links) {
        std::fprintf(out, "         link %s\n", Link(l, hyperlinks).c_str());
      }
    }
    if (verbosity >= 2) {
      if (!c.description.empty()) std::fprintf(out, "         about: %s\n", c.description.c_str());
      if (!c.remediation.empty()) std::fprintf(out, "         fix: %s\n", c.remediation.c_str());
      for (const auto& e : c.evidence) std::fprintf(out, "         evidence: %s\n", e.c_str());
    }
  }
  std::fprintf(out, "\n%zu checks:", report.checks.size());
  for (auto s : {CheckStatus::kPass, CheckStatus::kInfo, CheckStatus::kWarn, CheckStatus::kFail,
                 CheckStatus::kCritical, CheckStatus::kUnknown, CheckStatus::kSkipped}) {
    if (counts[s] > 0) std::fprintf(out, " %d %s", counts[s], StatusName(s).c_str());
  }
  std::fprintf(out, "\n");
}

void WriteRecords(const AuditReport& report, RecordWriter& writer) {
  for (const auto& v : report.versions) {
    std::map<std::string, std::string> labels = {
        {"component", v.component},
        {"version", VersionLabel(v)},
        {"source", v.installed ? v.source : "none"}};
    if (!v.device.empty()) labels["device"] = v.device;
    if (!v.package.empty()) labels["package"] = v.package;
    if (v.distribution_package && !v.distro.empty()) labels["distro"] = v.distro;
    writer.Measure("component_version", 1, "count", labels);
  }
  if (!report.kernel.running.empty()) {
    std::map<std::string, std::string> labels = {
        {"component", "kernel"}, {"version", report.kernel.running}, {"source", "running"}};
    if (!report.kernel.newest.empty()) labels["newest_installed"] = report.kernel.newest;
    writer.Measure("component_version", 1, "count", labels);
  }
  for (const auto& c : report.checks) {
    v1::Finding f;
    f.set_check_id(c.check_id);
    f.set_severity(FindingSeverity(c));
    f.set_not_measured(IsNotMeasured(c));
    f.set_category(c.category);
    f.set_subject(c.subject);
    f.set_title(absl::StrCat(StatusName(c.status), ": ", c.title));
    std::string detail = absl::StrCat("found ", c.found.empty() ? "-" : c.found);
    if (!c.required.empty()) absl::StrAppend(&detail, "; required ", c.required);
    if (!c.why.empty()) absl::StrAppend(&detail, ". ", c.why);
    if (!c.description.empty()) absl::StrAppend(&detail, "\n", c.description);
    f.set_detail(detail);
    for (const auto& e : c.evidence) f.add_evidence(e);
    for (const auto& l : c.links) f.add_links(l);
    f.set_action(c.remediation);
    auto& labels = *f.mutable_labels();
    labels["status"] = absl::AsciiStrToLower(StatusName(c.status));
    if (!c.component.empty()) labels["component"] = c.component;
    if (!c.advisory_id.empty()) labels["advisory"] = c.advisory_id;
    if (!c.advisory_severity.empty()) labels["advisory_severity"] = c.advisory_severity;
    if (!c.cves.empty()) labels["cves"] = absl::StrJoin(c.cves, ",");
    writer.Find(f);
  }
}

}  // namespace cmax::audit
