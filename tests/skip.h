// Honest skips for Catch2 v2 (Debian's catch2 2.x has no SKIP): a case that
// cannot run on this machine (no usable GPU, no CUDA build, a tool not
// installed) calls CMAX_SKIP(reason) and returns. tests/test_main.cc then
// exits kSkipExitCode when every case it ran was skipped and none failed, and
// ctest (SKIP_RETURN_CODE, tests/CMakeLists.txt) reports the case as
// "Skipped", not passed. A case that fails before skipping still fails, and a
// case run where its hardware exists runs and can fail.
//
// With CMAX_TEST_SKIP_LOG set, each skipped case appends
// "<binary>:<case>\t<reason>" (its ctest name, then why) to that file
// (tests/run.sh prints the count and reasons).
#ifndef CMAX_TESTS_SKIP_H_
#define CMAX_TESTS_SKIP_H_

#include <sstream>
#include <string>

#include <catch2/catch.hpp>

namespace cmax::testing {

// Exit code of a test binary whose cases were all skipped (the automake
// convention; bundle_test.sh uses it too).
inline constexpr int kSkipExitCode = 77;

// Marks the running case skipped for `reason` (tests/test_main.cc).
void MarkSkipped(const std::string& reason);

}  // namespace cmax::testing

// Skips the running case: prints "SKIPPED: <reason>" and returns from the
// TEST_CASE body. `reason` may be a stream expression (`"no GPU (" << why << ")"`).
#define CMAX_SKIP(reason)                              \
  do {                                                 \
    std::ostringstream cmax_skip_os_;                  \
    cmax_skip_os_ << reason;                           \
    WARN("SKIPPED: " << cmax_skip_os_.str());          \
    ::cmax::testing::MarkSkipped(cmax_skip_os_.str()); \
    return;                                            \
  } while (false)

#endif  // CMAX_TESTS_SKIP_H_
