// Soak mode of the collective suite: its limits, the interval and stall
// bookkeeping on a fake clock, the watchdog thread, and a real gloo soak of
// two ranks (child processes over loopback).
#include <catch2/catch.hpp>
#include <signal.h>

#include <atomic>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "benchmarks/collective_common/runner.h"
#include "benchmarks/collective_common/soak.h"
#include "common/plan_parser.h"
#include "common/subprocess.h"
#include "common/suite_catalog.h"
#include "tests/benchmarks/collective/rank_runner.h"
#include "tests/scratch_dir.h"

using cmax::collective::PlannedIntervals;
using cmax::collective::SoakConfig;
using cmax::collective::SoakProgress;
using cmax::collective::SoakWatchdog;
using cmax::collective::StallReport;
using cmax::collective::ValidateSoak;

namespace {

// A clock the test moves by hand (seconds), safe to read from the watchdog.
struct FakeClock {
  std::atomic<double> now{1000.0};
  cmax::collective::SoakClock Fn() {
    return [this] { return now.load(); };
  }
};

std::string Label(const cmax::v1::Measurement& m, const std::string& k) {
  auto it = m.labels().find(k);
  return it == m.labels().end() ? "" : it->second;
}

}  // namespace

TEST_CASE("soak limits: at least two intervals, interval and stall >= 1 s", "[collective][soak]") {
  CHECK(ValidateSoak({20, 10, 60}).ok());
  CHECK(ValidateSoak({12, 2, 4}).ok());
  auto short_soak = ValidateSoak({15, 10, 60});
  REQUIRE_FALSE(short_soak.ok());
  CHECK(absl::StrContains(short_soak.message(), "shorter than two intervals of 10 s"));
  CHECK_FALSE(ValidateSoak({10, 0, 60}).ok());
  CHECK_FALSE(ValidateSoak({10, 2, 0}).ok());
  CHECK(PlannedIntervals({12, 2, 4}) == 6);
  CHECK(PlannedIntervals({30, 7, 4}) == 4);
  CHECK(PlannedIntervals({1800, 10, 60}) == 180);
}

TEST_CASE("soak flags: one op, one size, two intervals", "[collective][soak]") {
  cmax::collective::Flags f;
  f.soak_s = 12;
  f.interval_s = 2;
  f.min_bytes = f.max_bytes = 1 << 20;
  auto ok = cmax::collective::ResolveOptions(f);
  REQUIRE(ok.ok());
  CHECK(ok->soak.soak_s == 12);
  CHECK(ok->soak.interval_s == 2);
  CHECK(ok->soak.stall_s == 60);  // the default

  auto two_sizes = f;
  two_sizes.min_bytes = 1024;
  auto e = cmax::collective::ResolveOptions(two_sizes);
  REQUIRE_FALSE(e.ok());
  CHECK(absl::StrContains(e.status().message(), "min-bytes and max-bytes to the same value"));

  auto two_ops = f;
  two_ops.op = "all_reduce,all_gather";
  CHECK_FALSE(cmax::collective::ResolveOptions(two_ops).ok());

  auto too_short = f;
  too_short.soak_s = 3;
  auto s = cmax::collective::ResolveOptions(too_short);
  REQUIRE_FALSE(s.ok());
  CHECK(absl::StrContains(s.status().message(), "shorter than two intervals"));

  auto sweep = f;  // no soak: two sizes are a sweep, as before
  sweep.soak_s = 0;
  sweep.min_bytes = 1024;
  CHECK(cmax::collective::ResolveOptions(sweep).ok());
}

TEST_CASE("soak progress: the last completed iteration and its time", "[collective][soak]") {
  FakeClock clock;
  SoakProgress p(clock.Fn());
  p.Start();
  clock.now = 1001.0;
  p.NoteCompleted(20);
  p.BeginInterval(1);
  clock.now = 1004.9;
  CHECK_FALSE(p.CheckStall(4).has_value());  // 3.9 s since the last iteration
  clock.now = 1005.5;
  auto r = p.CheckStall(4);
  REQUIRE(r.has_value());
  CHECK(r->interval == 1);
  CHECK(r->last_iteration == 20);
  CHECK(r->last_progress_s == Approx(1.0));
  CHECK(r->waited_s == Approx(4.5));
  CHECK(p.Elapsed() == Approx(5.5));

  // The same count again is no progress: the time of the last one stays.
  p.NoteCompleted(20);
  CHECK(p.CheckStall(4)->last_progress_s == Approx(1.0));
  p.NoteCompleted(40);
  CHECK_FALSE(p.CheckStall(4).has_value());

  // No iteration at all since Start() counts from the start.
  SoakProgress idle(clock.Fn());
  idle.Start();
  clock.now = clock.now + 4.0;
  auto i = idle.CheckStall(4);
  REQUIRE(i.has_value());
  CHECK(i->last_iteration == 0);
  CHECK(i->last_progress_s == Approx(0.0));
}

