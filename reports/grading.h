// The grading rules of RULES.md: a category's grade from the tally of its
// rule results, and the tier from the category grades. Pure functions.
#ifndef CMAX_REPORTS_GRADING_H_
#define CMAX_REPORTS_GRADING_H_

#include <set>
#include <string>
#include <vector>

#include "cmax/v1/scorecard.pb.h"

namespace cmax::reports {

inline constexpr char kNotMeasured[] = "not measured";
inline constexpr char kNotRated[] = "not rated";

// What one category's rule results and records add up to.
struct CategoryTally {
  int critical = 0, fail = 0, warn = 0, pass = 0, not_measured = 0;
  bool has_records = false;       // some Measurement or Finding feeds it
  bool fleet_wide_fail = false;   // a fail with no node (not confined to nodes)
  std::set<std::string> measured_nodes;
  std::set<std::string> failing_nodes;  // nodes with a fail (not critical)
};

// Measured: any record feeds the category or any result other than
// not_measured exists.
bool IsMeasured(const CategoryTally& t);

// "not measured" when not measured; F with any critical; D with a
// fleet-wide fail or fails on more than max(1, 10% of the measured nodes);
// C with fails within that; B with warnings only; else A.
std::string GradeFor(const CategoryTally& t);

struct TierDecision {
  std::string tier;    // Platinum, Gold, Silver, Bronze, Underperform, not rated
  std::string reason;
};

// From the graded categories (name, grade, measured). A critical
// Security result (`security_critical` non-empty: its messages) caps the
// tier at Underperform; Platinum needs every category of RatedCategories()
// (coverage.h) measured, otherwise it is capped at Gold.
TierDecision TierFor(const std::vector<v1::CategoryGrade>& categories,
                     const std::vector<std::string>& security_critical);

}  // namespace cmax::reports

#endif  // CMAX_REPORTS_GRADING_H_
