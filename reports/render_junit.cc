// JUnit XML rendering of a scorecard, so CI systems (Jenkins, GitLab,
// GitHub test reporters) show a run's failures. The layout follows the
// de-facto JUnit schema the Jenkins JUnit plugin and Ant write
// (<testsuites>/<testsuite>/<testcase> with <failure>, <error>, <skipped>):
//   - one <testsuite> per node (name = the node), plus one named "fleet" for
//     fleet-wide rule results (no node);
//   - per node, one <testcase> per category (name "category:Compute") from
//     the node x category grid, and one per rule that fired on the node or
//     was not measured there (name = rule_id and subject);
//   - outcome fail -> <failure>, critical -> <error>, not measured ->
//     <skipped> with the reason; warn passes with the warning in
//     <system-out> (JUnit has no warning state); pass has no child.
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "reports/judge_util.h"
#include "reports/scorecard.h"

namespace cmax::reports {
namespace {

// Escaped for XML 1.0 text and attributes; characters XML 1.0 cannot carry
// (controls other than tab, newline, carriage return) become '?'.
std::string X(const std::string& text) {
  std::string out;
  out.reserve(text.size() + 16);
  for (char ch : text) {
    const unsigned char u = static_cast<unsigned char>(ch);
    switch (ch) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if (u < 0x20 && ch != '\t' && ch != '\n' && ch != '\r') {
          out.push_back('?');
        } else {
          out.push_back(ch);
        }
    }
  }
  return out;
}

struct Case {
  std::string name, classname;
  std::string outcome;  // pass, warn, fail, critical, not_measured
  std::string message;  // one line
  std::string detail;   // evidence, action
};

struct Suite {
  std::string name;
  std::vector<Case> cases;
};

// A text from the data, cut at kMaxText bytes (a judge's evidence can list
// every pair of a large fleet); the JSON scorecard keeps it whole.
constexpr size_t kMaxText = 2000;
constexpr int kMaxEvidence = 20;

std::string Clip(const std::string& text) {
  if (text.size() <= kMaxText) return text;
  size_t cut = kMaxText;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return absl::StrCat(text.substr(0, cut), " ... (", text.size() - cut,
                      " more bytes in the JSON scorecard)");
}

std::string Detail(const v1::RuleResult& r) {
  std::vector<std::string> lines;
  if (!r.subject().empty()) lines.push_back(absl::StrCat("subject: ", r.subject()));
  for (int i = 0; i < r.evidence_size(); ++i) {
    if (i == kMaxEvidence) {
      lines.push_back(absl::StrCat("... ", r.evidence_size() - kMaxEvidence,
                                   " more evidence lines in the JSON scorecard"));
      break;
    }
    lines.push_back(Clip(r.evidence(i)));
  }
  if (!r.action().empty()) lines.push_back(absl::StrCat("action: ", r.action()));
  for (const auto& l : r.links()) lines.push_back(absl::StrCat("link: ", l));
  return absl::StrJoin(lines, "\n");
}

void WriteCase(const Case& c, std::string* out) {
  absl::StrAppend(out, "    <testcase classname=\"", X(c.classname), "\" name=\"", X(c.name),
                  "\" time=\"0\"");
  if (c.outcome == "pass") {
    absl::StrAppend(out, "/>\n");
    return;
  }
  absl::StrAppend(out, ">\n");
  if (c.outcome == "fail") {
    absl::StrAppend(out, "      <failure type=\"fail\" message=\"", X(c.message), "\">",
                    X(c.detail), "</failure>\n");
  } else if (c.outcome == "critical") {
    absl::StrAppend(out, "      <error type=\"critical\" message=\"", X(c.message), "\">",
                    X(c.detail), "</error>\n");
  } else if (c.outcome == "not_measured") {
    absl::StrAppend(out, "      <skipped message=\"", X(absl::StrCat("not measured: ", c.message)),
                    "\"/>\n");
  } else {  // warn
    absl::StrAppend(out, "      <system-out>", X(absl::StrCat("warn: ", c.message, "\n", c.detail)),
                    "</system-out>\n");
  }
  absl::StrAppend(out, "    </testcase>\n");
}

}  // namespace

