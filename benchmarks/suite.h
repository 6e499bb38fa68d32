// The contract every suite binary entry point follows.
//
// A suite is `int RunName(int argc, char** argv)` where argv[0] is the suite
// name and the rest its flags. It writes Records as JSON lines to stdout with
// --jsonl (the agent redirects stdout to the task's spool file), a human
// table otherwise, and diagnostics to stderr. Exit codes, for every suite:
#ifndef CMAX_BENCHMARKS_SUITE_H_
#define CMAX_BENCHMARKS_SUITE_H_

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>

#include "common/args.h"
#include "common/suite_catalog.h"

namespace cmax::bench {

inline constexpr int kExitPassed = 0;        // ran and passed
inline constexpr int kExitFoundFailures = 1; // ran and found failures; records complete
inline constexpr int kExitCouldNotRun = 2;   // usage, missing hardware or tool, error

// A suite's flags: common/suite_flags.h (SuiteFlags), read from its
// declaration.

using SuiteMain = int (*)(int argc, char** argv);

// A suite a binary links; its summary comes from the suite's declaration.
struct SuiteEntry {
  const char* name;
  SuiteMain main;
};

// A suite binary (cmax-bench, cmax-bench-cuda): `<name> <suite> [options]`
// runs the suite; no argument, -h or --help lists the suites; --version
// prints `version`. `about` is the text between the usage and the list.
struct SuiteBinary {
  const char* name;
  const char* about;
  std::string version;
  const SuiteEntry* suites;
  size_t count;
};

inline void PrintSuiteUsage(const SuiteBinary& b, FILE* out) {
  std::fprintf(out, "usage: %s <suite> [options]\n       %s <suite> --help\n\n%s\nsuites:\n",
               b.name, b.name, b.about);
  int width = 0;
  for (size_t i = 0; i < b.count; ++i) {
    width = std::max(width, static_cast<int>(std::strlen(b.suites[i].name)));
  }
  for (size_t i = 0; i < b.count; ++i) {
    const SuiteInfo* info = FindSuite(b.suites[i].name);
    const std::string summary = info != nullptr ? SuiteSummary(*info, b.name) : "";
    std::fprintf(out, "  %-*s  %s\n", width, b.suites[i].name, summary.c_str());
  }
}

// The whole main() of a suite binary.
inline int RunSuiteBinary(const SuiteBinary& b, int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "--help")) {
    PrintSuiteUsage(b, argc < 2 ? stderr : stdout);
    return argc < 2 ? kExitCouldNotRun : kExitPassed;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::printf("%s\n", b.version.c_str());
    return kExitPassed;
  }
  for (size_t i = 0; i < b.count; ++i) {
    if (!std::strcmp(argv[1], b.suites[i].name)) return b.suites[i].main(argc - 1, argv + 1);
  }
  std::fprintf(stderr, "%s: unknown suite '%s'\n\n", b.name, argv[1]);
  PrintSuiteUsage(b, stderr);
  return kExitCouldNotRun;
}

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_SUITE_H_
