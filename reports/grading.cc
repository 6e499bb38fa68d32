#include "reports/grading.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "reports/coverage.h"
#include "reports/judge_util.h"
#include "reports/outcome_order.h"

namespace cmax::reports {
namespace {

constexpr double kFailingNodeShare = 0.10;  // C allows fails on up to 10% of nodes

// Categories Platinum requires measured: those a tier needs (coverage.h).
const std::vector<std::string>& PlatinumCategories() { return RatedCategories(); }

}  // namespace

bool IsMeasured(const CategoryTally& t) {
  return t.has_records || t.critical + t.fail + t.warn + t.pass > 0;
}

std::string GradeFor(const CategoryTally& t) {
  if (!IsMeasured(t)) return kNotMeasured;
  if (t.critical > 0) return "F";
  if (t.fail > 0) {
    if (t.fleet_wide_fail) return "D";
    const size_t allowed = std::max<size_t>(
        1, static_cast<size_t>(std::floor(kFailingNodeShare *
                                          static_cast<double>(t.measured_nodes.size()))));
    // Every measured node failing is the fleet failing, however small: a
    // 1-node run of a bad node grades as 10,000 such nodes would (D), not
    // as a few bad nodes among good ones (C).
    if (t.failing_nodes.size() >= t.measured_nodes.size()) return "D";
    return t.failing_nodes.size() <= allowed ? "C" : "D";
  }
  if (t.warn > 0) return "B";
  return "A";
}

TierDecision TierFor(const std::vector<v1::CategoryGrade>& categories,
                     const std::vector<std::string>& security_critical) {
  std::vector<std::string> measured, unmeasured;
  int worst = -1;
  for (const auto& c : categories) {
    if (c.measured()) {
      measured.push_back(c.name());
      worst = std::max(worst, GradeIndex(c.grade()));
    } else {
      unmeasured.push_back(c.name());
    }
  }
  TierDecision d;
  if (measured.empty()) {
    d.tier = kNotRated;
    d.reason = "no category was measured";
    return d;
  }
  const std::string worst_grade = GradesBestFirst()[std::max(worst, 0)];
  std::vector<std::string> setters;
  for (const auto& c : categories) {
    if (c.measured() && c.grade() == worst_grade) setters.push_back(c.name());
  }
  d.tier = TierForGrade(worst_grade);
  std::vector<std::string> parts;
  parts.push_back(absl::StrCat("worst grade ", worst_grade, " (", absl::StrJoin(setters, ", "),
                               ") gives ", d.tier));
  if (!security_critical.empty()) {
    d.tier = "Underperform";
    parts.push_back(absl::StrCat("a critical Security finding caps the tier at Underperform: ",
                                 security_critical.front()));
  }
  if (d.tier == "Platinum") {
    std::vector<std::string> missing;
    for (const auto& name : PlatinumCategories()) {
      if (std::find(measured.begin(), measured.end(), name) == measured.end()) {
        missing.push_back(name);
      }
    }
    if (!missing.empty()) {
      d.tier = "Gold";
      parts.push_back(absl::StrCat("capped at Gold: Platinum needs ",
                                   absl::StrJoin(missing, ", "), " measured too"));
    }
  }
  if (unmeasured.empty()) {
    parts.push_back(absl::StrCat("tier covers all ", categories.size(), " categories"));
  } else {
    parts.push_back(absl::StrCat("tier covers ", absl::StrJoin(measured, ", "), " only; ",
                                 absl::StrJoin(unmeasured, ", "), " not measured"));
  }
  d.reason = absl::StrJoin(parts, "; ");
  return d;
}

}  // namespace cmax::reports
