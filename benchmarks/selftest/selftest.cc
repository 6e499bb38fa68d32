// selftest: exercises the record pipeline, timeouts and failure handling.
// Every record it writes is labelled suite "selftest"; it measures nothing
// about the node.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "absl/strings/str_cat.h"
#include "benchmarks/suite.h"
#include "common/args.h"
#include "common/record_io.h"

namespace cmax::bench {

int RunSelftest(int argc, char** argv) {
  std::string mode = "ok";
  int64_t records = 10;
  double seconds = 0;
  double rate = 0;
  bool jsonl = false;
  ArgParser args("cmax-bench selftest [--mode ok|records|sleep|fail|error|crash] [options]",
                 "Checks the pipeline from suite to scorecard. Modes:\n"
                 "  ok       write --records records over --seconds, exit 0\n"
                 "  records  same as ok (for long record streams; see --rate)\n"
                 "  sleep    write one record, then sleep --seconds (for timeouts)\n"
                 "  fail     write records and a FAIL finding, exit 1\n"
                 "  error    print a reason to stderr, exit 2 (could not run)\n"
                 "  crash    write records, print to stderr, then abort (SIGABRT)");
  args.AddString("mode", &mode, "what to do (default ok)");
  args.AddInt("records", &records, "records to write (default 10)");
  args.AddDouble("seconds", &seconds, "time to take (default 0)");
  args.AddDouble("rate", &rate, "records per second, 0 for as fast as possible");
  args.AddFlag("jsonl", &jsonl, "write records as JSON lines");
  if (auto s = args.Parse(argc, argv); !s.ok()) {
    std::fprintf(stderr, "selftest: %s\n", std::string(s.message()).c_str());
    return kExitCouldNotRun;
  }
  if (args.help_requested()) {
    std::fputs(args.Help().c_str(), stdout);
    return kExitPassed;
  }
  RecordWriter out("selftest", jsonl ? stdout : nullptr);
  auto pause_between = [&](int64_t i) {
    if (rate > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(1.0 / rate));
    } else if (seconds > 0 && records > 0 && mode != "sleep") {
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds / records));
    }
  };

  if (mode == "error") {
    std::fprintf(stderr, "selftest: asked to fail to run (mode=error)\n");
    return kExitCouldNotRun;
  }
  if (mode == "sleep") {
    out.Progress("sleep", 0, absl::StrCat("sleeping ", seconds, " s"));
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    out.Progress("sleep", 1, "woke up");
    return kExitPassed;
  }
  if (mode != "ok" && mode != "records" && mode != "fail" && mode != "crash") {
    std::fprintf(stderr, "selftest: unknown mode '%s'\n", mode.c_str());
    return kExitCouldNotRun;
  }
  for (int64_t i = 0; i < records; ++i) {
    out.Measure("selftest_sequence", static_cast<double>(i), "count",
                {{"index", absl::StrCat(i)}});
    if (!jsonl && (i < 5 || i + 1 == records)) std::printf("record %lld\n", (long long)i);
    pause_between(i);
  }
  out.Progress("done", 1, absl::StrCat(records, " records written"));
  if (mode == "fail") {
    v1::Finding f;
    f.set_check_id("selftest.requested_failure");
    f.set_severity(v1::SEVERITY_FAIL);
    f.set_category("reliability");
    f.set_subject("node");
    f.set_title("selftest asked to report a failure");
    f.set_detail("mode=fail: this finding checks that failures reach the scorecard");
    f.set_action("none: this is a self-test");
    out.Find(f);
    if (!jsonl) std::printf("FAIL selftest.requested_failure\n");
    return kExitFoundFailures;
  }
  if (mode == "crash") {
    std::fprintf(stderr, "selftest: about to crash on purpose (mode=crash)\n");
    std::fflush(stderr);
    abort();
  }
  return kExitPassed;
}

}  // namespace cmax::bench
