// Test helpers for suites: run a built suite binary the way the agent does
// and read back the Records of its --jsonl output. Catch2 assertions: a
// binary that cannot start, does not exit (a crash is never an answer), or
// writes a line that is not a Record fails the test.
#ifndef CMAX_TESTS_BENCHMARKS_SUITE_RUN_H_
#define CMAX_TESTS_BENCHMARKS_SUITE_RUN_H_

#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "common/record_io.h"
#include "common/subprocess.h"
#include "tests/benchmarks/declared_metrics.h"

namespace cmax::testing {

// Every Record in `jsonl`, one per non-empty line. A metric its suite does
// not declare fails the case (declared_metrics.h).
inline std::vector<v1::Record> ParseRecords(absl::string_view jsonl) {
  std::vector<v1::Record> records;
  for (absl::string_view line : absl::StrSplit(jsonl, '\n', absl::SkipEmpty())) {
    auto rec = ParseRecordLine(std::string_view(line.data(), line.size()));
    INFO(line);
    REQUIRE(rec.ok());
    records.push_back(*std::move(rec));
  }
  CheckMetricsDeclared(records);
  return records;
}

struct SuiteRun {
  int exit_code = -1;
  std::string out, err;
  std::vector<v1::Record> records;  // of `out`
};

// Runs CMAX_TEST_BIN_DIR/`binary` with `args` ("cmax-bench", {"burnin", ...}).
inline SuiteRun RunSuite(const std::string& binary, const std::vector<std::string>& args,
                         std::chrono::milliseconds timeout,
                         const std::map<std::string, std::string>& env = {},
                         size_t max_output = 1 << 20) {
  std::vector<std::string> argv = {std::string(CMAX_TEST_BIN_DIR) + "/" + binary};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = RunCommand(argv, timeout, max_output, env);
  REQUIRE(r.ok());
  INFO(r->err);
  REQUIRE(r->exit.exited);
  SuiteRun run;
  run.exit_code = r->exit.code;
  run.out = std::move(r->out);
  run.err = std::move(r->err);
  run.records = ParseRecords(run.out);
  return run;
}

}  // namespace cmax::testing

#endif  // CMAX_TESTS_BENCHMARKS_SUITE_RUN_H_
