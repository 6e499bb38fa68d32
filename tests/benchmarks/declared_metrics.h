// Every metric a suite writes is declared by that suite (a MetricSpec in
// benchmarks/<suite>/<suite>_declaration.cc). The test helpers that read a
// suite's records (suite_run.h ParseRecords, hence RunSuite, RunSuiteFn and
// CaptureRecords; collective's rank_runner) check each Measurement and
// Sample here, so every test that runs a suite, on any machine, fails on a
// metric its suite does not declare. suite_declarations_test.cc adds a scan
// of the suites' sources for the names written where no test runs them here.
#ifndef CMAX_TESTS_BENCHMARKS_DECLARED_METRICS_H_
#define CMAX_TESTS_BENCHMARKS_DECLARED_METRICS_H_

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "cmax/v1/record.pb.h"
#include "common/suite_catalog.h"

namespace cmax::testing {

// Fails (without stopping the case) for each Measurement or Sample of a
// registered suite whose metric that suite does not declare. Records of a
// name that is no registered suite (a test's own writer) are not checked.
inline void CheckMetricsDeclared(const std::vector<v1::Record>& records) {
  for (const v1::Record& rec : records) {
    std::string suite, metric;
    if (rec.has_measurement()) {
      suite = rec.measurement().suite();
      metric = rec.measurement().metric();
    } else if (rec.has_sample()) {
      suite = rec.sample().suite();
      metric = rec.sample().metric();
    } else {
      continue;
    }
    const SuiteInfo* info = FindSuite(suite);
    if (info == nullptr) continue;
    if (FindSuiteMetric(*info, metric) == nullptr) {
      FAIL_CHECK("metric '" << metric << "' is not declared by suite '" << suite
                            << "': add a MetricSpec (unit, better, help) to benchmarks/" << suite
                            << "/" << suite << "_declaration.cc");
    }
  }
}

}  // namespace cmax::testing

#endif  // CMAX_TESTS_BENCHMARKS_DECLARED_METRICS_H_
