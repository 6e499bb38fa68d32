// Issue 30 item 1, schedules, end to end: a real coordinator, two agents on
// loopback and cmaxctl. A schedule of a 3-second plan every 2 s:
//  - its runs happen, one at a time (no two overlap: the slots that come
//    while a run is going are skipped, each with its reason);
//  - the plan is the one stored at `add` (the file is spoiled after it);
//  - the coordinator is restarted between slots: the schedule, its counts
//    and skipped slots survive, the slots missed meanwhile are run once,
//    and runs go on;
//  - pause stops the runs, resume starts them again, remove forgets it;
//  - bad input exits 2 and stores nothing; the schedule says who added it
//    ("token"); the coordinator runs with --min-schedule-period 1s;
//  - /metrics has the schedule's series;
//  - --only-idle without Slurm (the coordinator's --sinfo names no program)
//    skips every slot, "not measured", and never runs on all nodes.
// Every wait is bounded in time; nothing leaves 127.0.0.1.
#include <signal.h>

#include <catch2/catch.hpp>
#include <algorithm>
#include <chrono>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cmax/v1/service.pb.h"
#include "common/subprocess.h"
#include "google/protobuf/util/json_util.h"
#include "tests/integration/cluster.h"

using cmax::testing::Cluster;
using namespace std::chrono_literals;

namespace {

constexpr char kPlanName[] = "sched-it";
// One selftest task a node that takes 3 s: longer than the 2 s interval.
constexpr char kPlan[] = R"(name: sched-it
suites:
  - suite: selftest
    params: {records: 3, seconds: 3}
)";

template <typename M>
M ParseJson(const std::string& text) {
  M m;
  google::protobuf::util::JsonParseOptions opts;
  opts.ignore_unknown_fields = true;
  INFO(text);
  REQUIRE(google::protobuf::util::JsonStringToMessage(text, &m, opts).ok());
  return m;
}

cmax::v1::ScheduleInfo Schedule(Cluster& c, const std::string& id) {
  auto r = c.Ctl({"schedule", "list", "--json"});
  INFO(r.out << r.err);
  REQUIRE(r.exit.code == 0);
  auto list = ParseJson<cmax::v1::ListSchedulesResponse>(r.out);
  for (const auto& s : list.schedules()) {
    if (s.schedule_id() == id) return s;
  }
  FAIL("schedule " << id << " is not listed");
  return {};
}

// The schedule's runs (by plan name), oldest first.
std::vector<cmax::v1::RunInfo> Runs(Cluster& c) {
  auto r = c.Ctl({"runs", "--limit", "500", "--json"});
  INFO(r.err);
  REQUIRE(r.exit.code == 0);
  auto list = ParseJson<cmax::v1::ListRunsResponse>(r.out);
  std::vector<cmax::v1::RunInfo> out;
  for (const auto& run : list.runs()) {
    if (run.plan_name() == kPlanName) out.push_back(run);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.created_unix_ns() < b.created_unix_ns();
  });
  return out;
}

// Polls `schedule list` every 250 ms for up to `limit` until `done` holds.
template <typename Pred>
cmax::v1::ScheduleInfo WaitFor(Cluster& c, const std::string& id, std::chrono::seconds limit,
                               Pred done) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  cmax::v1::ScheduleInfo s;
  while (std::chrono::steady_clock::now() < deadline) {
    s = Schedule(c, id);
    if (done(s)) return s;
    std::this_thread::sleep_for(250ms);
  }
  return s;
}

bool HasSkip(const cmax::v1::ScheduleInfo& s, const std::string& words) {
  return std::any_of(s.skipped().begin(), s.skipped().end(),
                     [&](const auto& k) { return absl::StrContains(k.reason(), words); });
}

}  // namespace

