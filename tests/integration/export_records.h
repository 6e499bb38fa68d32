// Every stored record of a run, as `cmaxctl export` prints it, for the
// integration tests (Catch2 assertions: a failed export fails the test).
#ifndef CMAX_TESTS_INTEGRATION_EXPORT_RECORDS_H_
#define CMAX_TESTS_INTEGRATION_EXPORT_RECORDS_H_

#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
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

}  // namespace cmax::testing

#endif  // CMAX_TESTS_INTEGRATION_EXPORT_RECORDS_H_
