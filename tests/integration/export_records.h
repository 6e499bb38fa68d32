// What a run left behind, read the way a user reads it, for the integration
// tests (Catch2 assertions: a failed command fails the test): every stored
// record (`cmaxctl export`) and the scorecard (`cmaxctl report --format json`).
#ifndef CMAX_TESTS_INTEGRATION_EXPORT_RECORDS_H_
#define CMAX_TESTS_INTEGRATION_EXPORT_RECORDS_H_

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "cmax/v1/scorecard.pb.h"
#include "cmax/v1/service.pb.h"
#include "google/protobuf/util/json_util.h"
#include "tests/integration/cluster.h"

namespace cmax::testing {

inline std::vector<v1::ExportedRecord> Export(Cluster& c, const std::string& run_id) {
  auto r = c.Ctl({"export", run_id}, std::chrono::seconds(120));
  INFO(r.err);
  REQUIRE(r.exit.code == 0);
  std::vector<v1::ExportedRecord> out;
  for (absl::string_view line : absl::StrSplit(r.out, '\n', absl::SkipEmpty())) {
    v1::ExportedRecord rec;
    REQUIRE(google::protobuf::util::JsonStringToMessage(std::string(line), &rec).ok());
    out.push_back(rec);
  }
  return out;
}

inline v1::Scorecard ReportCard(Cluster& c, const std::string& run_id) {
  auto r = c.Ctl({"report", run_id, "--format", "json"});
  INFO(r.err);
  REQUIRE(r.exit.code == 0);
  v1::Scorecard card;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  REQUIRE(google::protobuf::util::JsonStringToMessage(r.out, &card, opts).ok());
  return card;
}

// The category named `name` ("Storage"); fails the test when it is missing.
inline const v1::CategoryGrade& CategoryOf(const v1::Scorecard& card, const std::string& name) {
  for (const auto& cat : card.categories()) {
    if (cat.name() == name) return cat;
  }
  FAIL("no category " << name << " in the scorecard");
  return card.categories(0);
}

// Every rule result of the card with this rule id, in any category.
inline std::vector<v1::RuleResult> RulesWithId(const v1::Scorecard& card, const std::string& id) {
  std::vector<v1::RuleResult> out;
  for (const auto& cat : card.categories()) {
    for (const auto& r : cat.rules()) {
      if (r.rule_id() == id) out.push_back(r);
    }
  }
  return out;
}

}  // namespace cmax::testing

#endif  // CMAX_TESTS_INTEGRATION_EXPORT_RECORDS_H_
