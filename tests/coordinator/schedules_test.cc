// Schedules (coordinator/schedules.h) driven by a fake clock and a fake
// view of the core, over a real store: slots, no overlap, missed slots run
// once, the daily window, waves, pause and resume, --only-idle's answers,
// bad input, and the state across a store reopen. Also the terms'
// parsing and arithmetic (schedule_terms.h) and sinfo's parser
// (slurm_idle.h). Nothing sleeps.
#include "coordinator/schedules.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/plan_parser.h"
#include "tests/coordinator/fake_clock.h"
#include "tests/scratch_dir.h"

namespace cmax::coordinator {
namespace {

constexpr int64_t kS = 1000000000;
// 2026-01-05T00:30:00Z.
constexpr int64_t kT0 = 1767573000 * kS;

class FakeRunner final : public ScheduleRunner {
 public:
  struct Started {
    std::string run_id;
    std::vector<std::string> nodes;
    std::string schedule_id;
  };
  struct Ask {
    std::string schedule_id;
    int64_t ask;
    std::vector<std::string> nodes;
  };
  std::vector<std::string> ConnectedNodes() override { return connected; }
  bool Settling() override { return settling; }
  absl::StatusOr<std::string> StartRun(const v1::Plan& plan, const std::vector<std::string>& nodes,
                                       const std::string& schedule_id) override {
    if (!refuse.ok()) return refuse;
    CHECK(plan.name() == "tiny");
    std::string id = absl::StrCat("run-", started.size() + 1);
    started.push_back({id, nodes, schedule_id});
    return id;
  }
  void AskIdle(const std::string& schedule_id, int64_t ask,
               const std::vector<std::string>& nodes) override {
    asks.push_back({schedule_id, ask, nodes});
  }

  std::vector<std::string> connected = {"node-0", "node-1", "node-2"};
  bool settling = false;
  absl::Status refuse;  // StartRun's answer when not OK
  std::vector<Started> started;
  std::vector<Ask> asks;
};

v1::ScheduleSpec Spec(const std::string& every) {
  v1::ScheduleSpec spec;
  auto plan = ParsePlan("name: tiny\nsuites:\n  - suite: selftest\n", "tiny.yaml");
  REQUIRE(plan.ok());
  *spec.mutable_plan() = *plan;
  spec.set_every(every);
  return spec;
}

struct Fixture {
  Fixture() { Open(); }
  void Open() {
    schedules.reset();
    store.reset();
    auto s = Store::Open(scratch.path + "/cmax.db");
    REQUIRE(s.ok());
    store = std::move(*s);
    schedules = std::make_unique<Schedules>(store.get(), &clock, &runner);
    schedules->SetLimits(limits);
    REQUIRE(schedules->Load().ok());
  }
  std::string Add(const v1::ScheduleSpec& spec, const std::string& added_by = "token") {
    auto added = schedules->Add(spec, added_by);
    INFO(added.status().ToString());
    REQUIRE(added.ok());
    return added->schedule_id();
  }
  // Moves the clock to `t` and ticks.
  void At(int64_t t) {
    clock.Set(t);
    schedules->Tick();
  }
  void End(const std::string& run_id, const std::string& state = "completed",
           int nodes_failed = 0) {
    v1::RunInfo run;
    run.set_run_id(run_id);
    run.set_state(state);
    run.set_tier("not rated");
    run.set_nodes_failed(nodes_failed);
    run.set_finished_unix_ns(clock.NowUnixNs());
    schedules->OnRunEnded(run);
    schedules->Tick();
  }
  const v1::ScheduleInfo& Info(const std::string& id) {
    const v1::ScheduleInfo* info = schedules->Find(id);
    REQUIRE(info != nullptr);
    return *info;
  }
  std::string LastSkip(const std::string& id) {
    const auto& info = Info(id);
    return info.skipped().empty() ? "" : info.skipped().rbegin()->reason();
  }