TEST_CASE("schedules: runs every 2 s, never two at once, through a coordinator restart",
          "[integration][schedule]") {
  Cluster c("sched1", {.agents = 2, .netns = false,
                       .coordinator_args = {"--metrics-listen", "127.0.0.1:0", "--sinfo",
                                            "cmax-test-no-sinfo",
                                            // seconds, not production's hour
                                            "--min-schedule-period", "1s"}});
  auto started = c.Start();
  INFO(started.ToString());
  REQUIRE(started.ok());
  const std::string plan = c.WritePlan("sched", kPlan);

  // Bad input: exit 2, nothing stored.
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"--plan", plan, "--every", "2x"},
           {"--plan", plan, "--every", "2s", "--window", "25:00-01:00"},
           {"--plan", plan, "--every", "2s", "--nodes", "regex:("},
           {"--plan", c.WritePlan("broken", "name: broken\nsuites:\n  - suite: nope\n"), "--every",
            "2s"},
           {"--every", "2s"}}) {
    std::vector<std::string> args = {"schedule", "add"};
    args.insert(args.end(), bad.begin(), bad.end());
    auto r = c.Ctl(args);
    INFO(r.out << r.err);
    CHECK(r.exit.code == 2);
  }
  for (const char* action : {"pause", "resume", "remove"}) {
    auto r = c.Ctl({"schedule", action, "s-unknown"});
    INFO(r.out << r.err);
    CHECK(r.exit.code == 2);
    CHECK(absl::StrContains(r.err, "no schedule 's-unknown'"));
  }
  {
    auto r = c.Ctl({"schedule", "list", "--json"});
    REQUIRE(r.exit.code == 0);
    CHECK(ParseJson<cmax::v1::ListSchedulesResponse>(r.out).schedules().empty());
  }

  auto added = c.Ctl({"schedule", "add", "--plan", plan, "--every", "2s", "--json"});
  INFO(added.out << added.err);
  REQUIRE(added.exit.code == 0);
  const std::string id = ParseJson<cmax::v1::ScheduleInfo>(added.out).schedule_id();
  REQUIRE(!id.empty());
  // Who added it: the token alone here (no client certificate).
  CHECK(ParseJson<cmax::v1::ScheduleInfo>(added.out).added_by() == "admin token");
  {
    auto r = c.Ctl({"schedule", "list"});
    INFO(r.out << r.err);
    CHECK(absl::StrContains(r.out, "added by admin token"));
  }
  auto idle_added =
      c.Ctl({"schedule", "add", "--plan", plan, "--every", "2s", "--only-idle", "--json"});
  INFO(idle_added.out << idle_added.err);
  REQUIRE(idle_added.exit.code == 0);
  const std::string idle_id = ParseJson<cmax::v1::ScheduleInfo>(idle_added.out).schedule_id();
  // The stored plan is what runs: spoiling the file changes nothing.
  std::ofstream(plan, std::ios::trunc) << "name: spoiled\nsuites: []\n";

  // Two runs and a skipped slot (a 3 s run and a 2 s interval).
  auto s = WaitFor(c, id, 40s, [](const auto& s) {
    return s.runs_started() >= 2 && s.slots_skipped() >= 1 && !s.last_run_id().empty();
  });
  INFO(s.DebugString());
  REQUIRE(s.runs_started() >= 2);
  CHECK(HasSkip(s, "is still going"));
  CHECK(absl::StartsWith(s.last_outcome(), "completed; "));
  const int64_t skipped_before = s.slots_skipped();
  {
    const auto idle = Schedule(c, idle_id);
    INFO(idle.DebugString());
    CHECK(idle.runs_started() == 0);
    CHECK(idle.slots_skipped() >= 1);
    CHECK(HasSkip(idle, "not measured: cmax-test-no-sinfo not found"));
  }

  auto text = c.Ctl({"schedule", "list"});
  INFO(text.out);
  CHECK(text.exit.code == 0);
  CHECK(absl::StrContains(text.out, id));
  CHECK(absl::StrContains(text.out, kPlanName));
  CHECK(absl::StrContains(text.out, "active"));
  CHECK(absl::StrContains(text.out, "skipped slot "));

  // /metrics: the schedule's series.
  {
    std::ifstream out(c.dir() + "/coordinator.out");
    std::string line, metrics;
    while (std::getline(out, line)) {
      if (absl::StartsWith(line, "metrics on ")) metrics = line.substr(11);
    }
    REQUIRE(!metrics.empty());
    std::ifstream tok(c.token_file());
    std::string token;
    std::getline(tok, token);
    if (cmax::FindExecutable("curl").empty()) {
      WARN("curl not installed: /metrics not read");
    } else {
      auto m = c.OnHub({"curl", "-sf", "-H", "Authorization: Bearer " + token,
                        "http://" + metrics + "/metrics"});
      INFO(m.out << m.err);
      CHECK(m.exit.code == 0);
      const std::string labels = absl::StrCat("{schedule=\"", id, "\",plan=\"", kPlanName, "\"}");
      for (const char* series :
           {"cmax_schedule_runs_total", "cmax_schedule_skipped_slots_total",
            "cmax_schedule_failures_total", "cmax_schedule_last_run_timestamp_seconds",
            "cmax_schedule_next_run_timestamp_seconds", "cmax_schedule_paused"}) {
        CHECK(absl::StrContains(m.out, absl::StrCat(series, labels, " ")));
      }
    }
  }

  // Restart between slots: down for 5 s (two slots or more missed).
  c.StopCoordinator(SIGTERM);
  std::this_thread::sleep_for(5s);
  REQUIRE(c.StartCoordinator().ok());
  REQUIRE(c.WaitForAgents(2, "connected", 30s).ok());
  const auto restarted = Schedule(c, id);
  CHECK(restarted.created_unix_ns() == s.created_unix_ns());
  CHECK(restarted.runs_started() >= s.runs_started());
  CHECK(restarted.slots_skipped() >= skipped_before);
  const int64_t runs_before = restarted.runs_started();
  s = WaitFor(c, id, 40s, [&](const auto& s) {
    return s.runs_started() >= runs_before + 2 && HasSkip(s, "missed");
  });
  INFO(s.DebugString());
  CHECK(s.runs_started() >= runs_before + 2);
  CHECK(HasSkip(s, "missed while the coordinator was down or held up: run once now"));

  // Pause: no new run; resume: runs again.
  auto p = c.Ctl({"schedule", "pause", id});
  INFO(p.out << p.err);
  REQUIRE(p.exit.code == 0);
  s = WaitFor(c, id, 30s, [](const auto& s) { return s.current_run_id().empty(); });
  REQUIRE(s.current_run_id().empty());
  const int64_t paused_runs = s.runs_started();
  std::this_thread::sleep_for(5s);
  s = Schedule(c, id);
  CHECK(s.paused());
  CHECK(s.runs_started() == paused_runs);
  CHECK(absl::StrContains(c.Ctl({"schedule", "list"}).out, "paused"));
  REQUIRE(c.Ctl({"schedule", "resume", id}).exit.code == 0);
  s = WaitFor(c, id, 30s, [&](const auto& s) { return s.runs_started() > paused_runs; });
  CHECK(s.runs_started() > paused_runs);
  REQUIRE(c.Ctl({"schedule", "remove", id}).exit.code == 0);
  CHECK(Schedule(c, idle_id).runs_started() == 0);
  REQUIRE(c.Ctl({"schedule", "remove", idle_id}).exit.code == 0);

  // Every run of the schedule ran the stored plan, completed, and none
  // overlapped another (the next began after the previous had ended).
  std::vector<cmax::v1::RunInfo> runs;
  for (int i = 0; i < 60; ++i) {  // the last one ends (3 s) within 15 s
    runs = Runs(c);
    if (!runs.empty() && runs.back().finished_unix_ns() > 0) break;
    std::this_thread::sleep_for(250ms);
  }
  REQUIRE(runs.size() >= 5);
  CHECK(static_cast<int64_t>(runs.size()) == s.runs_started());
  for (size_t i = 0; i < runs.size(); ++i) {
    INFO(runs[i].run_id() << " " << runs[i].state() << " " << runs[i].message());
    CHECK(runs[i].state() == "completed");
    CHECK(runs[i].tasks_total() == 2);
    if (i + 1 < runs.size()) {
      CHECK(runs[i].finished_unix_ns() > 0);
      CHECK(runs[i].finished_unix_ns() <= runs[i + 1].created_unix_ns());
    }
  }
  auto list = c.Ctl({"schedule", "list", "--json"});
  CHECK(ParseJson<cmax::v1::ListSchedulesResponse>(list.out).schedules().empty());
}
