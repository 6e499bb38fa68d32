// Coverage (RULES.md, "Coverage"): which nodes each category and each plan
// entry evaluated, and whether that is enough for a tier. A node is
// evaluated in a category by a record that evaluated it (judged_view.h,
// Evaluates) feeding that category, or by a rule result in it whose outcome
// came from evidence (anything but not_measured). Records of a completed
// group task evaluate every node of the group (each rank took part, though
// one rank may write the figures). Pure functions.
#ifndef CMAX_REPORTS_COVERAGE_H_
#define CMAX_REPORTS_COVERAGE_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "cmax/v1/scorecard.pb.h"
#include "reports/run_data.h"

namespace cmax::reports {

// A tier needs each of these evaluated on at least kRatedShare of the
// selected nodes, and each of their plan entries on at least that share of
// the nodes it ran on. Lifecycle is graded by fleet rules only and is not
// required. Orchestration is: a customer's jobs reach the GPUs through the
// scheduler, so a tier says how it is set up (a bare metal plan runs the
// orchestration suite with managed: false, which evaluates nothing there and
// leaves the run not rated: RULES.md, "Tier"). Monitoring is too: a failure
// nobody sees is not caught.
const std::vector<std::string>& RatedCategories();
inline constexpr double kRatedShare = 0.90;

// Nodes needed out of `n` for kRatedShare: ceil(0.9 n) (3 of 3, 9 of 10, 58 of 64).
int NodesNeeded(int n);

struct CategoryCoverage {
  std::set<std::string> evaluated;           // selected nodes evaluated here
  std::vector<v1::EntryCoverage> entries;    // the plan entries of this category
  // Per entry (same order as `entries`): (node, reason) for each node it
  // ran on and evaluated nothing on, ungrouped, for the not-rated headline.
  std::vector<std::vector<std::pair<std::string, std::string>>> entry_why;
  // Fleet-wide rule results here (no node), and those not not_measured.
  int fleet_rules = 0;
  int fleet_rules_evaluated = 0;
};

struct Coverage {
  int selected = 0;
  std::map<std::string, CategoryCoverage> categories;  // every category name
  // node -> plan entries that ran on it and evaluated nothing there, with why
  // ("Compute not measured: gemm could not run: no GPU driver").
  std::map<std::string, std::vector<std::string>> not_evaluated_on_node;
};

// `data` is the judged view; `results` the judges' normalised results.
Coverage ComputeCoverage(const RunData& data, const std::vector<v1::RuleResult>& results);

// "evaluated on 2 of 3 nodes; gemm on 3 of 3; memory on 0 of 3 (3 nodes
// (a, b, c): could not run: no GPU driver)". A category that evaluated no
// node of its own but has fleet-wide results says what those covered in
// place of the node count: "fleet rules: 2 of 2; the plan has no suite of
// this category".
std::string CoverageText(const CategoryCoverage& c, int selected);

// Judged by fleet-wide results alone: no plan entry, no node evaluated, some
// fleet rule (Lifecycle's inventory uniformity).
bool IsFleetOnly(const v1::CategoryGrade& c);

// The "Evaluated on" cell: "3 of 3 nodes", "1 of 1 node", or for a
// fleet-only category "fleet rules: 1 of 1".
std::string EvaluatedOnText(const v1::CategoryGrade& c);

// The plan entries' gaps, entries with the same counts and reasons said
// once, each reason cut to its cause: "gemm, memory on 0 of 3: 3 nodes (a,
// b, c): could not run: no GPU driver". One line per (entries, reason).
std::vector<std::string> EntryGaps(const CategoryCoverage& c);

// What keeps the run from a tier, one line per gap (empty: it may be rated),
// each plan entry in one line: "Compute evaluated on 0 of 3 nodes (needs
// 3)", "Compute: gemm, memory evaluated on 0 of 3 nodes (needs 3): 3 nodes
// (a, b, c): could not run: no GPU driver", "Storage: the plan has no suite
// of this category"; reasons cut to their cause (ShortCause). At most
// kMissingLines lines, the last then says how many more.
std::vector<std::string> MissingForTier(const Coverage& coverage);
inline constexpr size_t kMissingLines = 8;

// The not-rated headline, one sentence that groups the gaps by cause and
// says each cause once: "Compute and Networking not measured:
// cmax-bench-cuda is missing on 1 of 1 node; Storage not in the plan". At
// most kHeadlineCauses causes, then "and N more causes". Empty when
// MissingForTier is empty.
std::string NotRatedHeadline(const Coverage& coverage);
inline constexpr size_t kHeadlineCauses = 3;

// A reason's cause in a few words, for the headline: "could not run: no GPU
// driver: libcuda.so.1: ..." -> "no GPU driver"; "crashed (exit code 139):
// ..." -> "crashed (exit code 139)".
std::string ShortCause(const std::string& reason);

// "3 nodes (a, b, c): <reason>" / "node-2: <reason>": groups the nodes that
// share one reason, in first-seen order of the reasons.
std::vector<std::string> GroupReasons(
    const std::vector<std::pair<std::string, std::string>>& node_reason);

// A not-measured finding's reason: title and detail without verdict words.
std::string NotMeasuredReason(const v1::Finding& f);

// "could not run: not measured: no GPU" -> "no GPU": the verdict words that
// several layers (agent, suite, judge) each put in front of a reason.
std::string StripVerdictPrefixes(std::string reason);
// A suite's reason without its own name in front ("rdma could not run: no
// RDMA devices" or "rdma: no RDMA devices" for suite rdma -> "no RDMA
// devices"), for a line that already names the entry.
std::string WithoutSuitePrefix(std::string why, const std::string& suite);

}  // namespace cmax::reports

#endif  // CMAX_REPORTS_COVERAGE_H_
