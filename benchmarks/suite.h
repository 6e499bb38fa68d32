// The contract every suite binary entry point follows.
//
// A suite is `int RunName(int argc, char** argv)` where argv[0] is the suite
// name and the rest its flags. It writes Records as JSON lines to stdout with
// --jsonl (the agent redirects stdout to the task's spool file), a human
// table otherwise, and diagnostics to stderr. Exit codes, for every suite:
#ifndef CMAX_BENCHMARKS_SUITE_H_
#define CMAX_BENCHMARKS_SUITE_H_

#include <cstdio>
#include <optional>
#include <string>

#include "common/args.h"

namespace cmax::bench {

inline constexpr int kExitPassed = 0;        // ran and passed
inline constexpr int kExitFoundFailures = 1; // ran and found failures; records complete
inline constexpr int kExitCouldNotRun = 2;   // usage, missing hardware or tool, error

// Parses a suite's flags the same way for every suite. nullopt: go on. A
// value: the exit code to return now -- kExitCouldNotRun after printing
// "<suite>: <error>" to stderr, kExitPassed after printing --help.
inline std::optional<int> ParseSuiteFlags(ArgParser& args, const char* suite, int argc,
                                          char** argv) {
  if (auto s = args.Parse(argc, argv); !s.ok()) {
    std::fprintf(stderr, "%s: %s\n", suite, std::string(s.message()).c_str());
    return kExitCouldNotRun;
  }
  if (args.help_requested()) {
    std::fputs(args.Help().c_str(), stdout);
    return kExitPassed;
  }
  return std::nullopt;
}

using SuiteMain = int (*)(int argc, char** argv);

struct SuiteEntry {
  const char* name;
  SuiteMain main;
  const char* summary;
};

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_SUITE_H_
