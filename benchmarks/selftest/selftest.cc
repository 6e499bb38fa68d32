// selftest: exercises the record pipeline, timeouts and failure handling.
// Every record it writes is labelled suite "selftest"; it measures nothing
// about the node.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <map>
#include <thread>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "benchmarks/suite.h"
#include "common/record_io.h"
#include "common/rendezvous_client.h"
#include "common/suite_flags.h"
#include "common/time_util.h"

namespace cmax::bench {
namespace {

// Exit code of a rank that fails on purpose (--fail-rank): neither 0, 1 nor
// 2, so the agent reports a crash and the coordinator stops the group.
constexpr int kExitRankCrash = 3;

int EnvRank() {
  int rank = 0;
  const char* r = getenv("CMAX_RANK");
  if (r == nullptr) r = getenv("OMPI_COMM_WORLD_RANK");
  if (r == nullptr || !absl::SimpleAtoi(r, &rank)) return 0;
  return rank;
}

void SleepUntilUnixNs(int64_t target) {
  for (;;) {
    int64_t left = target - NowUnixNs();
    if (left <= 0) return;
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<int64_t>(left, 100000000)));
  }
}

// mode barrier: prepare (sleep --seconds x rank), ready (Barrier "start"),
// sleep until the start instant, record the three instants in this host's
// real clock (unix ns), then a short end.
int RunBarrierMode(RecordWriter& out, double seconds, bool jsonl) {
  const int64_t prepare = NowUnixNs();
  auto client = RendezvousClient::FromEnvironment();
  if (!client.ok()) {
    std::fprintf(stderr, "selftest: mode barrier needs a group task: %s\n",
                 std::string(client.status().message()).c_str());
    out.Log("error", absl::StrCat("not measured: ", client.status().message()));
    return kExitCouldNotRun;
  }
  const int rank = (*client)->rank();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds * rank));
  const int64_t ready = NowUnixNs();
  auto start = (*client)->Barrier("start", absl::Seconds(120 + seconds * (*client)->world_size()));
  if (!start.ok()) {
    std::fprintf(stderr, "selftest: barrier: %s\n", std::string(start.status().message()).c_str());
    out.Log("error", absl::StrCat("barrier failed: ", start.status().message()));
    return kExitCouldNotRun;
  }
  SleepUntilUnixNs(*start);
  const int64_t started = NowUnixNs();
  std::map<std::string, std::string> labels = {{"rank", absl::StrCat(rank)}};
  out.Measure("barrier_prepare_ns", static_cast<double>(prepare), "ns", labels);
  out.Measure("barrier_ready_ns", static_cast<double>(ready), "ns", labels);
  out.Measure("barrier_start_ns", static_cast<double>(started), "ns", labels);
  out.Measure("barrier_target_ns", static_cast<double>(*start), "ns", labels);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  out.Measure("barrier_end_ns", static_cast<double>(NowUnixNs()), "ns", labels);
  if (!jsonl) {
    std::printf("rank %d: started %.3f ms after the target instant\n", rank,
                static_cast<double>(started - *start) / 1e6);
  }
  return kExitPassed;
}

}  // namespace

int RunSelftest(int argc, char** argv) {
  std::string mode = "ok";
  int64_t records = 10;
  double seconds = 0;
  double rate = 0;
  bool jsonl = false;
  int64_t fail_rank = -1;
  bool declare = false;
  SuiteFlags flags("selftest", "cmax-bench", "[--mode MODE] [options]");
  flags.Bind("mode", &mode);
  flags.Bind("records", &records);
  flags.Bind("seconds", &seconds);
  flags.Bind("rate", &rate);
  flags.Bind("fail-rank", &fail_rank);
  flags.Bind("declare", &declare);
  flags.extra().AddFlag("jsonl", &jsonl, "write records as JSON lines");
  if (auto rc = flags.Parse(argc, argv)) return *rc;
  RecordWriter out("selftest", jsonl ? stdout : nullptr);
  auto pause_between = [&](int64_t i) {
    if (rate > 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(1.0 / rate));
    } else if (seconds > 0 && records > 0 && mode != "sleep") {
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds / records));
    }
  };

  if (fail_rank >= 0 && EnvRank() == fail_rank) {
    out.Measure("selftest_sequence", 0, "count", {{"index", "0"}});
    v1::Finding f;
    f.set_check_id("selftest.rank_failed");
    f.set_severity(v1::SEVERITY_FAIL);
    f.set_category("reliability");
    f.set_subject(absl::StrCat("rank:", fail_rank));
    f.set_title(absl::StrCat("selftest rank ", fail_rank, " fails on purpose"));
    f.set_detail("--fail-rank: this rank exits 3 so the group is stopped");
    out.Find(f);
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::fprintf(stderr, "selftest: rank %lld failing on purpose (fail-rank)\n",
                 static_cast<long long>(fail_rank));
    return kExitRankCrash;
  }
  if (mode == "barrier") return RunBarrierMode(out, seconds, jsonl);
  if (mode == "error") {
    std::fprintf(stderr, "selftest: asked to fail to run (mode=error)\n");
    return kExitCouldNotRun;
  }
  if (mode == "orphan") {
    out.Progress("orphan", 0, "leaving a child behind");
    std::fflush(stdout);
    pid_t child = fork();
    if (child == 0) {
      std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
      for (int64_t i = 0; i < records; ++i) {
        out.Measure("selftest_orphan_sequence", static_cast<double>(i), "count",
                    {{"index", absl::StrCat(i)}});
      }
      std::fflush(stdout);
      _exit(0);
    }
    if (child < 0) {
      std::fprintf(stderr, "selftest: fork: %s\n", strerror(errno));
      return kExitCouldNotRun;
    }
    return kExitPassed;
  }
  // --declare: the count covers this record, what the mode writes below and
  // the closing progress record (and the FAIL finding in mode fail).
  const bool writes_records = mode == "ok" || mode == "records" || mode == "fail" ||
                              mode == "crash";
  if (declare && (writes_records || mode == "sleep")) {
    const int64_t total = mode == "sleep" ? 3 : 1 + records + 1 + (mode == "fail" ? 1 : 0);
    out.Measure("selftest_declared_records", static_cast<double>(total), "count");
  }
  if (mode == "sleep") {
    out.Progress("sleep", 0, absl::StrCat("sleeping ", seconds, " s"));
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    out.Progress("sleep", 1, "woke up");
    return kExitPassed;
  }
  if (!writes_records) {
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
