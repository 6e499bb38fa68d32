// The grading table of reports/RULES.md, case by case.
#include "reports/grading.h"

#include <catch2/catch.hpp>

#include "reports/scorecard.h"
#include "tests/reports/scorecard_test_util.h"

namespace cmax::reports {
namespace {

CategoryTally Nodes(int measured, int failing) {
  CategoryTally t;
  for (int i = 0; i < measured; ++i) t.measured_nodes.insert("node-" + std::to_string(i));
  for (int i = 0; i < failing; ++i) t.failing_nodes.insert("node-" + std::to_string(i));
  t.fail = failing;
  t.pass = measured - failing;
  return t;
}

TEST_CASE("grades follow the documented table", "[grading]") {
  CHECK(GradeFor(CategoryTally()) == "not measured");
  CategoryTally only_nm;
  only_nm.not_measured = 3;
  CHECK(GradeFor(only_nm) == "not measured");
  CategoryTally records;
  records.has_records = true;
  CHECK(GradeFor(records) == "A");
  CategoryTally warned = Nodes(3, 0);
  warned.warn = 1;
  CHECK(GradeFor(warned) == "B");
  CHECK(GradeFor(Nodes(3, 1)) == "C");
  CHECK(GradeFor(Nodes(3, 2)) == "D");
  CHECK(GradeFor(Nodes(16, 1)) == "C");
  CHECK(GradeFor(Nodes(16, 2)) == "D");
  CHECK(GradeFor(Nodes(100, 10)) == "C");
  CHECK(GradeFor(Nodes(100, 11)) == "D");
  // Every measured node failing: D however few (1 node of 1, 2 of 2), as
  // the same data on many nodes grades; one of two is C.
  CHECK(GradeFor(Nodes(1, 1)) == "D");
  CHECK(GradeFor(Nodes(2, 2)) == "D");
  CHECK(GradeFor(Nodes(2, 1)) == "C");
  CategoryTally fleet = Nodes(16, 0);
  fleet.fail = 1;
  fleet.fleet_wide_fail = true;
  CHECK(GradeFor(fleet) == "D");
  CategoryTally crit = Nodes(16, 0);
  crit.critical = 1;
  CHECK(GradeFor(crit) == "F");
}

v1::CategoryGrade Graded(const std::string& name, const std::string& grade) {
  v1::CategoryGrade c;
  c.set_name(name);
  c.set_grade(grade);
  c.set_measured(grade != kNotMeasured);
  return c;
}

TEST_CASE("the tier follows the worst grade, with its caps", "[grading]") {
  std::vector<v1::CategoryGrade> all = {Graded("Compute", "A"),     Graded("Networking", "B"),
                                        Graded("Storage", "A"),     Graded("Reliability", "A"),
                                        Graded("Security", "A"),    Graded("Lifecycle", "A"),
                                        Graded("Orchestration", "A"), Graded("Monitoring", "A")};
  auto d = TierFor(all, {});
  CHECK(d.tier == "Gold");
  CHECK(d.reason == "worst grade B (Networking) gives Gold; tier covers all 8 categories");

  all[1] = Graded("Networking", "A");
  CHECK(TierFor(all, {}).tier == "Platinum");
  all[5] = Graded("Lifecycle", kNotMeasured);
  CHECK(TierFor(all, {}).tier == "Platinum");  // Lifecycle is not required
  all[2] = Graded("Storage", kNotMeasured);
  d = TierFor(all, {});
  CHECK(d.tier == "Gold");
  CHECK(d.reason.find("capped at Gold: Platinum needs Storage measured too") != std::string::npos);
  CHECK(d.reason.find("Storage, Lifecycle not measured") != std::string::npos);
  // Orchestration and Monitoring are required for Platinum like the five.
  for (const char* name : {"Orchestration", "Monitoring"}) {
    auto without = all;
    without[2] = Graded("Storage", "A");
    for (auto& c : without) {
      if (c.name() == name) c = Graded(name, kNotMeasured);
    }
    d = TierFor(without, {});
    CHECK(d.tier == "Gold");
    CHECK(d.reason.find(std::string("capped at Gold: Platinum needs ") + name + " measured too") !=
          std::string::npos);
  }

  all[3] = Graded("Reliability", "D");
  CHECK(TierFor(all, {}).tier == "Bronze");
  all[4] = Graded("Security", "F");
  d = TierFor(all, {"node-2: runc is vulnerable"});
  CHECK(d.tier == "Underperform");
  CHECK(d.reason.find("runc is vulnerable") != std::string::npos);

  std::vector<v1::CategoryGrade> none;
  for (const char* n : {"Compute", "Networking", "Storage", "Reliability", "Security",
                        "Lifecycle"}) {
    none.push_back(Graded(n, kNotMeasured));
  }
  CHECK(TierFor(none, {}).tier == "not rated");
}

TEST_CASE("the scorecard keeps at most 2000 measurements and says so", "[grading]") {
  RunData d = testing::CleanHostcheckRun();
  for (int i = 0; i < 2500; ++i) {
    d.records.push_back(testing::Meas("node-1", "hostcheck", "sample_metric", i, "count"));
  }
  const v1::Scorecard card = BuildScorecard(d);
  CHECK(card.measurements_size() == 2000);
  bool noted = false;
  for (const auto& e : testing::Category(card, "Reliability").evidence()) {
    if (e.find("keeps the first 2000 of 2509 measurements") != std::string::npos) noted = true;
  }
  CHECK(noted);
}

}  // namespace
}  // namespace cmax::reports
