#include "reports/outcome_order.h"

#include <algorithm>
#include <iterator>

namespace cmax::reports {
namespace {

struct Ranked {
  const char* word;
  int badness;
};

// The one table of outcome words, best first.
constexpr Ranked kOutcomes[] = {{"pass", 0}, {"info", 1},  {"not_measured", 2},
                                {"warn", 3}, {"fail", 4}, {"critical", 5}};

// Grades best first and the tier each gives as the worst grade.
struct GradeTier {
  const char* grade;
  const char* tier;
};
constexpr GradeTier kGrades[] = {
    {"A", "Platinum"}, {"B", "Gold"}, {"C", "Silver"}, {"D", "Bronze"}, {"F", "Underperform"}};
constexpr int kGradeCount = static_cast<int>(std::size(kGrades));

}  // namespace

int OutcomeBadness(std::string_view word) {
  for (const Ranked& r : kOutcomes) {
    if (word == r.word) return r.badness;
  }
  return 0;
}

std::string OutcomeWord(int badness) {
  for (const Ranked& r : kOutcomes) {
    if (badness == r.badness) return r.word;
  }
  return "pass";
}

bool OutcomeFired(std::string_view outcome) {
  return OutcomeBadness(outcome) >= OutcomeBadness("warn");
}

std::string VerdictForBadness(int badness) {
  if (badness >= OutcomeBadness("fail")) return "fail";
  if (badness >= OutcomeBadness("warn")) return "warn";
  return "pass";
}

const std::vector<std::string>& ReasonOutcomes() {
  static const std::vector<std::string> words = [] {
    std::vector<std::string> w;
    for (const Ranked& r : kOutcomes) {
      if (r.badness >= OutcomeBadness("not_measured") && std::string_view(r.word) != "info") {
        w.insert(w.begin(), r.word);
      }
    }
    return w;
  }();
  return words;
}

std::string OutcomeLabel(std::string_view outcome) {
  return outcome == "not_measured" ? "not measured" : std::string(outcome);
}

const std::vector<std::string>& GradesBestFirst() {
  static const std::vector<std::string> grades = [] {
    std::vector<std::string> g;
    for (const GradeTier& t : kGrades) g.push_back(t.grade);
    return g;
  }();
  return grades;
}

int GradeIndex(std::string_view grade) {
  for (int i = 0; i < kGradeCount; ++i) {
    if (grade == kGrades[i].grade) return i;
  }
  return -1;
}

int GradePoints(std::string_view grade) {
  const int i = GradeIndex(grade);
  return i < 0 ? 0 : kGradeCount - 1 - i;
}

std::string TierForGrade(std::string_view grade) {
  const int i = GradeIndex(grade);
  return kGrades[i < 0 ? kGradeCount - 1 : i].tier;
}

int TierPoints(std::string_view tier) {
  for (int i = 0; i < kGradeCount; ++i) {
    if (tier == kGrades[i].tier) return kGradeCount - i;
  }
  return 0;
}

}  // namespace cmax::reports
