// The main() of every Catch2 test binary: Catch's own, plus honest skips
// (tests/skip.h). A run whose every case called CMAX_SKIP, with no failure,
// exits kSkipExitCode, which ctest reports as "Skipped".
#define CATCH_CONFIG_RUNNER
#include <catch2/catch.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "tests/skip.h"

namespace cmax::testing {
namespace {

struct SkipState {
  std::string binary;  // argv[0]'s last part: ctest names a case "<binary>:<case>"
  std::string current_case;
  std::string current_reason;  // non-empty: the running case skipped
  int cases_run = 0;
  std::vector<std::string> skipped;  // "<case>: <reason>"
};

SkipState& State() {
  static SkipState s;
  return s;
}

class SkipListener : public Catch::TestEventListenerBase {
 public:
  using TestEventListenerBase::TestEventListenerBase;

  void testCaseStarting(Catch::TestCaseInfo const& info) override {
    State().current_case = info.name;
    State().current_reason.clear();
    ++State().cases_run;
  }

  void testCaseEnded(Catch::TestCaseStats const& stats) override {
    SkipState& s = State();
    // A case that failed before it skipped is a failure, never a skip.
    if (!s.current_reason.empty() && stats.totals.assertions.failed == 0) {
      s.skipped.push_back(s.current_case + ": " + s.current_reason);
      if (const char* log = std::getenv("CMAX_TEST_SKIP_LOG"); log != nullptr && *log) {
        if (FILE* f = std::fopen(log, "a")) {
          std::fprintf(f, "%s:%s\t%s\n", s.binary.c_str(), s.current_case.c_str(),
                       s.current_reason.c_str());
          std::fclose(f);
        }
      }
    }
    s.current_reason.clear();
  }
};

}  // namespace

CATCH_REGISTER_LISTENER(SkipListener)

void MarkSkipped(const std::string& reason) {
  State().current_reason = reason.empty() ? "no reason given" : reason;
}

}  // namespace cmax::testing

int main(int argc, char** argv) {
  if (argc > 0 && argv[0] != nullptr) {
    const std::string self = argv[0];
    cmax::testing::State().binary = self.substr(self.find_last_of('/') + 1);
  }
  const int failed = Catch::Session().run(argc, argv);
  using cmax::testing::kSkipExitCode;
  // Catch returns the number of failed assertions: never let a failure read
  // as the skip code.
  if (failed != 0) return failed == kSkipExitCode ? kSkipExitCode + 1 : failed;
  const cmax::testing::SkipState& s = cmax::testing::State();
  if (s.cases_run > 0 && static_cast<int>(s.skipped.size()) == s.cases_run) {
    for (const std::string& line : s.skipped) std::printf("SKIPPED: %s\n", line.c_str());
    return kSkipExitCode;
  }
  return 0;
}
