// Task-state names (common/task_state.h): one table for the coordinator,
// cmaxctl, the web view and the scorecard; and the run messages
// (cmax/v1/run.proto) still read as the service's did before they moved.
#include "common/task_state.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "common/plural.h"
#include "google/protobuf/util/json_util.h"

TEST_CASE("every task state has its own name and the end states are terminal", "[task_state]") {
  const auto* e = cmax::v1::TaskState_descriptor();
  std::set<std::string> names;
  int terminal = 0;
  for (int i = 0; i < e->value_count(); ++i) {
    auto s = static_cast<cmax::v1::TaskState>(e->value(i)->number());
    INFO(e->value(i)->name());
    if (s == cmax::v1::TASK_STATE_UNSPECIFIED) {
      CHECK(std::string(cmax::TaskStateName(s)) == "unknown");
      continue;
    }
    CHECK(names.insert(cmax::TaskStateName(s)).second);
    CHECK(std::string(cmax::TaskStateName(s)) != "unknown");
    terminal += cmax::IsTerminal(s) ? 1 : 0;
  }
  CHECK(names == std::set<std::string>{"pending", "assigned", "running", "completed", "failed",
                                       "timed_out", "lost", "cancelled"});
  CHECK(terminal == 5);
  CHECK_FALSE(cmax::IsTerminal(cmax::v1::TASK_PENDING));
  CHECK_FALSE(cmax::IsTerminal(cmax::v1::TASK_ASSIGNED));
  CHECK_FALSE(cmax::IsTerminal(cmax::v1::TASK_RUNNING));
  CHECK(cmax::IsTerminal(cmax::v1::TASK_TIMED_OUT));
  CHECK(std::string(cmax::TaskStateName(static_cast<cmax::v1::TaskState>(42))) == "unknown");
}

// The scorecard carries a task's state by name; reading it back gives the
// state, and nothing for a name no state has.
TEST_CASE("a task state's name reads back as the state", "[task_state]") {
  const auto* e = cmax::v1::TaskState_descriptor();
  for (int i = 0; i < e->value_count(); ++i) {
    auto s = static_cast<cmax::v1::TaskState>(e->value(i)->number());
    INFO(e->value(i)->name());
    if (s == cmax::v1::TASK_STATE_UNSPECIFIED) continue;
    REQUIRE(cmax::TaskStateFromName(cmax::TaskStateName(s)).has_value());
    CHECK(*cmax::TaskStateFromName(cmax::TaskStateName(s)) == s);
  }
  for (const char* bad : {"unknown", "", "Failed", "TASK_FAILED", "timed out"}) {
    INFO(bad);
    CHECK_FALSE(cmax::TaskStateFromName(bad).has_value());
  }
}

// One predicate for the scheduler's tasks_failed and cmaxctl's failures.
TEST_CASE("failed, timed out and lost are the failed states", "[task_state]") {
  const auto* e = cmax::v1::TaskState_descriptor();
  std::set<std::string> failed;
  for (int i = 0; i < e->value_count(); ++i) {
    auto s = static_cast<cmax::v1::TaskState>(e->value(i)->number());
    if (cmax::IsFailedState(s)) {
      CHECK(cmax::IsTerminal(s));
      failed.insert(cmax::TaskStateName(s));
    }
  }
  CHECK(failed == std::set<std::string>{"failed", "timed_out", "lost"});
}

// One reading of a failed state's two kinds, for the judges, cmaxctl's
// lines and counts, and the coordinator's: could not run (exit code 2) and
// broke (every other failed state).
TEST_CASE("a failed state either could not run (exit code 2) or broke", "[task_state]") {
  const auto* e = cmax::v1::TaskState_descriptor();
  for (int i = 0; i < e->value_count(); ++i) {
    for (int code : {-1, 0, 1, cmax::kCouldNotRunExit, 139}) {
      cmax::v1::TaskInfo t;
      t.set_state(static_cast<cmax::v1::TaskState>(e->value(i)->number()));
      t.set_exit_code(code);
      INFO(e->value(i)->name() << " exit code " << code);
      CHECK(cmax::TaskCouldNotRun(t) == (t.state() == cmax::v1::TASK_FAILED && code == 2));
      CHECK(cmax::TaskBroke(t) == (cmax::IsFailedState(t.state()) && !cmax::TaskCouldNotRun(t)));
      CHECK(cmax::TaskBroke(t.state(), code) == cmax::TaskBroke(t));
    }
  }
  cmax::v1::TaskInfo lost;
  lost.set_state(cmax::v1::TASK_LOST);
  lost.set_exit_code(2);  // a lost task broke, whatever its last code
  CHECK(cmax::TaskBroke(lost));
  CHECK_FALSE(cmax::TaskCouldNotRun(lost));
}