  cmax::testing::ScratchDir scratch;
  // Seconds allowed here (cmax-coordinator --min-schedule-period 1s); the
  // bounds' own tests set production's.
  Schedules::Limits limits{kS, 64};
  FakeClock clock{kT0};
  FakeRunner runner;
  std::unique_ptr<Store> store;
  std::unique_ptr<Schedules> schedules;
};

using Nodes = std::vector<std::string>;

}  // namespace

TEST_CASE("schedule terms: every, window, nodes", "[schedules]") {
  CHECK(*ParseEvery("2s") == 2 * kS);
  CHECK(*ParseEvery("15m") == 900 * kS);
  CHECK(*ParseEvery("6h") == 6 * 3600 * kS);
  CHECK(*ParseEvery("7d") == 7 * 86400 * kS);
  CHECK(*ParseEvery("365d") == 365ll * 86400 * kS);
  for (const char* bad : {"", "7", "0s", "-1s", "1.5h", "7w", "366d", "d", "+5m", " 5m", "5 m",
                          "99999999999999999999d"}) {
    INFO(bad);
    auto r = ParseEvery(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(absl::StrContains(r.status().message(), "--every"));
  }
  auto w = ParseWindow("02:00-06:30");
  REQUIRE(w.ok());
  CHECK(w->start_minute == 120);
  CHECK(w->end_minute == 390);
  CHECK(ParseWindow("22:00-04:00").ok());
  for (const char* bad : {"", "2:00-6:00", "02:00", "02:00-02:00", "24:00-01:00", "01:60-02:00",
                          "02:00-06:00-07:00", "+1:00-02:00", "aa:bb-cc:dd"}) {
    INFO(bad);
    auto r = ParseWindow(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(absl::StrContains(r.status().message(), "UTC"));
  }
  CHECK(ParseNodeSelector("")->all());
  CHECK(ParseNodeSelector("all")->all());
  auto names = ParseNodeSelector("node-1,node-2,node-1");
  REQUIRE(names.ok());
  CHECK(Nodes(names->names().begin(), names->names().end()) == Nodes{"node-1", "node-2"});
  CHECK(ParseNodeSelector("regex:node-[0-9]+")->name_regex() == "node-[0-9]+");
  CHECK_FALSE(ParseNodeSelector("regex:(").ok());
  CHECK_FALSE(ParseNodeSelector("regex:").ok());
  CHECK_FALSE(ParseNodeSelector("a;b").ok());
  CHECK_FALSE(ParseNodeSelector("a,,b").ok());

  std::vector<std::string> missing;
  CHECK(SelectScheduleNodes(*ParseNodeSelector("node-2,node-9"), {"node-1", "node-2"}, &missing) ==
        Nodes{"node-2"});
  CHECK(missing == Nodes{"node-9"});
  CHECK(SelectScheduleNodes(*ParseNodeSelector("regex:gpu-.*"), {"cpu-1", "gpu-2", "gpu-1"},
                            nullptr) == Nodes{"gpu-1", "gpu-2"});
  CHECK(SelectScheduleNodes(*ParseNodeSelector("all"), {"b", "a"}, nullptr) == Nodes{"a", "b"});
}

TEST_CASE("schedule terms: slots and the daily window in UTC", "[schedules]") {
  const int64_t every = 10 * kS;
  CHECK(NextSlotAfter(kT0, every, kT0) == kT0 + every);
  CHECK(NextSlotAfter(kT0, every, kT0 + every - 1) == kT0 + every);
  CHECK(NextSlotAfter(kT0, every, kT0 + every) == kT0 + 2 * every);
  CHECK(NextSlotAfter(kT0, every, kT0 + 55 * kS) == kT0 + 60 * kS);

  const int64_t midnight = kT0 - 30 * 60 * kS;  // 2026-01-05T00:00:00Z
  const DailyWindow w = *ParseWindow("02:00-06:00");
  CHECK_FALSE(InWindow(w, midnight + 2 * 3600 * kS - 1));
  CHECK(InWindow(w, midnight + 2 * 3600 * kS));
  CHECK(InWindow(w, midnight + 6 * 3600 * kS - 1));
  CHECK_FALSE(InWindow(w, midnight + 6 * 3600 * kS));
  CHECK(NextInWindow(w, kT0) == midnight + 2 * 3600 * kS);
  CHECK(NextInWindow(w, midnight + 3 * 3600 * kS) == midnight + 3 * 3600 * kS);
  CHECK(NextInWindow(w, midnight + 7 * 3600 * kS) == midnight + 26 * 3600 * kS);
  const DailyWindow night = *ParseWindow("22:00-04:00");
  CHECK(InWindow(night, kT0));  // 00:30
  CHECK(InWindow(night, midnight + 23 * 3600 * kS));
  CHECK_FALSE(InWindow(night, midnight + 12 * 3600 * kS));
  CHECK(NextInWindow(night, midnight + 12 * 3600 * kS) == midnight + 22 * 3600 * kS);
}

TEST_CASE("a schedule starts a run at each slot, on the connected nodes", "[schedules]") {
  Fixture f;
  const std::string id = f.Add(Spec("10s"));
  CHECK(f.Info(id).next_slot_unix_ns() == kT0 + 10 * kS);
  CHECK(f.Info(id).next_start_unix_ns() == kT0 + 10 * kS);
  f.At(kT0 + 9 * kS);
  CHECK(f.runner.started.empty());
  f.At(kT0 + 10 * kS);
  REQUIRE(f.runner.started.size() == 1);
  CHECK(f.runner.started[0].nodes == Nodes{"node-0", "node-1", "node-2"});
  CHECK(f.runner.started[0].schedule_id == id);
  CHECK(f.Info(id).current_run_id() == "run-1");
  CHECK(f.Info(id).next_slot_unix_ns() == kT0 + 20 * kS);
  f.At(kT0 + 10 * kS + 1);  // the same slot again: nothing new
  CHECK(f.runner.started.size() == 1);
  f.End("run-1");
  CHECK(f.Info(id).current_run_id().empty());
  CHECK(f.Info(id).last_run_id() == "run-1");
  CHECK(f.Info(id).last_outcome() == "completed; tier not rated; 0 nodes failed");
  CHECK_FALSE(f.Info(id).last_failed());
  f.At(kT0 + 20 * kS);
  CHECK(f.runner.started.size() == 2);
  f.End("run-2", "completed", 1);  // a node failed: a failure
  CHECK(f.Info(id).last_failed());
  CHECK(f.Info(id).failures() == 1);
  CHECK(f.Info(id).runs_started() == 2);
  CHECK(f.Info(id).slots_skipped() == 0);
  f.End("run-unrelated");  // another run's end changes nothing
  CHECK(f.Info(id).last_run_id() == "run-2");
}

TEST_CASE("a slot whose previous run is still going is skipped, with the reason",
          "[schedules]") {
  Fixture f;
  const std::string id = f.Add(Spec("10s"));
  f.At(kT0 + 10 * kS);
  REQUIRE(f.runner.started.size() == 1);
  f.At(kT0 + 20 * kS);
  f.At(kT0 + 30 * kS);
  CHECK(f.runner.started.size() == 1);  // never two runs at once
  CHECK(f.Info(id).slots_skipped() == 2);
  CHECK(f.LastSkip(id) == "the previous run run-1 (wave 1 of 1) is still going");
  CHECK(f.Info(id).skipped().rbegin()->slot_unix_ns() == kT0 + 30 * kS);
  f.End("run-1");
  CHECK(f.runner.started.size() == 1);  // not before the next slot
  f.At(kT0 + 40 * kS);
  CHECK(f.runner.started.size() == 2);
}

TEST_CASE("slots missed while the coordinator was down run once", "[schedules]") {
  Fixture f;
  const std::string id = f.Add(Spec("10s"));
  // Nothing ticks from the add until 5 slots later (the coordinator was
  // down), then it ticks at 55 s: one run, and the rest recorded.
  f.At(kT0 + 55 * kS);
  REQUIRE(f.runner.started.size() == 1);
  CHECK(f.Info(id).next_slot_unix_ns() == kT0 + 60 * kS);
  CHECK(f.LastSkip(id) ==
        "4 slots missed while the coordinator was down or held up: run once now");
  CHECK(f.Info(id).slots_skipped() == 4);
  f.At(kT0 + 56 * kS);
  CHECK(f.runner.started.size() == 1);
}

TEST_CASE("after a restart a due slot waits for the agents to come back", "[schedules]") {
  Fixture f;
  const std::string id = f.Add(Spec("10s"));
  f.Open();  // restarted
  f.runner.settling = true;
  f.runner.connected = {"node-0"};  // one agent back so far
  f.At(kT0 + 25 * kS);
  CHECK(f.runner.started.empty());
  CHECK(f.Info(id).slots_skipped() == 0);  // waiting, not skipped
  f.runner.settling = false;
  f.runner.connected = {"node-0", "node-1", "node-2"};
  f.At(kT0 + 26 * kS);
  REQUIRE(f.runner.started.size() == 1);
  CHECK(f.runner.started[0].nodes == Nodes{"node-0", "node-1", "node-2"});
  CHECK(f.Info(id).slots_skipped() == 1);  // the slot at 10 s, run with the one at 20 s
}

TEST_CASE("window: a slot due outside the daily window waits for its opening",
          "[schedules]") {
  Fixture f;
  const int64_t midnight = kT0 - 30 * 60 * kS;
  const int64_t h = 3600 * kS;
  v1::ScheduleSpec spec = Spec("30m");
  spec.set_window("02:00-03:00");
  // Added at 00:30: the slots count from the window's opening, 02:00, which
  // is the first; then 02:30, 03:00 (outside: waits), ...
  const std::string id = f.Add(spec);
  CHECK(f.Info(id).next_slot_unix_ns() == midnight + 2 * h);
  CHECK(f.Info(id).next_start_unix_ns() == midnight + 2 * h);
  f.At(midnight + h + h / 2);  // 01:30
  CHECK(f.runner.started.empty());
  f.At(midnight + 2 * h - 1);
  CHECK(f.runner.started.empty());
  f.At(midnight + 2 * h);  // 02:00: the window opens
  REQUIRE(f.runner.started.size() == 1);
  CHECK(f.Info(id).next_slot_unix_ns() == midnight + 2 * h + h / 2);
  CHECK(f.Info(id).slots_skipped() == 0);
  f.End("run-1");
  f.At(midnight + 2 * h + h / 2);  // 02:30, inside
  REQUIRE(f.runner.started.size() == 2);
  f.End("run-2");
  CHECK(f.Info(id).next_slot_unix_ns() == midnight + 3 * h);
  CHECK(f.Info(id).next_start_unix_ns() == midnight + 26 * h);  // tomorrow 02:00
  for (int hour = 3; hour < 26; ++hour) f.At(midnight + hour * h + h / 2);
  CHECK(f.runner.started.size() == 2);
  CHECK(f.Info(id).slots_skipped() == 0);  // waiting for the window is no skip
  f.At(midnight + 26 * h);  // the next day's window: one run for all those slots
  CHECK(f.runner.started.size() == 3);
}

TEST_CASE("window: --every 7d --window 02:00-06:00 added at noon runs tonight, then weekly",
          "[schedules]") {
  Fixture f;
  const int64_t midnight = kT0 - 30 * 60 * kS;
  const int64_t h = 3600 * kS, day = 24 * h;
  v1::ScheduleSpec spec = Spec("7d");
  spec.set_window("02:00-06:00");
  f.At(midnight + 12 * h);
  const std::string id = f.Add(spec);
  // Not a week out: the night after the add.
  CHECK(f.Info(id).next_slot_unix_ns() == midnight + 26 * h);
  CHECK(f.Info(id).next_start_unix_ns() == midnight + 26 * h);
  f.At(midnight + 26 * h - 1);
  CHECK(f.runner.started.empty());
  f.At(midnight + 26 * h);
  REQUIRE(f.runner.started.size() == 1);
  f.End("run-1");
  // The next is a week on, at the same time of night: inside the window.
  CHECK(f.Info(id).next_slot_unix_ns() == midnight + 26 * h + 7 * day);
  CHECK(f.Info(id).next_start_unix_ns() == midnight + 26 * h + 7 * day);

  // Added inside the window: it runs now.
  f.At(midnight + 8 * day + 3 * h);
  const std::string inside = f.Add(spec);
  CHECK(f.Info(inside).next_slot_unix_ns() == midnight + 8 * day + 3 * h);
}

TEST_CASE("max-nodes-at-once rolls the plan through the nodes in waves", "[schedules]") {
  Fixture f;
  f.runner.connected = {"node-4", "node-3", "node-2", "node-1", "node-0"};
  v1::ScheduleSpec spec = Spec("100s");
  spec.set_max_nodes_at_once(2);
  const std::string id = f.Add(spec);
  f.At(kT0 + 100 * kS);
  REQUIRE(f.runner.started.size() == 1);
  CHECK(f.runner.started[0].nodes == Nodes{"node-0", "node-1"});
  CHECK(f.Info(id).wave() == 1);
  CHECK(f.Info(id).waves() == 3);
  CHECK(f.Info(id).pending_nodes_size() == 3);
  f.At(kT0 + 110 * kS);
  CHECK(f.runner.started.size() == 1);  // the next wave waits for this run's end
  f.End("run-1");
  REQUIRE(f.runner.started.size() == 2);
  CHECK(f.runner.started[1].nodes == Nodes{"node-2", "node-3"});
  CHECK(f.Info(id).wave() == 2);
  f.At(kT0 + 200 * kS);  // a slot during the waves is skipped
  CHECK(f.runner.started.size() == 2);
  CHECK(f.LastSkip(id) == "the previous run run-2 (wave 2 of 3) is still going");
  f.End("run-2");
  REQUIRE(f.runner.started.size() == 3);
  CHECK(f.runner.started[2].nodes == Nodes{"node-4"});
  CHECK(f.Info(id).wave() == 3);
  CHECK(f.Info(id).pending_nodes_size() == 0);
  f.End("run-3");
  CHECK(f.runner.started.size() == 3);  // the pass is over
  CHECK(f.Info(id).current_run_id().empty());
  f.At(kT0 + 300 * kS);
  REQUIRE(f.runner.started.size() == 4);
  CHECK(f.runner.started[3].nodes == Nodes{"node-0", "node-1"});

  SECTION("a node gone between waves is left for the next slot") {
    f.runner.connected = {"node-0", "node-1", "node-3", "node-4"};
    f.End("run-4");
    REQUIRE(f.runner.started.size() == 5);
    CHECK(f.runner.started[4].nodes == Nodes{"node-3", "node-4"});
    CHECK(absl::StrContains(f.LastSkip(id), "not connected any more, left for the next slot: "
                                            "node-2"));
    CHECK(f.Info(id).skipped().rbegin()->slots() == 0);  // a part, not the slot
  }
}

TEST_CASE("pause and resume", "[schedules]") {
  Fixture f;
  f.runner.connected = {"node-0", "node-1", "node-2", "node-3"};
  v1::ScheduleSpec spec = Spec("10s");
  spec.set_max_nodes_at_once(2);
  const std::string id = f.Add(spec);
  f.At(kT0 + 10 * kS);
  REQUIRE(f.runner.started.size() == 1);
  auto paused = f.schedules->Pause(id);
  REQUIRE(paused.ok());
  CHECK(paused->paused());
  CHECK(paused->current_run_id() == "run-1");  // the run goes on
  CHECK(paused->pending_nodes_size() == 0);    // the later wave is dropped
  CHECK(absl::StrContains(f.LastSkip(id), "paused: 2 nodes of the slot left unrun"));
  CHECK(paused->next_start_unix_ns() == 0);
  f.End("run-1");
  CHECK(f.runner.started.size() == 1);  // no next wave while paused
  for (int s = 20; s <= 100; s += 10) f.At(kT0 + s * kS);
  CHECK(f.runner.started.size() == 1);  // no slot while paused
  f.clock.Set(kT0 + 105 * kS);
  auto resumed = f.schedules->Resume(id);
  REQUIRE(resumed.ok());
  CHECK_FALSE(resumed->paused());
  CHECK(resumed->next_slot_unix_ns() == kT0 + 110 * kS);  // not the slots that passed
  f.At(kT0 + 106 * kS);
  CHECK(f.runner.started.size() == 1);
  f.At(kT0 + 110 * kS);
  CHECK(f.runner.started.size() == 2);
  CHECK(f.schedules->Pause("s-none").status().code() == absl::StatusCode::kNotFound);
  CHECK(f.schedules->Resume("s-none").status().code() == absl::StatusCode::kNotFound);
}

TEST_CASE("remove forgets the schedule, in the store too", "[schedules]") {
  Fixture f;
  const std::string keep = f.Add(Spec("10s"));
  const std::string id = f.Add(Spec("10s"));
  REQUIRE(f.schedules->Remove(id).ok());
  CHECK(f.schedules->Find(id) == nullptr);
  CHECK(f.schedules->Remove(id).status().code() == absl::StatusCode::kNotFound);
  f.Open();
  CHECK(f.schedules->Find(id) == nullptr);
  CHECK(f.schedules->Find(keep) != nullptr);
}

TEST_CASE("bad input is refused and nothing is stored", "[schedules]") {
  Fixture f;
  auto refused = [&](const v1::ScheduleSpec& spec, const std::string& words) {
    auto r = f.schedules->Add(spec);
    INFO(r.status().ToString());
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(absl::StrContains(r.status().message(), words));
  };
  refused(Spec("7x"), "--every");
  v1::ScheduleSpec spec = Spec("7d");
  spec.set_window("02:00-02:00");
  refused(spec, "--window");
  spec = Spec("7d");
  spec.set_nodes("node;1");
  refused(spec, "--nodes");
  spec = Spec("7d");
  spec.set_max_nodes_at_once(-1);
  refused(spec, "--max-nodes-at-once");
  spec = Spec("7d");
  spec.mutable_plan()->mutable_suites(0)->set_suite("no-such-suite");
  refused(spec, "the plan: suites[0] (no-such-suite): unknown suite");
  spec = Spec("7d");
  spec.clear_plan();
  refused(spec, "no plan");
  CHECK(f.schedules->List().empty());
  auto stored = f.store->LoadSchedules();
  REQUIRE(stored.ok());
  CHECK(stored->empty());
}

TEST_CASE("schedules are bounded: a period under the minimum and one past the cap are refused",
          "[schedules][security]") {
  Fixture f;
  CHECK(Schedules::Limits{}.min_every_ns == 3600 * kS);  // production's default: 1 h
  CHECK(Schedules::Limits{}.max_schedules == 64);
  f.limits = {3600 * kS, 3};
  f.Open();
  for (const char* every : {"1s", "30m", "59m"}) {
    auto r = f.schedules->Add(Spec(every), "token");
    INFO(every << ": " << r.status().ToString());
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(absl::StrContains(r.status().message(), "the minimum period is 1h"));
    CHECK(absl::StrContains(r.status().message(), "--min-schedule-period"));
  }
  std::vector<std::string> ids;
  for (const char* every : {"1h", "6h", "7d"}) ids.push_back(f.Add(Spec(every)));
  auto fourth = f.schedules->Add(Spec("1d"), "token");
  REQUIRE_FALSE(fourth.ok());
  CHECK(fourth.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(absl::StrContains(fourth.status().message(), "3 schedules"));
  CHECK(absl::StrContains(fourth.status().message(), "--max-schedules 3"));
  CHECK(f.schedules->List().size() == 3);
  auto stored = f.store->LoadSchedules();
  REQUIRE(stored.ok());
  CHECK(stored->size() == 3);
  // Paused ones count; a removed one frees its place.
  REQUIRE(f.schedules->Pause(ids[0]).ok());
  CHECK_FALSE(f.schedules->Add(Spec("1d"), "token").ok());
  REQUIRE(f.schedules->Remove(ids[0]).ok());
  f.Add(Spec("1d"));
  // Nothing refused ever ran.
  f.At(kT0 + 3599 * kS);
  CHECK(f.runner.started.empty());
}

TEST_CASE("who added a schedule is recorded and kept across a restart", "[schedules][security]") {
  Fixture f;
  const std::string by_cert = f.Add(Spec("10s"), "certificate ops-alice");
  const std::string by_token = f.Add(Spec("20s"), "token");
  CHECK(f.Info(by_cert).added_by() == "certificate ops-alice");
  CHECK(f.Info(by_token).added_by() == "token");
  f.Open();
  CHECK(f.Info(by_cert).added_by() == "certificate ops-alice");
  CHECK(f.Info(by_token).added_by() == "token");
}

TEST_CASE("a stored schedule under the minimum is paused at start, and resume is refused",
          "[schedules][security]") {
  Fixture f;
  const std::string fast = f.Add(Spec("1s"));   // under a lower minimum, before
  const std::string slow = f.Add(Spec("2h"));
  f.limits = {3600 * kS, 64};
  f.Open();  // the coordinator restarted with production's minimum
  CHECK(f.Info(fast).paused());
  CHECK(absl::StrContains(f.LastSkip(fast), "the minimum period is 1h"));
  CHECK_FALSE(f.Info(slow).paused());
  auto resumed = f.schedules->Resume(fast);
  REQUIRE_FALSE(resumed.ok());
  CHECK(resumed.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(resumed.status().message(), "--min-schedule-period"));
  f.At(kT0 + 60 * kS);
  CHECK(f.runner.started.empty());
  // Paused in the store too: another restart keeps it paused.
  f.Open();
  CHECK(f.Info(fast).paused());
}

TEST_CASE("a run that cannot start is a failure and ends the slot", "[schedules]") {
  Fixture f;
  v1::ScheduleSpec spec = Spec("10s");
  spec.set_max_nodes_at_once(1);
  const std::string id = f.Add(spec);
  f.runner.refuse = absl::FailedPreconditionError("node 'x' named by the plan is not connected");
  f.At(kT0 + 10 * kS);
  CHECK(f.runner.started.empty());
  CHECK(f.Info(id).failures() == 1);
  CHECK(f.Info(id).last_failed());
  CHECK(f.Info(id).last_outcome() ==
        "could not start: node 'x' named by the plan is not connected");
  CHECK(f.Info(id).pending_nodes_size() == 0);  // not one failure per wave
  f.runner.refuse = absl::OkStatus();
  f.At(kT0 + 20 * kS);
  CHECK(f.runner.started.size() == 1);
}

TEST_CASE("no connected node at a slot: skipped with the reason", "[schedules]") {
  Fixture f;
  v1::ScheduleSpec spec = Spec("10s");
  spec.set_nodes("node-7,node-8");
  const std::string id = f.Add(spec);
  f.At(kT0 + 10 * kS);
  CHECK(f.runner.started.empty());
  CHECK(f.LastSkip(id) == "none of the nodes is connected: node-7, node-8");
  CHECK(f.Info(id).slots_skipped() == 1);
}

TEST_CASE("only-idle: busy nodes wait for the next slot, Slurm absent skips the slot",
          "[schedules]") {
  Fixture f;
  v1::ScheduleSpec spec = Spec("10s");
  spec.set_only_idle(true);
  const std::string id = f.Add(spec);
  f.At(kT0 + 10 * kS);
  CHECK(f.runner.started.empty());
  REQUIRE(f.runner.asks.size() == 1);
  CHECK(f.runner.asks[0].nodes == Nodes{"node-0", "node-1", "node-2"});
  CHECK(f.Info(id).probing());
  f.At(kT0 + 20 * kS);  // still waiting for Slurm: the slot is skipped
  CHECK(f.LastSkip(id) == "the previous slot is still waiting for Slurm's answer");
  CHECK(f.runner.asks.size() == 1);

  SlurmNodeStates answer = ParseSinfo("node-0 idle\nnode-1 allocated\nnode-9 idle\n");
  f.schedules->OnIdleAnswer(id, f.runner.asks[0].ask + 1, answer);  // stale: dropped
  CHECK(f.runner.started.empty());
  f.schedules->OnIdleAnswer(id, f.runner.asks[0].ask, answer);
  REQUIRE(f.runner.started.size() == 1);
  CHECK(f.runner.started[0].nodes == Nodes{"node-0"});
  CHECK(f.LastSkip(id) ==
        "not idle in Slurm, left for the next slot: node-1 (allocated), node-2 (not a Slurm "
        "node)");
  f.End("run-1");
  CHECK(f.runner.asks.size() == 1);  // the pass is over: nothing left to ask about

  // The next slot: node-1 is idle now and runs.
  f.At(kT0 + 30 * kS);
  REQUIRE(f.runner.asks.size() == 2);
  f.schedules->OnIdleAnswer(id, f.runner.asks[1].ask,
                            ParseSinfo("node-0 mixed\nnode-1 idle\nnode-2 idle*\n"));
  REQUIRE(f.runner.started.size() == 2);
  CHECK(f.runner.started[1].nodes == Nodes{"node-1"});
  f.End("run-2");

  // Every node busy: the slot is skipped.
  f.At(kT0 + 40 * kS);
  REQUIRE(f.runner.asks.size() == 3);
  f.schedules->OnIdleAnswer(id, f.runner.asks[2].ask,
                            ParseSinfo("node-0 allocated\nnode-1 drained\nnode-2 down\n"));
  CHECK(f.runner.started.size() == 2);
  CHECK(absl::StartsWith(f.LastSkip(id), "no selected node is idle in Slurm: node-0 (allocated)"));
  CHECK(f.Info(id).skipped().rbegin()->slots() == 1);

  // Slurm not there: skipped, never run on every node.
  f.At(kT0 + 50 * kS);
  REQUIRE(f.runner.asks.size() == 4);
  SlurmNodeStates none;
  none.reason = "not measured: sinfo not found";
  f.schedules->OnIdleAnswer(id, f.runner.asks[3].ask, none);
  CHECK(f.runner.started.size() == 2);
  CHECK(f.LastSkip(id) == "not measured: sinfo not found");
  CHECK_FALSE(f.Info(id).probing());
}

TEST_CASE("only-idle with waves asks Slurm before each wave", "[schedules]") {
  Fixture f;
  f.runner.connected = {"node-0", "node-1", "node-2", "node-3"};
  v1::ScheduleSpec spec = Spec("100s");
  spec.set_only_idle(true);
  spec.set_max_nodes_at_once(2);
  const std::string id = f.Add(spec);
  f.At(kT0 + 100 * kS);
  REQUIRE(f.runner.asks.size() == 1);
  f.schedules->OnIdleAnswer(id, f.runner.asks[0].ask,
                            ParseSinfo("node-0 idle\nnode-1 idle\nnode-2 idle\nnode-3 idle\n"));
  REQUIRE(f.runner.started.size() == 1);
  CHECK(f.runner.started[0].nodes == Nodes{"node-0", "node-1"});
  f.End("run-1");
  REQUIRE(f.runner.asks.size() == 2);
  CHECK(f.runner.asks[1].nodes == Nodes{"node-2", "node-3"});
  f.schedules->OnIdleAnswer(id, f.runner.asks[1].ask,
                            ParseSinfo("node-2 allocated\nnode-3 idle\n"));
  REQUIRE(f.runner.started.size() == 2);
  CHECK(f.runner.started[1].nodes == Nodes{"node-3"});
  CHECK(f.Info(id).skipped().rbegin()->slots() == 0);  // part of a slot that ran
}

TEST_CASE("a schedule's state survives a store reopen (a coordinator restart)",
          "[schedules]") {
  Fixture f;
  f.runner.connected = {"node-0", "node-1", "node-2"};
  v1::ScheduleSpec spec = Spec("10s");
  spec.set_max_nodes_at_once(2);
  spec.set_window("00:00-23:59");
  const std::string id = f.Add(spec);
  const std::string paused = f.Add(Spec("1d"));
  REQUIRE(f.schedules->Pause(paused).ok());
  f.At(kT0 + 10 * kS);
  f.At(kT0 + 20 * kS);  // skipped: run-1 still going
  REQUIRE(f.runner.started.size() == 1);
  const v1::ScheduleInfo before = f.Info(id);

  f.Open();  // a new component over the reopened store
  const v1::ScheduleInfo& after = f.Info(id);
  CHECK(after.SerializeAsString() == before.SerializeAsString());
  CHECK(after.current_run_id() == "run-1");
  CHECK(after.pending_nodes_size() == 1);
  CHECK(after.spec().window() == "00:00-23:59");
  CHECK(after.spec().plan().name() == "tiny");
  CHECK(after.slots_skipped() == 1);
  CHECK(f.Info(paused).paused());
  CHECK(f.schedules->CurrentRuns() == Nodes{"run-1"});
  // The run ends after the restart: the next wave starts.
  f.End("run-1");
  REQUIRE(f.runner.started.size() == 2);
  CHECK(f.runner.started[1].nodes == Nodes{"node-2"});
  // A paused schedule stays paused, the other goes on at its slots.
  f.End("run-2");
  f.At(kT0 + 30 * kS);
  CHECK(f.runner.started.size() == 3);
  CHECK(f.Info(paused).next_start_unix_ns() == 0);
}

TEST_CASE("a restart while waiting for Slurm asks again", "[schedules]") {
  Fixture f;
  v1::ScheduleSpec spec = Spec("10s");
  spec.set_only_idle(true);
  const std::string id = f.Add(spec);
  f.At(kT0 + 10 * kS);
  REQUIRE(f.runner.asks.size() == 1);
  f.Open();
  CHECK(f.Info(id).probing());
  f.At(kT0 + 11 * kS);
  REQUIRE(f.runner.asks.size() == 2);  // the first answer died with the old process
  f.At(kT0 + 12 * kS);
  CHECK(f.runner.asks.size() == 2);  // asked once
  f.schedules->OnIdleAnswer(id, f.runner.asks[1].ask, ParseSinfo("node-0 idle\n"));
  REQUIRE(f.runner.started.size() == 1);
  CHECK(f.runner.started[0].nodes == Nodes{"node-0"});
}

TEST_CASE("sinfo's answer: only a plain idle is idle", "[schedules][slurm]") {
  // What `sinfo -h -N -o "%N %T"` prints (Slurm 22.05, Debian 12): one line
  // a node and partition, the extended state with its flag suffixes.
  SlurmNodeStates s = ParseSinfo(
      "gpu-01 idle\ngpu-02 allocated\ngpu-03 mixed\ngpu-04 idle*\ngpu-05 drained\n"
      "gpu-06 idle~\ngpu-07 idle\ngpu-07 allocated\ngpu-08 idle\ngpu-08 idle\n"
      "bad;name idle\nonly-one-field\n");
  CHECK(s.measured);
  CHECK(IsSlurmIdle(s.states["gpu-01"]));
  CHECK_FALSE(IsSlurmIdle(s.states["gpu-02"]));
  CHECK_FALSE(IsSlurmIdle(s.states["gpu-03"]));
  CHECK_FALSE(IsSlurmIdle(s.states["gpu-04"]));
  CHECK_FALSE(IsSlurmIdle(s.states["gpu-05"]));
  CHECK_FALSE(IsSlurmIdle(s.states["gpu-06"]));
  CHECK(s.states["gpu-07"] == "allocated");  // busy in one partition: busy
  CHECK(IsSlurmIdle(s.states["gpu-08"]));
  CHECK(s.states.count("bad;name") == 0);
  CHECK(s.states.size() == 8);

  SlurmNodeStates missing = QuerySinfo("/nonexistent/sinfo");
  CHECK_FALSE(missing.measured);
  CHECK(missing.reason == "not measured: /nonexistent/sinfo not found");

  cmax::testing::ScratchDir dir;
  const std::string fake = dir.path + "/sinfo";
  {
    std::ofstream out(fake);
    out << "#!/bin/sh\n[ \"$*\" = '-h -N -o %N %T' ] || { echo \"bad args: $*\" >&2; exit 9; }\n"
           "printf 'n1 idle\\nn2 allocated\\n'\n";
  }
  chmod(fake.c_str(), 0755);
  SlurmNodeStates got = QuerySinfo(fake);
  INFO(got.reason);
  REQUIRE(got.measured);
  CHECK(got.states == std::map<std::string, std::string>{{"n1", "idle"}, {"n2", "allocated"}});
  {
    std::ofstream out(fake);
    out << "#!/bin/sh\necho 'sinfo: error: Unable to contact slurm controller' >&2\nexit 1\n";
  }
  SlurmNodeStates failed = QuerySinfo(fake);
  CHECK_FALSE(failed.measured);
  CHECK(absl::StrContains(failed.reason, "failed (exit 1): sinfo: error: Unable to contact"));
}

TEST_CASE("a run's outcome in words", "[schedules]") {
  v1::RunInfo run;
  run.set_state("completed");
  run.set_tier("Gold");
  bool failed = true;
  CHECK(RunOutcome(run, &failed) == "completed; tier Gold; 0 nodes failed");
  CHECK_FALSE(failed);
  run.set_nodes_failed(1);
  CHECK(RunOutcome(run, &failed) == "completed; tier Gold; 1 node failed");
  CHECK(failed);
  run.set_nodes_failed(0);
  run.set_state("cancelled");
  run.clear_tier();
  CHECK(RunOutcome(run, &failed) == "cancelled; tier none; 0 nodes failed");
  CHECK(failed);
}

}  // namespace cmax::coordinator
