// Builds a run's scorecard from its data and renders it. The rules (grades,
// verdicts, tier) are documented in reports/RULES.md.
#ifndef CMAX_REPORTS_SCORECARD_H_
#define CMAX_REPORTS_SCORECARD_H_

#include <string>

#include "absl/strings/string_view.h"
#include "cmax/v1/scorecard.pb.h"
#include "reports/run_data.h"

namespace cmax::reports {

// Shown prominently by every rendering when card.simulated is true.
inline constexpr char kSimulatedBanner[] = "SIMULATED DATA \u2014 not a measurement";

// Runs every judge (judges.h) and aggregates: category grades (always the eight
// categories, in order), node verdicts with reasons and tasks, the tier with
// its reason, every finding, and up to 2000 key measurements. Pure apart from
// the `generated` timestamp.
v1::Scorecard BuildScorecard(const RunData& data);
// The same scorecard, moving the judged records out of `data` rather than
// copying them (half the memory); `data.records` is left empty and
// `data.record_set` null. For a big run, fill `data.record_set`
// (record_set.h: ~300 bytes a record instead of ~1.5 KB) rather than
// `data.records`: the card is the same.
v1::Scorecard BuildScorecard(RunData&& data);

// Proto JSON with the proto field names, pretty-printed.
std::string RenderJson(const v1::Scorecard& card);
// GitHub-flavoured Markdown; every text from the data is escaped.
std::string RenderMarkdown(const v1::Scorecard& card);
// One self-contained HTML file (inline CSS, inline SVG charts from
// card.charts, one small inline script for the findings filter; no external
// script, style sheet, font or image); every text from the data is
// HTML-escaped.
std::string RenderHtml(const v1::Scorecard& card);
// The inline script RenderHtml embeds, byte for byte (a server that sends the
// page names its hash in a Content-Security-Policy).
absl::string_view HtmlScript();
// JUnit XML (render_junit.cc): a <testsuite> per node (and "fleet"), a
// <testcase> per node and category and per node and rule; fail ->
// <failure>, critical -> <error>, not measured -> <skipped>.
std::string RenderJunit(const v1::Scorecard& card);

}  // namespace cmax::reports

#endif  // CMAX_REPORTS_SCORECARD_H_