// The store keeps TaskInfo and ExportedRecord as wire bytes, and cmaxctl
// --json and the scorecard JSON carry their JSON: moving them from
// service.proto to run.proto kept the package, the names and the field
// numbers, so both read the same.
TEST_CASE("the run messages keep their names, wire bytes and JSON after the move to run.proto",
          "[task_state]") {
  cmax::v1::TaskInfo t;
  t.set_state(cmax::v1::TASK_LOST);  // field 6
  t.set_attempt(2);                  // field 7
  CHECK(t.GetDescriptor()->full_name() == "cmax.v1.TaskInfo");
  CHECK(t.SerializeAsString() == std::string("\x30\x07\x38\x02", 4));
  std::string json;
  REQUIRE(google::protobuf::util::MessageToJsonString(t, &json).ok());
  CHECK(json == R"({"state":"TASK_LOST","attempt":2})");

  cmax::v1::ExportedRecord r;
  r.set_seq(3);    // field 3
  r.set_late(true);  // field 7
  CHECK(r.GetDescriptor()->full_name() == "cmax.v1.ExportedRecord");
  CHECK(r.SerializeAsString() == std::string("\x18\x03\x38\x01", 4));
  CHECK(cmax::v1::RunInfo::descriptor()->full_name() == "cmax.v1.RunInfo");
  CHECK(cmax::v1::AttemptSummary::descriptor()->FindFieldByName("state")->number() == 2);
}

namespace {
cmax::v1::TaskInfo Ended(cmax::v1::TaskState state, int exit_code) {
  cmax::v1::TaskInfo t;
  t.set_state(state);
  t.set_exit_code(exit_code);
  return t;
}
}  // namespace

// The coordinator's log and cmaxctl count with this one function: a run
// whose two tasks could not run is "0 failed, 2 could not run" in both, never
// "2 of 2 tasks failed" in one of them.
TEST_CASE("tasks that could not run are counted apart from failures, in words",
          "[task_state]") {
  const cmax::TaskCounts two = cmax::CountTasks(
      {Ended(cmax::v1::TASK_FAILED, 2), Ended(cmax::v1::TASK_FAILED, 2)});
  CHECK(two.total == 2);
  CHECK(two.could_not_run == 2);
  CHECK(two.failed == 0);
  CHECK(cmax::TaskCountsText(two) == "0 completed, 2 could not run, 0 failed");
  const cmax::TaskCounts mixed = cmax::CountTasks(
      {Ended(cmax::v1::TASK_COMPLETED, 0), Ended(cmax::v1::TASK_FAILED, 139),
       Ended(cmax::v1::TASK_LOST, -1), Ended(cmax::v1::TASK_CANCELLED, -1)});
  CHECK(cmax::TaskCountsText(mixed) == "1 completed, 0 could not run, 2 failed, 1 cancelled");
}

TEST_CASE("counted nouns: 1 node, 2 nodes, 1 of 1 node", "[task_state]") {
  CHECK(cmax::Counted(1, "node", "nodes") == "1 node");
  CHECK(cmax::Counted(0, "node", "nodes") == "0 nodes");
  CHECK(cmax::Counted(2, "task", "tasks") == "2 tasks");
  CHECK(cmax::CountedOf(1, 1, "node", "nodes") == "1 of 1 node");
  CHECK(cmax::CountedOf(0, 3, "node", "nodes") == "0 of 3 nodes");
}
