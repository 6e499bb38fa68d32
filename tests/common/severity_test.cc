// Severity names (common/severity.h): one table for both directions.
#include "common/severity.h"

#include <catch2/catch.hpp>

#include "common/record_io.h"

TEST_CASE("every severity's name reads back as the same severity", "[severity]") {
  for (auto s : {cmax::v1::SEVERITY_INFO, cmax::v1::SEVERITY_WARN, cmax::v1::SEVERITY_FAIL,
                 cmax::v1::SEVERITY_CRITICAL}) {
    CHECK(cmax::ParseSeverity(cmax::SeverityName(s)) == s);
  }
  CHECK(cmax::SeverityName(cmax::v1::SEVERITY_INFO) == "info");
  CHECK(cmax::SeverityName(cmax::v1::SEVERITY_WARN) == "warn");
  CHECK(cmax::SeverityName(cmax::v1::SEVERITY_FAIL) == "fail");
  CHECK(cmax::SeverityName(cmax::v1::SEVERITY_CRITICAL) == "critical");
}

TEST_CASE("an unknown severity is unspecified both ways", "[severity]") {
  CHECK(cmax::SeverityName(cmax::v1::SEVERITY_UNSPECIFIED) == "unspecified");
  CHECK(cmax::SeverityName(static_cast<cmax::v1::Severity>(17)) == "unspecified");
  CHECK(cmax::ParseSeverity("unspecified") == cmax::v1::SEVERITY_UNSPECIFIED);
  CHECK(cmax::ParseSeverity("") == cmax::v1::SEVERITY_UNSPECIFIED);
  CHECK(cmax::ParseSeverity("FAIL") == cmax::v1::SEVERITY_UNSPECIFIED);
  CHECK(cmax::ParseSeverity("warning") == cmax::v1::SEVERITY_UNSPECIFIED);
}
