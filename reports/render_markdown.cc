// Markdown rendering of a scorecard (GitHub-flavoured: tables, fenced code).
// Every text that comes from the data is escaped, so a finding title cannot
// inject markup; links are made clickable only for http(s) URLs.
#include <algorithm>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "reports/cost.h"
#include "reports/coverage.h"
#include "reports/judge_util.h"
#include "reports/outcome_order.h"
#include "reports/scorecard.h"

namespace cmax::reports {
namespace {

// Backslash-escapes the characters that are markup in inline Markdown;
// newlines become <br> (inside tables) or spaces.
std::string Md(const std::string& text, bool table = true) {
  std::string out;
  out.reserve(text.size() + 8);
  for (char ch : text) {
    switch (ch) {
      case '\\': case '`': case '*': case '_': case '[': case ']': case '<': case '>':
      case '|': case '~': case '#': case '&': case '!':
        out.push_back('\\');
        out.push_back(ch);
        break;
      case '\r':
        break;
      case '\n':
        out += table ? "<br>" : " ";
        break;
      default:
        out.push_back(ch);
    }
  }
  return out;
}

// Inline code: a backtick inside would end the span, so it is replaced.
std::string Code(const std::string& text) {
  return absl::StrCat("`", absl::StrReplaceAll(text, {{"`", "'"}, {"\n", " "}, {"|", "\\|"}}), "`");
}

// [text](url) for a web link IsSafeWebLink accepts (text: the URL unless
// given), with the characters that would end the link percent-encoded;
// anything else as plain, escaped text.
std::string MdLink(const std::string& url, const std::string& text = "") {
  if (!IsSafeWebLink(url)) return Md(url);
  std::string target = absl::StrReplaceAll(url, {{"(", "%28"}, {")", "%29"}, {"|", "%7C"}});
  return absl::StrCat("[", Md(text.empty() ? url : text), "](", target, ")");
}

// A finding's links; the first, its advisory's page, named by the
// advisory's id (label "advisory") when it has one.
std::vector<std::string> FindingLinks(const v1::Finding& f) {
  std::vector<std::string> links;
  const std::string advisory = LabelValue(f.labels(), "advisory");
  for (const auto& l : f.links()) links.push_back(MdLink(l, links.empty() ? advisory : ""));
  return links;
}

// A fenced code block whose fence is longer than any backtick run inside.
std::string Fenced(const std::string& text, const std::string& indent = "") {
  size_t longest = 0, run = 0;
  for (char ch : text) {
    run = ch == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(std::max<size_t>(3, longest + 1), '`');
  std::string out = absl::StrCat(indent, fence, "text\n");
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    absl::StrAppend(&out, indent, line, "\n");
  }
  absl::StrAppend(&out, indent, fence, "\n");
  return out;
}

std::string Upper(const std::string& s) {
  std::string out = s;
  for (char& ch : out) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return out;
}

std::string UpperOutcomeLabel(const std::string& outcome) {
  return Upper(OutcomeLabel(outcome));  // "NOT MEASURED" for not_measured
}

void Header(const v1::Scorecard& card, std::string* out) {
  absl::StrAppend(out, "# cmax scorecard: ", Md(card.run_id()), "\n\n");
  if (card.simulated()) {
    std::vector<std::string> cats;
    for (const auto& c : card.categories()) {
      if (c.simulated()) cats.push_back(c.name());
    }
    absl::StrAppend(out, "> **\u26a0 ", kSimulatedBanner, "** \u2014 some values come from the ",
                    "simulated backend (", absl::StrJoin(cats, ", "), ").\n\n");
  }
  absl::StrAppend(out, "| | |\n|---|---|\n");
  absl::StrAppend(out, "| Run | ", Md(card.run_id()), " |\n");
  absl::StrAppend(out, "| Plan | ", Md(card.plan()), " |\n");
  absl::StrAppend(out, "| Started | ", Md(card.started()), " |\n");
  absl::StrAppend(out, "| Finished | ", Md(card.finished()), " |\n");
  absl::StrAppend(out, "| State | ", Md(card.state()), " |\n");
  absl::StrAppend(out, "| Tier | **", Md(card.tier()), "** |\n");
  if (!card.missing().empty()) {
    std::vector<std::string> items;
    for (const auto& m : card.missing()) items.push_back(Md(m));
    absl::StrAppend(out, "| Missing for a tier | ", absl::StrJoin(items, "<br>"), " |\n");
  }
  absl::StrAppend(out, "| Why | ", Md(card.tier_reason()), " |\n");
  absl::StrAppend(out, "| Generated | ", Md(card.generated()), " by cmax ",
                  Md(card.cmax_version()), " |\n\n");
}

void Categories(const v1::Scorecard& card, std::string* out) {
  absl::StrAppend(out, "## Categories\n\n| Category | Grade | Evaluated on | Summary |\n"
                       "|---|---|---|---|\n");
  for (const auto& c : card.categories()) {
    const std::string grade = c.measured() ? absl::StrCat("**", Md(c.grade()), "**")
                                           : Md(c.grade());
    absl::StrAppend(out, "| ", Md(c.name()), c.simulated() ? " (simulated)" : "", " | ", grade,
                    " | ", Md(EvaluatedOnText(c)), " | ", Md(c.summary()), " |\n");
  }
  absl::StrAppend(out, "\n");
}

void Nodes(const v1::Scorecard& card, std::string* out) {
  absl::StrAppend(out, "## Nodes\n\n| Node | Verdict | Reasons |\n|---|---|---|\n");
  for (const auto& n : card.nodes()) {
    std::vector<std::string> reasons;
    for (const auto& r : n.reasons()) reasons.push_back(Md(r));
    for (const auto& h : n.history()) reasons.push_back(absl::StrCat("history (not judged): ", Md(h)));
    absl::StrAppend(out, "| ", Md(n.node()), " | **", Upper(n.verdict()), "** | ",
                    reasons.empty() ? std::string("\u2014") : absl::StrJoin(reasons, "<br>"),
                    " |\n");
  }
  absl::StrAppend(out, "\n");
}

void BarrierStarts(const v1::Scorecard& card, std::string* out) {
  if (card.barrier_starts().empty()) return;
  absl::StrAppend(out, "## Barrier starts\n\nWhen the nodes of each `scope: barrier` entry "
                       "really started, against the instant the coordinator gave them (node "
                       "clocks, shifted by the offsets estimated from heartbeats).\n\n"
                       "| Entry | Nodes reporting | Start skew | Lag behind the instant | "
                       "Without a start record |\n|---|---|---|---|---|\n");
  for (const auto& b : card.barrier_starts()) {
    absl::StrAppend(out, "| ", Md(b.entry()), " | ", b.nodes(), " | ",
                    Md(FormatValue(b.skew_ms(), "ms")), " | ", Md(FormatNumber(b.min_lag_ms())),
                    " to ", Md(FormatValue(b.max_lag_ms(), "ms")), " | ",
                    Md(absl::StrJoin(b.missing(), ", ")), " |\n");
  }
  absl::StrAppend(out, "\n");
}

void Rule(const v1::RuleResult& r, std::string* out) {
  absl::StrAppend(out, "- **", UpperOutcomeLabel(r.outcome()), "** ", Code(r.rule_id()));
  if (!r.node().empty()) absl::StrAppend(out, " on ", Md(r.node(), false));
  absl::StrAppend(out, ": ", Md(r.message(), false), "\n");
  for (const auto& e : r.evidence()) {
    if (e.find('\n') == std::string::npos) {
      absl::StrAppend(out, "  - ", Md(e, false), "\n");
    } else {
      const size_t nl = e.find('\n');
      absl::StrAppend(out, "  - ", Md(e.substr(0, nl), false), "\n\n",
                      Fenced(e.substr(nl + 1), "    "), "\n");
    }
  }
  if (!r.action().empty()) absl::StrAppend(out, "  - Action: ", Md(r.action(), false), "\n");
  if (!r.links().empty()) {
    std::vector<std::string> links;
    for (const auto& l : r.links()) links.push_back(MdLink(l));
    absl::StrAppend(out, "  - Links: ", absl::StrJoin(links, ", "), "\n");
  }
}

void Rules(const v1::Scorecard& card, std::string* out) {
  absl::StrAppend(out, "## Rules by category\n\n");
  for (const auto& c : card.categories()) {
    absl::StrAppend(out, "### ", Md(c.name()), ": ", Md(c.grade()), "\n\n");
    if (c.simulated()) absl::StrAppend(out, "> **", kSimulatedBanner, "**\n\n");
    // Its coverage in full: the summary cell names three reasons at most.
    if (!c.coverage().empty()) absl::StrAppend(out, "Coverage: ", Md(c.coverage(), false), "\n\n");
    for (const auto& e : c.evidence()) absl::StrAppend(out, "- ", Md(e, false), "\n");
    if (!c.evidence().empty()) absl::StrAppend(out, "\n");
    if (c.rules().empty()) {
      absl::StrAppend(out, c.measured() ? "No rule fired.\n\n" : "Not measured.\n\n");
      continue;
    }
    for (const auto& r : c.rules()) Rule(r, out);
    absl::StrAppend(out, "\n");
  }
}

void Findings(const v1::Scorecard& card, std::string* out) {
  absl::StrAppend(out, "## Findings\n\n");
  if (card.findings().empty()) {
    absl::StrAppend(out, "No findings.\n\n");
    return;
  }
  absl::StrAppend(out, "| Severity | Node | Subject | Finding | Action | Links |\n"
                       "|---|---|---|---|---|---|\n");
  for (const auto& f : card.findings()) {
    std::string text = absl::StrCat("**", Md(f.title()), "**");
    if (!f.detail().empty()) absl::StrAppend(&text, "<br>", Md(f.detail()));
    absl::StrAppend(&text, "<br>", Code(f.check_id()), f.simulated() ? " (simulated)" : "");
    const std::vector<std::string> links = FindingLinks(f);
    absl::StrAppend(out, "| ", f.not_measured() ? std::string("NOT MEASURED")
                                                 : Upper(SeverityName(f.severity())),
                    " | ",
                    Md(LabelValue(f.labels(), "node")), " | ", Md(f.subject()), " | ", text, " | ",
                    Md(f.action()), " | ", absl::StrJoin(links, "<br>"), " |\n");
  }
  absl::StrAppend(out, "\n");
}

void Tasks(const v1::Scorecard& card, std::string* out) {
  absl::StrAppend(out, "## Tasks\n\n");
  for (const auto& n : card.nodes()) {
    absl::StrAppend(out, "### ", Md(n.node()), "\n\n");
    if (n.tasks().empty()) {
      absl::StrAppend(out, "No tasks.\n\n");
      continue;
    }
    absl::StrAppend(out, "| Task | Suite | State | Exit code | Attempt | Records | Message |\n"
                         "|---|---|---|---|---|---|---|\n");
    for (const auto& t : n.tasks()) {
      absl::StrAppend(out, "| ", Md(t.task_id()), " | ", Md(t.name().empty() ? t.suite() : t.name()),
                      " | ", Md(TaskStateShown(t)), " | ", t.exit_code(), " | ", t.attempt(), " | ",
                      t.records(), " | ", Md(t.message()), " |\n");
    }
    absl::StrAppend(out, "\n");
    for (const auto& t : n.tasks()) {
      if (t.stderr_tail().empty()) continue;
      absl::StrAppend(out, "stderr tail of ", Md(t.task_id(), false), ":\n\n",
                      Fenced(t.stderr_tail()), "\n");
    }
  }
}

void Measurements(const v1::Scorecard& card, std::string* out) {
  if (card.measurements().empty()) return;
  absl::StrAppend(out, "## Key measurements\n\n| Node | Suite | Metric | Value | Labels |\n"
                       "|---|---|---|---|---|\n");
  for (const auto& m : card.measurements()) {
    std::map<std::string, std::string> labels(m.labels().begin(), m.labels().end());
    labels.erase("node");
    absl::StrAppend(out, "| ", Md(LabelValue(m.labels(), "node")), " | ", Md(m.suite()), " | ",
                    Md(m.metric()), " | ", Md(FormatValue(m.value(), m.unit())),
                    m.simulated() ? " (simulated)" : "", " | ",
                    Md(absl::StrJoin(labels, ", ", absl::PairFormatter("="))), " |\n");
  }
  absl::StrAppend(out, "\n");
}

}  // namespace

std::string RenderMarkdown(const v1::Scorecard& card) {
  std::string out;
  Header(card, &out);
  Categories(card, &out);
  if (!card.baseline().empty()) {
    absl::StrAppend(&out, "Judged against baseline ", Md(card.baseline(), false), ".\n\n");
  }
  out += RenderCostMarkdown(card);
  Nodes(card, &out);
  BarrierStarts(card, &out);
  Rules(card, &out);
  Findings(card, &out);
  Tasks(card, &out);
  Measurements(card, &out);
  return out;
}

}  // namespace cmax::reports