std::string RenderJunit(const v1::Scorecard& card) {
  std::map<std::string, Suite> suites;
  std::vector<std::string> order;
  auto suite = [&](const std::string& name) -> Suite& {
    auto [it, inserted] = suites.try_emplace(name);
    if (inserted) {
      it->second.name = name;
      order.push_back(name);
    }
    return it->second;
  };
  // Every node, in the card's order, with one case per category.
  for (const auto& g : card.node_grid()) {
    Suite& s = suite(g.node());
    const v1::NodeVerdict* verdict = nullptr;
    for (const auto& n : card.nodes()) {
      if (n.node() == g.node()) verdict = &n;
    }
    for (int i = 0; i < g.outcomes_size() && i < card.categories_size(); ++i) {
      const std::string& cat = card.categories(i).name();
      Case c;
      c.classname = absl::StrCat("cmax.", g.node());
      c.name = absl::StrCat("category:", cat);
      const std::string& o = g.outcomes(i);
      c.outcome = o == "partial" ? "warn" : o;
      // The node's own reasons for this category are the message.
      std::vector<std::string> why;
      if (verdict) {
        for (const auto& r : verdict->reasons()) {
          if (r.rfind(cat + " ", 0) == 0) why.push_back(r);
        }
      }
      if (c.outcome == "not_measured" && why.empty()) {
        why.push_back(absl::StrCat("nothing in ", cat, " was evaluated on this node"));
      }
      c.message = why.empty() ? std::string() : Clip(why.front());
      for (auto& w : why) w = Clip(w);
      c.detail = absl::StrJoin(why, "\n");
      s.cases.push_back(std::move(c));
    }
  }
  // Rule results: one case per node they name, or in "fleet".
  for (const auto& cat : card.categories()) {
    for (const auto& r : cat.rules()) {
      std::vector<std::string> nodes = SplitNodes(r.node());
      if (nodes.empty()) nodes.push_back("");
      for (const auto& n : nodes) {
        Case c;
        c.classname = n.empty() ? "cmax.fleet" : absl::StrCat("cmax.", n);
        c.name = r.subject().empty() || r.subject() == "node"
                     ? r.rule_id()
                     : absl::StrCat(r.rule_id(), " ", r.subject());
        c.outcome = r.outcome();
        c.message = Clip(r.message());
        c.detail = Detail(r);
        suite(n.empty() ? "fleet" : n).cases.push_back(std::move(c));
      }
    }
  }
  int tests = 0, failures = 0, errors = 0, skipped = 0;
  std::string body;
  for (const auto& name : order) {
    const Suite& s = suites[name];
    int f = 0, e = 0, k = 0;
    for (const auto& c : s.cases) {
      if (c.outcome == "fail") ++f;
      if (c.outcome == "critical") ++e;
      if (c.outcome == "not_measured") ++k;
    }
    tests += static_cast<int>(s.cases.size());
    failures += f;
    errors += e;
    skipped += k;
    absl::StrAppend(&body, "  <testsuite name=\"", X(s.name), "\" tests=\"", s.cases.size(),
                    "\" failures=\"", f, "\" errors=\"", e, "\" skipped=\"", k,
                    "\" time=\"0\">\n");
    for (const auto& c : s.cases) WriteCase(c, &body);
    absl::StrAppend(&body, "  </testsuite>\n");
  }
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  std::string title = absl::StrCat("cmax scorecard ", card.run_id());
  if (card.simulated()) absl::StrAppend(&title, " (", kSimulatedBanner, ")");
  absl::StrAppend(&out, "<testsuites name=\"", X(title),
                  "\" tests=\"", tests, "\" failures=\"", failures, "\" errors=\"", errors,
                  "\" skipped=\"", skipped, "\">\n");
  std::string tier = X(card.tier());  // "--" may not occur in a comment
  for (size_t i = tier.find("--"); i != std::string::npos; i = tier.find("--")) {
    tier.replace(i, 2, "- -");
  }
  absl::StrAppend(&out, "  <!-- tier: ", tier, " -->\n");
  absl::StrAppend(&out, body, "</testsuites>\n");
  return out;
}

}  // namespace cmax::reports
