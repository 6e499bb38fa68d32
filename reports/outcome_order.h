// The orders of the scorecard's words, each written once (reports/RULES.md,
// "Grading" and "Ranking"): how bad a rule outcome, a finding's severity or
// a node verdict is, and how good a grade or a tier is. The scorecard, the
// node grid, the HTML findings table, compare and rank all read these.
#ifndef CMAX_REPORTS_OUTCOME_ORDER_H_
#define CMAX_REPORTS_OUTCOME_ORDER_H_

#include <string>
#include <string_view>
#include <vector>

namespace cmax::reports {

// How bad a word is, higher worse, in one table:
//   0 "pass" (and any word not below), 1 "info", 2 "not_measured",
//   3 "warn", 4 "fail", 5 "critical".
// The words are a rule outcome (pass, warn, fail, critical, not_measured), a
// finding's severity key (info, warn, fail, critical, or not_measured) and a
// node verdict (pass, warn, fail).
int OutcomeBadness(std::string_view word);
// The word of a badness from the table ("pass" for 0 or anything unknown).
std::string OutcomeWord(int badness);
// Whether a rule outcome fired: warn or worse.
bool OutcomeFired(std::string_view outcome);
// A node's verdict for the worst badness among its rules: "fail" for fail or
// worse, "warn" for warn, else "pass" (not measured is added by the caller).
std::string VerdictForBadness(int badness);
// The words of rule outcomes that a node's reasons name, worst first:
// critical, fail, warn, not_measured.
const std::vector<std::string>& ReasonOutcomes();
// How a reason or an HTML label writes an outcome: "not measured" for
// "not_measured", any other word as is.
std::string OutcomeLabel(std::string_view outcome);

// The grades, best first: A, B, C, D, F.
const std::vector<std::string>& GradesBestFirst();
// 0 for A ... 4 for F; -1 for any other word (not measured).
int GradeIndex(std::string_view grade);
// Rank points of a grade: A 4, B 3, C 2, D 1, F and any other 0.
int GradePoints(std::string_view grade);
// The tier a worst grade gives: A Platinum, B Gold, C Silver, D Bronze, F
// (and any other word) Underperform.
std::string TierForGrade(std::string_view grade);
// How good a tier is: Platinum 5, Gold 4, Silver 3, Bronze 2, Underperform
// 1; 0 for "not rated" and any other word (it says less than any tier).
int TierPoints(std::string_view tier);

}  // namespace cmax::reports

#endif  // CMAX_REPORTS_OUTCOME_ORDER_H_