TEST_CASE("soak watchdog: quiet while iterations complete, fires once on a stall",
          "[collective][soak]") {
  FakeClock clock;
  SoakProgress p(clock.Fn());
  p.Start();
  std::atomic<int> calls{0};
  StallReport seen;
  std::atomic<bool> have{false};
  SoakWatchdog w(&p, 5, 0.005, [&](const StallReport& r) {
    seen = r;
    have = true;
    ++calls;
  });
  for (int i = 1; i <= 20; ++i) {  // 1 s of fake time per iteration: never 5 s without one
    clock.now = clock.now + 1.0;
    p.NoteCompleted(i);
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  CHECK(calls == 0);
  p.BeginInterval(3);
  clock.now = clock.now + 6.0;  // the group hangs
  for (int i = 0; i < 400 && !have; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  REQUIRE(have);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  w.Stop();
  CHECK(calls == 1);
  CHECK(seen.interval == 3);
  CHECK(seen.last_iteration == 20);
  CHECK(seen.last_progress_s == Approx(20.0));
  CHECK(seen.waited_s == Approx(6.0));
}

TEST_CASE("soak watchdog: a termination request reports the progress so far, once",
          "[collective][soak]") {
  FakeClock clock;
  SoakProgress p(clock.Fn());
  p.Start();
  clock.now = clock.now + 2.0;
  p.NoteCompleted(40);
  p.BeginInterval(1);
  clock.now = clock.now + 3.0;  // waiting 3 s, below the 10 s stall limit
  std::atomic<bool> terminate{false};
  std::atomic<int> stalls{0}, terms{0};
  StallReport seen;
  SoakWatchdog w(
      &p, 10, 0.005, [&](const StallReport&) { ++stalls; }, &terminate,
      [&](const StallReport& r) {
        seen = r;
        ++terms;
      });
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  CHECK(terms == 0);
  terminate = true;  // what the SIGTERM handler does
  for (int i = 0; i < 400 && terms == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  w.Stop();
  CHECK(terms == 1);
  CHECK(stalls == 0);
  CHECK(seen.interval == 1);
  CHECK(seen.last_iteration == 40);
  CHECK(seen.last_progress_s == Approx(2.0));
  CHECK(seen.waited_s == Approx(3.0));  // the runner reports it only from stall/2 on
}

TEST_CASE("gloo soak of two ranks: one busbw figure per interval", "[collective][soak]") {
  const cmax::testing::ScratchDir scratch;
  const std::string& dir = scratch.path;
  auto outs = cmax::testing::RunRanks(
      std::string(CMAX_TEST_BIN_DIR) + "/cmax-bench",
      {"collective", "--backend=gloo", "--op=all_reduce", "--min-bytes=256K", "--max-bytes=256K",
       "--iters=5", "--warmup=2", "--soak=4", "--interval=1", "--stall=10",
       "--gloo-address=127.0.0.1", "--jsonl"},
      2, dir, std::chrono::seconds(60));
  for (size_t r = 0; r < outs.size(); ++r) {
    INFO("rank " << r << ": " << outs[r].exit.Describe() << "\n" << outs[r].err);
    REQUIRE(outs[r].exit.exited);
    CHECK(outs[r].exit.code == 0);
  }
  auto busbw = cmax::testing::MeasurementsOf(outs[0].records, "busbw_gbps");
  auto algbw = cmax::testing::MeasurementsOf(outs[0].records, "algbw_gbps");
  REQUIRE(busbw.size() == 4);
  REQUIRE(algbw.size() == 4);
  double last_start = -1;
  for (size_t i = 0; i < busbw.size(); ++i) {
    const auto& m = busbw[i];
    CHECK(Label(m, "soak") == "true");
    CHECK(Label(m, "interval") == absl::StrCat(i));
    CHECK(Label(m, "op") == "all_reduce");
    CHECK(Label(m, "size_bytes") == "262144");
    CHECK(Label(m, "intervals_planned") == "4");
    // Verified: the first and the last interval (and one a minute); the
    // wrong count only where verified.
    const bool verified = i == 0 || i == 3;
    CHECK(Label(m, "verified") == (verified ? "true" : "false"));
    CHECK(Label(m, "wrong") == (verified ? "0" : ""));
    int64_t iterations = 0;
    REQUIRE(absl::SimpleAtoi(Label(m, "iterations"), &iterations));
    CHECK(iterations >= 5);
    CHECK(iterations % 5 == 0);  // whole batches of --iters
    double t_start = 0, duration = 0;
    REQUIRE(absl::SimpleAtod(Label(m, "t_start_s"), &t_start));
    REQUIRE(absl::SimpleAtod(Label(m, "duration_s"), &duration));
    CHECK(t_start > last_start);
    CHECK(duration >= 1.0);  // an interval ends when a rank passes 1 s
    CHECK(duration < 3.0);
    last_start = t_start;
    CHECK(m.value() > 0);
    // all_reduce over 2 ranks: busbw = algbw x 2(n-1)/n = algbw.
    CHECK(m.value() == Approx(algbw[i].value()));
  }
  // Rank 1 writes no measurements, but its progress per interval.
  CHECK(cmax::testing::MeasurementsOf(outs[1].records, "busbw_gbps").empty());
  int progress = 0;
  for (const auto& r : outs[1].records) progress += r.has_progress();
  CHECK(progress == 4);
}

TEST_CASE("gloo soak with a corrupted element fails and names the rank", "[collective][soak]") {
  const cmax::testing::ScratchDir scratch;
  const std::string& dir = scratch.path;
  auto outs = cmax::testing::RunRanks(
      std::string(CMAX_TEST_BIN_DIR) + "/cmax-bench",
      {"collective", "--backend=gloo", "--op=all_reduce", "--min-bytes=64K", "--max-bytes=64K",
       "--iters=5", "--soak=2", "--interval=1", "--fault-inject", "--gloo-address=127.0.0.1",
       "--jsonl"},
      2, dir, std::chrono::seconds(60));
  for (const auto& o : outs) {
    INFO(o.exit.Describe() << "\n" << o.err);
    REQUIRE(o.exit.exited);
    CHECK(o.exit.code == 1);
  }
  bool named = false;
  for (const auto& r : outs[1].records) {
    named |= r.has_finding() && r.finding().check_id() == "collective.wrong_elements" &&
             absl::StrContains(r.finding().subject(), "rank:1");
  }
  CHECK(named);
  // The soak stops at the wrong interval: one figure, its wrong count set.
  auto busbw = cmax::testing::MeasurementsOf(outs[0].records, "busbw_gbps");
  REQUIRE(busbw.size() == 1);
  CHECK(Label(busbw[0], "wrong") == "1");
}

TEST_CASE("gloo soak: a stopped rank makes the others report that they waited",
          "[collective][soak]") {
  const cmax::testing::ScratchDir scratch;
  const std::string& dir = scratch.path;
  // Rank 2 is stopped at 3 s. Rank 1 is SIGTERMed 4 s later (more than half
  // the 6 s stall limit spent waiting, as when an agent ends the group):
  // it still says it waited. Rank 0's own watchdog fires at 6 s. Rank 2 is
  // killed at the end, as the agent does at the task's timeout.
  auto outs = cmax::testing::RunRanks(
      std::string(CMAX_TEST_BIN_DIR) + "/cmax-bench",
      {"collective", "--backend=gloo", "--op=all_reduce", "--min-bytes=64K", "--max-bytes=64K",
       "--iters=5", "--soak=60", "--interval=1", "--stall=6", "--gloo-address=127.0.0.1",
       "--jsonl"},
      3, dir, std::chrono::seconds(60), [](const std::vector<pid_t>& pids) {
        if (pids.size() != 3 || pids[1] <= 0 || pids[2] <= 0) return;
        std::this_thread::sleep_for(std::chrono::seconds(3));
        kill(pids[2], SIGSTOP);
        std::this_thread::sleep_for(std::chrono::seconds(4));
        kill(pids[1], SIGTERM);
        std::this_thread::sleep_for(std::chrono::seconds(4));
        kill(pids[2], SIGKILL);
      });
  for (size_t r = 0; r < outs.size(); ++r) {
    INFO("rank " << r << ": " << outs[r].exit.Describe() << "\n" << outs[r].err);
    CHECK_FALSE(outs[r].timed_out);
  }
  auto stall_of = [&](size_t r) -> const cmax::v1::Finding* {
    for (const auto& rec : outs[r].records) {
      if (rec.has_finding() && rec.finding().check_id() == "collective.soak_stall") {
        return &rec.finding();
      }
    }
    return nullptr;
  };
  for (size_t r : {0, 1}) {
    INFO("rank " << r << ": " << outs[r].exit.Describe() << "\n" << outs[r].err);
    CHECK(outs[r].exit.exited);
    CHECK(outs[r].exit.code == 1);
    const cmax::v1::Finding* f = stall_of(r);
    REQUIRE(f != nullptr);
    CHECK(f->severity() == cmax::v1::SEVERITY_WARN);
    CHECK(absl::StrContains(f->title(), "it was waiting"));
    CHECK(f->labels().at("rank") == absl::StrCat(r));
    CHECK(f->labels().at("rank_nodes") == "node-0,node-1,node-2");
    int64_t last = 0;
    REQUIRE(absl::SimpleAtoi(f->labels().at("last_iteration"), &last));
    CHECK(last > 0);
    double waited = 0;
    REQUIRE(absl::SimpleAtod(f->labels().at("waited_s"), &waited));
    CHECK(waited >= 3.0);
  }
  // Rank 0's collective may fail as rank 1 goes away before its own
  // watchdog fires: it still reports that it waited, never a failure of its own.
  if (stall_of(0)->labels().count("ended_by")) {
    CHECK(stall_of(0)->labels().at("ended_by") == "error");
  }
  CHECK(stall_of(1)->labels().at("ended_by") == "SIGTERM");
  for (size_t r : {0, 1}) {
    for (const auto& rec : outs[r].records) {
      CHECK_FALSE((rec.has_finding() && rec.finding().check_id() == "collective.failed"));
    }
  }
  CHECK(stall_of(2) == nullptr);  // stopped: it wrote nothing
  CHECK_FALSE(outs[2].exit.exited);
  CHECK(outs[2].exit.signal == SIGKILL);
}

TEST_CASE("a soak shorter than two intervals could not run (exit 2)", "[collective][soak]") {
  auto run = cmax::RunCommand({std::string(CMAX_TEST_BIN_DIR) + "/cmax-bench", "collective",
                             "--backend=gloo", "--min-bytes=1M", "--max-bytes=1M", "--soak=15",
                             "--interval=10", "--jsonl"},
                            std::chrono::seconds(30));
  REQUIRE(run.ok());
  const auto& r = *run;
  INFO(r.out << r.err);
  CHECK(r.exit.code == 2);
  CHECK(absl::StrContains(r.err, "shorter than two intervals of 10 s"));
  CHECK(absl::StrContains(r.out, "\"not_measured\":true"));
}

TEST_CASE("the shipped soak plans parse and the suite accepts their soak", "[collective][soak]") {
  for (const char* name : {"soak", "soak-cpu"}) {
    auto plan = cmax::LoadPlanFile(std::string(CMAX_SOURCE_DIR) + "/benchmarks/plans/" + name +
                                   ".yaml");
    INFO(name << ": " << plan.status().ToString());
    REQUIRE(plan.ok());
    REQUIRE(cmax::ValidatePlan(*plan).ok());
    REQUIRE(plan->suites_size() == 1);
    const auto& s = plan->suites(0);
    CHECK(s.suite() == "collective");
    CHECK(s.scope() == cmax::v1::SCOPE_GANG);
    // The task timeout outlasts the soak.
    double soak = 0;
    REQUIRE(absl::SimpleAtod(s.params().at("soak"), &soak));
    CHECK(s.timeout_seconds() > soak);
    // The suite's own checks (two intervals, one op, one size) pass too.
    cmax::collective::Flags f;
    f.soak_s = soak;
    REQUIRE(absl::SimpleAtod(s.params().at("interval"), &f.interval_s));
    REQUIRE(absl::SimpleAtod(s.params().at("stall"), &f.stall_s));
    f.op = s.params().at("op");
    auto bytes = cmax::ParseBytes(s.params().at("min-bytes"));
    REQUIRE(bytes.ok());
    f.min_bytes = *bytes;
    bytes = cmax::ParseBytes(s.params().at("max-bytes"));
    REQUIRE(bytes.ok());
    f.max_bytes = *bytes;
    auto o = cmax::collective::ResolveOptions(f);
    INFO(o.status().ToString());
    CHECK(o.ok());
  }
  auto nccl = cmax::LoadPlanFile(std::string(CMAX_SOURCE_DIR) + "/benchmarks/plans/soak.yaml");
  REQUIRE(nccl.ok());
  CHECK(nccl->suites(0).params().at("backend") == "nccl");
  CHECK(nccl->suites(0).params().at("max-bytes") == "1G");
  CHECK(nccl->suites(0).params().at("soak") == "1800");
}
