// The contract every suite binary entry point follows.
//
// A suite is `int RunName(int argc, char** argv)` where argv[0] is the suite
// name and the rest its flags. It writes Records as JSON lines to stdout with
// --jsonl (the agent redirects stdout to the task's spool file), a human
// table otherwise, and diagnostics to stderr. Exit codes, for every suite:
#ifndef CMAX_BENCHMARKS_SUITE_H_
#define CMAX_BENCHMARKS_SUITE_H_

namespace cmax::bench {

inline constexpr int kExitPassed = 0;        // ran and passed
inline constexpr int kExitFoundFailures = 1; // ran and found failures; records complete
inline constexpr int kExitCouldNotRun = 2;   // usage, missing hardware or tool, error

using SuiteMain = int (*)(int argc, char** argv);

struct SuiteEntry {
  const char* name;
  SuiteMain main;
  const char* summary;
};

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_SUITE_H_
