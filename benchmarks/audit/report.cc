// Human and record output of the audit (declared in audit.h).
#include <map>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "benchmarks/audit/audit.h"

namespace cmax::audit {
namespace {

// OSC 8 hyperlink: ESC ] 8 ; ; URL ESC \ TEXT ESC ] 8 ; ; ESC \ . Only for an
// http(s) URL without control characters (a table's URL must not write
// escape sequences of its own); control characters are shown as '?'.
std::string Link(const std::string& url, bool hyperlinks) {
  std::string clean = url;
  bool control = false;
  for (char& ch : clean) {
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) ch = '?', control = true;
  }
  const bool web = absl::StartsWithIgnoreCase(clean, "https://") ||
                   absl::StartsWithIgnoreCase(clean, "http://");
  if (!hyperlinks || control || !web) return clean;
  return absl::StrCat("\033]8;;", clean, "\033\\", clean, "\033]8;;\033\\");
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

bool IsMiss(CheckStatus s) {
  return s == CheckStatus::kWarn || s == CheckStatus::kFail || s == CheckStatus::kCritical;
}

std::string Name(const CheckResult& c) {
  return c.component_name.empty() ? c.component : c.component_name;
}

// The table's description, else what its entry says: severity, CVEs, floor.
std::string WhyItMatters(const CheckResult& c) {
  if (!c.description.empty() || c.advisory_id.empty()) return c.description;
  std::string out = absl::StrCat(Name(c), c.advisory_severity.empty() ? " has an" : " has a ",
                                 c.advisory_severity, " advisory, ", c.advisory_id);
  if (!c.cves.empty()) absl::StrAppend(&out, " (", absl::StrJoin(c.cves, ", "), ")");
  if (!c.required.empty()) absl::StrAppend(&out, "; fixed versions: ", c.required);
  absl::StrAppend(&out, "; the advisory page describes the impact");
  return out;
}

// Nothing for a check that passed or does not apply; else the table's
// remediation, else an upgrade to the floor (a miss whose floor is known).
std::string HowToFix(const CheckResult& c, bool hyperlinks) {
  if (!IsMiss(c.status) && c.status != CheckStatus::kUnknown) return "";
  if (!c.remediation.empty()) return c.remediation;
  if (!IsMiss(c.status) || c.advisory_id.empty() || c.required.empty()) return "";
  // One floor (">= 1.17.8"): "to 1.17.8 or later"; a ladder or a package
  // floor is quoted as the check states it.
  const bool one = absl::StartsWith(c.required, ">= ") &&
                   c.required.find_first_of("/(", 3) == std::string::npos;
  std::string out = one ? absl::StrCat("upgrade ", Name(c), " to ", c.required.substr(3), " or later")
                        : absl::StrCat("upgrade ", Name(c), " to a version meeting ", c.required);
  const std::string& page = c.upgrade_url.empty() ? c.advisory_url : c.upgrade_url;
  if (!page.empty()) absl::StrAppend(&out, " (", Link(page, hyperlinks), ")");
  return out;
}

void Line(FILE* out, const std::string& text) { std::fprintf(out, "         %s\n", text.c_str()); }

void WriteAdvisory(const CheckResult& c, bool hyperlinks, FILE* out) {
  if (!c.advisory_id.empty()) {
    Line(out, absl::StrCat("advisory ", c.advisory_id, " (", c.advisory_severity, ")",
                           c.cves.empty() ? "" : ": " + absl::StrJoin(c.cves, ", ")));
  }
  for (const auto& l : c.links) {
    if (!l.empty() && l != c.upgrade_url) Line(out, "link " + Link(l, hyperlinks));
  }
}

void WriteCheck(const CheckResult& c, const HumanOptions& o, FILE* out) {
  const std::string status = StatusName(c.status);
  const std::string shown = o.color ? absl::StrCat(Color(c.status), status, "\033[0m") : status;
  std::fprintf(out, "%s%s %s\n", shown.c_str(),
               std::string(status.size() < 8 ? 8 - status.size() : 0, ' ').c_str(), c.title.c_str());
  std::string line = absl::StrCat("found ", c.found.empty() ? "-" : c.found);
  if (!c.required.empty()) absl::StrAppend(&line, "; required ", c.required);
  Line(out, line);
  if (!c.why.empty()) Line(out, c.why);
  if (o.verbosity >= 1) WriteAdvisory(c, o.hyperlinks, out);
  if (o.verbosity >= 2) {
    if (const std::string why = WhyItMatters(c); !why.empty()) Line(out, "why it matters: " + why);
    for (const auto& e : c.evidence) Line(out, "evidence: " + e);
  }
  if (o.verbosity >= 3) {
    if (const std::string fix = HowToFix(c, o.hyperlinks); !fix.empty()) Line(out, "how to fix: " + fix);
    if (!c.upgrade_url.empty()) Line(out, "upgrade page " + Link(c.upgrade_url, o.hyperlinks));
  }
}

}  // namespace

absl::StatusOr<LinkMode> ParseLinkMode(const std::string& text) {
  if (text.empty() || text == "auto") return LinkMode::kAuto;
  if (text == "osc8") return LinkMode::kOsc8;
  if (text == "plain") return LinkMode::kPlain;
  return absl::InvalidArgumentError(
      absl::StrCat("links must be auto, osc8 or plain, not '", text, "'"));
}

bool UseHyperlinks(LinkMode mode, bool is_tty, const char* term) {
  if (mode != LinkMode::kAuto) return mode == LinkMode::kOsc8;
  return is_tty && term != nullptr && *term != '\0' && std::string(term) != "dumb";
}

void WriteHuman(const AuditReport& report, const HumanOptions& options, FILE* out) {
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
    if (v.installed && !v.evidence.empty() && options.verbosity > 0) src += "  " + v.evidence;
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
    WriteCheck(c, options, out);
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
