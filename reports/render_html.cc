// HTML rendering of a scorecard: one self-contained file with inline CSS, no
// scripts and no external resources. Every text from the data is escaped;
// only http(s) links become anchors.
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "reports/cost.h"
#include "reports/judge_util.h"
#include "reports/scorecard.h"

namespace cmax::reports {
namespace {

std::string H(const std::string& text) {
  std::string out;
  out.reserve(text.size() + 16);
  for (char ch : text) {
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out.push_back(ch);
    }
  }
  return out;
}

std::string Link(const std::string& url) {
  if (absl::StartsWithIgnoreCase(url, "https://") || absl::StartsWithIgnoreCase(url, "http://")) {
    return absl::StrCat("<a href=\"", H(url), "\" rel=\"noopener noreferrer\">", H(url), "</a>");
  }
  return H(url);
}

// A CSS class name from a fixed set, never from the data.
std::string GradeClass(const std::string& grade) {
  if (grade == "A" || grade == "B" || grade == "C" || grade == "D" || grade == "F") {
    return absl::StrCat("g", grade);
  }
  return "gNM";
}

std::string OutcomeClass(const std::string& outcome) {
  if (outcome == "pass") return "pass";
  if (outcome == "warn") return "warn";
  if (outcome == "fail" || outcome == "critical") return "fail";
  return "nm";
}

std::string OutcomeLabel(const std::string& outcome) {
  return outcome == "not_measured" ? "not measured" : outcome;
}

constexpr char kStyle[] = R"css(
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;max-width:78rem;padding:0 1rem;color:#1b1f24;line-height:1.4}
h1{font-size:1.6rem}h2{margin-top:2rem;border-bottom:1px solid #d0d7de;padding-bottom:.2rem}
table{border-collapse:collapse;width:100%;margin:.5rem 0 1rem}
th,td{border:1px solid #d0d7de;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}
pre{background:#f6f8fa;border:1px solid #d0d7de;padding:.5rem;overflow-x:auto;white-space:pre-wrap;font-size:.85rem}
code{font-size:.85rem}
.banner{background:#fff3cd;border:3px solid #d39e00;color:#5c3c00;font-weight:700;font-size:1.3rem;padding:1rem;margin:1rem 0;text-align:center}
.tier{font-size:1.4rem;font-weight:700}
.badge{display:inline-block;min-width:2.2rem;text-align:center;border-radius:.3rem;padding:.1rem .4rem;font-weight:700}
.gA{background:#1a7f37;color:#fff}.gB{background:#4c9a2a;color:#fff}.gC{background:#bf8700;color:#fff}
.gD{background:#d1242f;color:#fff}.gF{background:#82071e;color:#fff}.gNM{background:#eaeef2;color:#57606a}
.pass{color:#1a7f37;font-weight:700}.warn{color:#9a6700;font-weight:700}.fail{color:#cf222e;font-weight:700}.nm{color:#57606a;font-weight:700}
.sim{color:#9a6700;font-weight:700}
ul.ev{margin:.2rem 0 .6rem 1rem}
)css";

void Header(const v1::Scorecard& card, std::string* out) {
  absl::StrAppend(out, "<h1>cmax scorecard: ", H(card.run_id()), "</h1>\n");
  if (card.simulated()) {
    std::vector<std::string> cats;
    for (const auto& c : card.categories()) {
      if (c.simulated()) cats.push_back(c.name());
    }
    absl::StrAppend(out, "<div class=\"banner\">\u26a0 ", H(kSimulatedBanner),
                    "<br><small>some values come from the simulated backend (",
                    H(absl::StrJoin(cats, ", ")), ")</small></div>\n");
  }
  absl::StrAppend(out, "<table class=\"meta\">\n");
  auto row = [&](const std::string& k, const std::string& v_html) {
    absl::StrAppend(out, "<tr><th>", k, "</th><td>", v_html, "</td></tr>\n");
  };
  row("Run", H(card.run_id()));
  row("Plan", H(card.plan()));
  row("Started", H(card.started()));
  row("Finished", H(card.finished()));
  row("State", H(card.state()));
  row("Tier", absl::StrCat("<span class=\"tier\">", H(card.tier()), "</span>"));
  if (!card.missing().empty()) {
    std::vector<std::string> items;
    for (const auto& m : card.missing()) items.push_back(absl::StrCat("<li>", H(m), "</li>"));
    row("Missing for a tier", absl::StrCat("<ul>", absl::StrJoin(items, ""), "</ul>"));
  }
  if (!card.measured_part_tier().empty()) row("Measured part", H(card.measured_part_tier()));
  row("Why", H(card.tier_reason()));
  row("Generated", absl::StrCat(H(card.generated()), " by cmax ", H(card.cmax_version())));
  absl::StrAppend(out, "</table>\n");
}

void Categories(const v1::Scorecard& card, std::string* out) {
  absl::StrAppend(out, "<h2>Categories</h2>\n<table>\n<tr><th>Category</th><th>Grade</th>"
                       "<th>Evaluated on</th><th>Summary</th></tr>\n");
  for (const auto& c : card.categories()) {
    absl::StrAppend(out, "<tr><td>", H(c.name()),
                    c.simulated() ? " <span class=\"sim\">(simulated)</span>" : "",
                    "</td><td><span class=\"badge ", GradeClass(c.grade()), "\">", H(c.grade()),
                    "</span></td><td>", c.nodes_evaluated(), " of ", c.nodes_selected(),
                    " nodes</td><td>", H(c.summary()), "</td></tr>\n");
  }
  absl::StrAppend(out, "</table>\n");
}

void Nodes(const v1::Scorecard& card, std::string* out) {
  absl::StrAppend(out, "<h2>Nodes</h2>\n<table>\n<tr><th>Node</th><th>Verdict</th>"
                       "<th>Reasons</th></tr>\n");
  for (const auto& n : card.nodes()) {
    std::vector<std::string> reasons;
    for (const auto& r : n.reasons()) reasons.push_back(absl::StrCat("<li>", H(r), "</li>"));
    std::string cell = reasons.empty()
                           ? std::string("&mdash;")
                           : absl::StrCat("<ul>", absl::StrJoin(reasons, ""), "</ul>");
    if (!n.history().empty()) {
      absl::StrAppend(&cell, "<p>History (not judged):</p><ul>");
      for (const auto& h : n.history()) absl::StrAppend(&cell, "<li>", H(h), "</li>");
      absl::StrAppend(&cell, "</ul>");
    }
    absl::StrAppend(out, "<tr><td>", H(n.node()), "</td><td><span class=\"",
                    OutcomeClass(n.verdict()), "\">", H(n.verdict()), "</span></td><td>", cell,
                    "</td></tr>\n");
  }
  absl::StrAppend(out, "</table>\n");
}

void BarrierStarts(const v1::Scorecard& card, std::string* out) {
  if (card.barrier_starts().empty()) return;
  absl::StrAppend(out, "<h2>Barrier starts</h2>\n<p>When the nodes of each <code>scope: barrier"
                       "</code> entry really started, against the instant the coordinator gave "
                       "them (node clocks, shifted by the offsets estimated from heartbeats).</p>"
                       "\n<table>\n<tr><th>Entry</th><th>Nodes reporting</th><th>Start skew</th>"
                       "<th>Lag behind the instant</th><th>Without a start record</th></tr>\n");
  for (const auto& b : card.barrier_starts()) {
    absl::StrAppend(out, "<tr><td>", H(b.entry()), "</td><td>", b.nodes(), "</td><td>",
                    H(FormatValue(b.skew_ms(), "ms")), "</td><td>",
                    H(FormatNumber(b.min_lag_ms())), " to ", H(FormatValue(b.max_lag_ms(), "ms")),
                    "</td><td>", H(absl::StrJoin(b.missing(), ", ")), "</td></tr>\n");
  }
  absl::StrAppend(out, "</table>\n");
}

void Rule(const v1::RuleResult& r, std::string* out) {
  absl::StrAppend(out, "<li><span class=\"", OutcomeClass(r.outcome()), "\">",
                  H(OutcomeLabel(r.outcome())), "</span> <code>", H(r.rule_id()), "</code>");
  if (!r.node().empty()) absl::StrAppend(out, " on ", H(r.node()));
  absl::StrAppend(out, ": ", H(r.message()), "\n<ul class=\"ev\">");
  for (const auto& e : r.evidence()) {
    const size_t nl = e.find('\n');
    if (nl == std::string::npos) {
      absl::StrAppend(out, "<li>", H(e), "</li>");
    } else {
      absl::StrAppend(out, "<li>", H(e.substr(0, nl)), "<pre>", H(e.substr(nl + 1)),
                      "</pre></li>");
    }
  }
  if (!r.action().empty()) absl::StrAppend(out, "<li>Action: ", H(r.action()), "</li>");
  if (!r.links().empty()) {
    std::vector<std::string> links;
    for (const auto& l : r.links()) links.push_back(Link(l));
    absl::StrAppend(out, "<li>Links: ", absl::StrJoin(links, ", "), "</li>");
  }
  absl::StrAppend(out, "</ul></li>\n");
}

void Rules(const v1::Scorecard& card, std::string* out) {
  absl::StrAppend(out, "<h2>Rules by category</h2>\n");
  for (const auto& c : card.categories()) {
    absl::StrAppend(out, "<h3>", H(c.name()), " <span class=\"badge ", GradeClass(c.grade()),
                    "\">", H(c.grade()), "</span></h3>\n");
    if (c.simulated()) {
      absl::StrAppend(out, "<div class=\"banner\">", H(kSimulatedBanner), "</div>\n");
    }
    if (!c.evidence().empty()) {
      absl::StrAppend(out, "<ul>");
      for (const auto& e : c.evidence()) absl::StrAppend(out, "<li>", H(e), "</li>");
      absl::StrAppend(out, "</ul>\n");
    }
    if (c.rules().empty()) {
      absl::StrAppend(out, "<p>", c.measured() ? "No rule fired." : "Not measured.", "</p>\n");
      continue;
    }
    absl::StrAppend(out, "<ul>\n");
    for (const auto& r : c.rules()) Rule(r, out);
    absl::StrAppend(out, "</ul>\n");
  }
}

std::string SeverityClass(v1::Severity s) {
  switch (s) {
    case v1::SEVERITY_WARN:
      return "warn";
    case v1::SEVERITY_FAIL:
    case v1::SEVERITY_CRITICAL:
      return "fail";
    default:
      return "nm";
  }
}

void Findings(const v1::Scorecard& card, std::string* out) {
  absl::StrAppend(out, "<h2>Findings</h2>\n");
  if (card.findings().empty()) {
    absl::StrAppend(out, "<p>No findings.</p>\n");
    return;
  }
  absl::StrAppend(out, "<table>\n<tr><th>Severity</th><th>Node</th><th>Subject</th>"
                       "<th>Finding</th><th>Action</th><th>Links</th></tr>\n");
  for (const auto& f : card.findings()) {
    std::vector<std::string> links;
    for (const auto& l : f.links()) links.push_back(Link(l));
    std::string text = absl::StrCat("<strong>", H(f.title()), "</strong>");
    if (!f.detail().empty()) absl::StrAppend(&text, "<br>", H(f.detail()));
    if (!f.evidence().empty()) {
      absl::StrAppend(&text, "<ul class=\"ev\">");
      for (const auto& e : f.evidence()) {
        if (e.find('\n') == std::string::npos) {
          absl::StrAppend(&text, "<li>", H(e), "</li>");
        } else {
          absl::StrAppend(&text, "<li><pre>", H(e), "</pre></li>");
        }
      }
      absl::StrAppend(&text, "</ul>");
    }
    absl::StrAppend(&text, "<br><code>", H(f.check_id()), "</code>",
                    f.simulated() ? " <span class=\"sim\">(simulated)</span>" : "");
    absl::StrAppend(out, "<tr><td><span class=\"",
                    f.not_measured() ? std::string("nm") : SeverityClass(f.severity()), "\">",
                    f.not_measured() ? std::string("not measured") : H(SeverityName(f.severity())),
                    "</span></td><td>",
                    H(LabelValue(f.labels(), "node")), "</td><td>", H(f.subject()), "</td><td>",
                    text, "</td><td>", H(f.action()), "</td><td>", absl::StrJoin(links, "<br>"),
                    "</td></tr>\n");
  }
  absl::StrAppend(out, "</table>\n");
}

void Tasks(const v1::Scorecard& card, std::string* out) {
  absl::StrAppend(out, "<h2>Tasks</h2>\n");
  for (const auto& n : card.nodes()) {
    absl::StrAppend(out, "<h3>", H(n.node()), "</h3>\n");
    if (n.tasks().empty()) {
      absl::StrAppend(out, "<p>No tasks.</p>\n");
      continue;
    }
    absl::StrAppend(out, "<table>\n<tr><th>Task</th><th>Suite</th><th>State</th><th>Exit code</th>"
                         "<th>Attempt</th><th>Records</th><th>Message</th></tr>\n");
    for (const auto& t : n.tasks()) {
      absl::StrAppend(out, "<tr><td>", H(t.task_id()), "</td><td>",
                      H(t.name().empty() ? t.suite() : t.name()), "</td><td>", H(t.state()),
                      "</td><td>", t.exit_code(), "</td><td>", t.attempt(), "</td><td>",
                      t.records(), "</td><td>", H(t.message()));
      if (!t.stderr_tail().empty()) {
        absl::StrAppend(out, "<pre>", H(t.stderr_tail()), "</pre>");
      }
      absl::StrAppend(out, "</td></tr>\n");
    }
    absl::StrAppend(out, "</table>\n");
  }
}

void Measurements(const v1::Scorecard& card, std::string* out) {
  if (card.measurements().empty()) return;
  absl::StrAppend(out, "<h2>Key measurements</h2>\n<table>\n<tr><th>Node</th><th>Suite</th>"
                       "<th>Metric</th><th>Value</th><th>Labels</th></tr>\n");
  for (const auto& m : card.measurements()) {
    std::map<std::string, std::string> labels(m.labels().begin(), m.labels().end());
    labels.erase("node");
    absl::StrAppend(out, "<tr><td>", H(LabelValue(m.labels(), "node")), "</td><td>",
                    H(m.suite()), "</td><td>", H(m.metric()), "</td><td>",
                    H(FormatValue(m.value(), m.unit())),
                    m.simulated() ? " <span class=\"sim\">(simulated)</span>" : "", "</td><td>",
                    H(absl::StrJoin(labels, ", ", absl::PairFormatter("="))), "</td></tr>\n");
  }
  absl::StrAppend(out, "</table>\n");
}

}  // namespace

std::string RenderHtml(const v1::Scorecard& card) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  absl::StrAppend(&out, "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
                  "<title>cmax scorecard ", H(card.run_id()), "</title>\n<style>", kStyle,
                  "</style>\n</head>\n<body>\n");
  Header(card, &out);
  Categories(card, &out);
  out += RenderCostHtml(card);  // cost section (reports/cost.h)
  Nodes(card, &out);
  BarrierStarts(card, &out);
  Rules(card, &out);
  Findings(card, &out);
  Tasks(card, &out);
  Measurements(card, &out);
  absl::StrAppend(&out, "</body>\n</html>\n");
  return out;
}

}  // namespace cmax::reports
