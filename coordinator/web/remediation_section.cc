#include "coordinator/web/remediation_section.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator/remediation/incidents.h"
#include "coordinator/web/pages.h"

namespace cmax::coordinator::web {
namespace {

// "12.3 s", or "" where the phase or step was not (yet) measured.
std::string Seconds(double s) { return s < 0 ? std::string() : absl::StrFormat("%.1f s", s); }

std::string StepDuration(const v1::IncidentStep& s) {
  if (s.started_unix_ns() <= 0 || s.ended_unix_ns() < s.started_unix_ns()) return "";
  return Seconds(static_cast<double>(s.ended_unix_ns() - s.started_unix_ns()) / 1e9);
}

std::string StepRows(const v1::RemediationIncident& inc) {
  std::string out =
      "<table><thead><tr><th>#</th><th>action</th><th>outcome</th><th>by</th>"
      "<th>duration</th><th>message</th></tr></thead><tbody>\n";
  for (const auto& s : inc.steps()) {
    absl::StrAppend(&out, "<tr><td class=\"n\">", s.step(), "</td><td><b>", HtmlEscape(s.kind()),
                    "</b> ", HtmlEscape(s.detail()), "</td><td>", HtmlEscape(s.outcome()),
                    "</td><td>", HtmlEscape(s.by()), "</td><td class=\"n\">", StepDuration(s),
                    "</td><td>", HtmlEscape(s.message()), "</td></tr>\n");
  }
  absl::StrAppend(&out, "</tbody></table>\n");
  return out;
}

std::string StateLine(const v1::RemediationIncident& inc) {
  const std::string state = remediation::IncidentStateName(inc.state());
  std::string out = absl::StrCat("<b class=\"state-", HtmlEscape(state), "\">",
                                 HtmlEscape(state), "</b>");
  if (inc.state() == v1::INCIDENT_ESCALATED) {
    absl::StrAppend(&out, " <b class=\"err\">needs hardware</b> (a person decides; the node "
                          "stays fenced)");
  }
  if (inc.dry_run()) absl::StrAppend(&out, " (dry-run)");
  if (!inc.reason().empty()) absl::StrAppend(&out, ": ", HtmlEscape(inc.reason()));
  return out;
}

std::string IncidentBlock(const v1::RemediationIncident& inc) {
  const remediation::IncidentTimings t = remediation::TimingsOf(inc);
  auto phase = [](double s) {
    return s < 0 ? std::string("<span class=\"muted\">not measured</span>") : Seconds(s);
  };
  return absl::StrCat(
      "<h3 class=\"remediation-incident\">", HtmlEscape(inc.incident_id()), "</h3>\n<p>",
      StateLine(inc), "<br>check <b>", HtmlEscape(inc.check_id()), "</b>: ",
      HtmlEscape(inc.title()), "<br>opened ", FormatTime(inc.detected_unix_ns()),
      inc.closed_unix_ns() > 0 ? absl::StrCat(", closed ", FormatTime(inc.closed_unix_ns())) : "",
      "<br>plan: ", HtmlEscape(inc.plan()), "<br>detect ", phase(t.detect_s), ", quarantine ",
      phase(t.quarantine_s), ", repair ", phase(t.repair_s), "</p>\n", StepRows(inc));
}

}  // namespace

std::string RemediationSection(const std::string& node,
                               const absl::StatusOr<v1::RemediationStatus>& status) {
  std::string out = "<h2 id=\"remediation\">Remediation incidents</h2>\n";
  if (!status.ok()) {
    return absl::StrCat(out, "<p class=\"muted\">Not shown: ",
                        HtmlEscape(std::string(status.status().message())), "</p>\n");
  }
  std::vector<const v1::RemediationIncident*> incidents;
  for (const auto& inc : status->incidents()) {
    if (inc.node() == node) incidents.push_back(&inc);
  }
  if (incidents.empty()) {
    return absl::StrCat(out, "<p class=\"muted\">The fault loop has opened no incident on this "
                             "node.</p>\n");
  }
  std::sort(incidents.begin(), incidents.end(), [](const auto* a, const auto* b) {
    return a->detected_unix_ns() != b->detected_unix_ns()
               ? a->detected_unix_ns() > b->detected_unix_ns()
               : a->incident_id() > b->incident_id();
  });
  const int total = static_cast<int>(incidents.size());
  const int shown = std::min(total, kMaxRemediationShown);
  absl::StrAppend(&out, "<p>", total, " incident(s), newest first",
                  total > shown ? absl::StrCat("; the newest ", shown, " shown, ", total - shown,
                                               " more (cmaxctl remediation status --node ",
                                               HtmlEscape(node), " --all)")
                                : "",
                  ".</p>\n");
  for (int i = 0; i < shown; ++i) absl::StrAppend(&out, IncidentBlock(*incidents[i]));
  return out;
}

}  // namespace cmax::coordinator::web
