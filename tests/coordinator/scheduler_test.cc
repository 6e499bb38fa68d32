// The scheduler's state machine with a registry of fake sessions: assign,
// end, retry, loss, cancel, group failure, reconnects.
#include "coordinator/scheduler.h"

#include <catch2/catch.hpp>
#include <memory>

#include "common/plan_parser.h"
#include "tests/coordinator/fake_session.h"

namespace cmax::coordinator {
namespace {

constexpr int64_t kNow = 1700000000000000000;

class Fixture {
 public:
  explicit Fixture(int nodes) : registry(15'000'000'000) {
    for (int i = 0; i < nodes; ++i) Connect(Node(i));
  }
  static std::string Node(int i) { return "node-" + std::to_string(i); }
  void Connect(const std::string& node) {
    sessions.push_back(std::make_unique<FakeSession>());
    registry.OnHello(HelloFrom(node), sessions.back().get(), 1, kNow);
  }
  RunRow* Submit(const std::string& yaml, const std::string& run_id = "r1") {
    auto plan = ParsePlan(yaml, "test.yaml");
    REQUIRE(plan.ok());
    Changes c;
    auto run = scheduler.CreateRun(*plan, registry, kNow, run_id, &c);
    INFO(run.status().ToString());
    REQUIRE(run.ok());
    return *run;
  }
  Changes Schedule() {
    Changes c;
    scheduler.Schedule(registry, kNow, &c);
    return c;
  }
  Changes Report(const std::string& node, const std::string& task_id, int attempt,
                 v1::TaskState state, int rank = 0) {
    v1::TaskStatus s;
    s.set_task_id(task_id);
    s.set_attempt(attempt);
    s.set_rank(rank);
    s.set_state(state);
    s.set_message(state == v1::TASK_FAILED ? "crashed: signal 6" : "");
    Changes c;
    scheduler.OnStatus(node, s, kNow + 1, &c);
    return c;
  }
  v1::TaskState State(const std::string& task_id) {
    TaskRow* t = scheduler.FindTask(task_id);
    REQUIRE(t != nullptr);
    return t->info.state();
  }

  Registry registry;
  Scheduler scheduler;
  std::vector<std::unique_ptr<FakeSession>> sessions;
};

int Count(const Changes& c, v1::CoordinatorMessage::MsgCase kind, const std::string& node = "") {
  int n = 0;
  for (const auto& o : c.out) n += o.message.msg_case() == kind && (node.empty() || o.node == node);
  return n;
}

constexpr char kTwoSuites[] = R"(name: two
suites:
  - suite: selftest
    params: {mode: ok}
  - suite: selftest
    name: second
)";

TEST_CASE("node tasks are assigned, run and complete the run", "[scheduler]") {
  Fixture f(2);
  f.Submit(kTwoSuites);
  REQUIRE(f.scheduler.TasksOf("r1").size() == 4);
  Changes c = f.Schedule();
  // Only suite 0 on each node: suite 1 waits for suite 0 on the same node.
  CHECK(Count(c, v1::CoordinatorMessage::kAssign) == 2);
  CHECK(f.State("r1.0.node-0") == v1::TASK_ASSIGNED);
  CHECK(f.State("r1.1.node-0") == v1::TASK_PENDING);
  CHECK(f.scheduler.FindTask("r1.0.node-0")->info.attempt() == 1);
  // A node runs one task at a time.
  CHECK(Count(f.Schedule(), v1::CoordinatorMessage::kAssign) == 0);

  f.Report("node-0", "r1.0.node-0", 1, v1::TASK_RUNNING);
  CHECK(f.State("r1.0.node-0") == v1::TASK_RUNNING);
  f.Report("node-0", "r1.0.node-0", 1, v1::TASK_COMPLETED);
  CHECK(f.State("r1.0.node-0") == v1::TASK_COMPLETED);
  c = f.Schedule();
  CHECK(Count(c, v1::CoordinatorMessage::kAssign, "node-0") == 1);
  CHECK(f.State("r1.1.node-0") == v1::TASK_ASSIGNED);

  for (const char* id : {"r1.1.node-0"}) f.Report("node-0", id, 1, v1::TASK_COMPLETED);
  f.Report("node-1", "r1.0.node-1", 1, v1::TASK_COMPLETED);
  f.Schedule();
  c = f.Report("node-1", "r1.1.node-1", 1, v1::TASK_COMPLETED);
  REQUIRE(c.finished_runs == std::vector<std::string>{"r1"});
  RunRow* run = f.scheduler.FindRun("r1");
  CHECK(run->info.state() == "completed");
  CHECK(run->info.tasks_done() == 4);
  CHECK(run->info.tasks_failed() == 0);
}

TEST_CASE("a status from the wrong node or an old attempt changes nothing", "[scheduler]") {
  Fixture f(2);
  f.Submit("name: one\nsuites:\n  - suite: selftest\n");
  f.Schedule();
  f.Report("node-1", "r1.0.node-0", 1, v1::TASK_COMPLETED);
  CHECK(f.State("r1.0.node-0") == v1::TASK_ASSIGNED);
  f.Report("node-0", "r1.0.node-0", 7, v1::TASK_COMPLETED);
  CHECK(f.State("r1.0.node-0") == v1::TASK_ASSIGNED);
}

TEST_CASE("a failed attempt is retried while retries are left", "[scheduler]") {
  Fixture f(1);
  f.Submit("name: r\nsuites:\n  - suite: selftest\n    retries: 1\n");
  f.Schedule();
  f.Report("node-0", "r1.0.node-0", 1, v1::TASK_FAILED);
  CHECK(f.State("r1.0.node-0") == v1::TASK_PENDING);
  CHECK(f.scheduler.FindTask("r1.0.node-0")->info.message().find("retrying") !=
        std::string::npos);
  Changes c = f.Schedule();
  REQUIRE(Count(c, v1::CoordinatorMessage::kAssign) == 1);
  CHECK(c.out[0].message.assign().attempt() == 2);
  // The old attempt's late end status is ignored.
  f.Report("node-0", "r1.0.node-0", 1, v1::TASK_COMPLETED);
  CHECK(f.State("r1.0.node-0") == v1::TASK_ASSIGNED);
  c = f.Report("node-0", "r1.0.node-0", 2, v1::TASK_FAILED);
  CHECK(f.State("r1.0.node-0") == v1::TASK_FAILED);
  CHECK(c.finished_runs.size() == 1);
  CHECK(f.scheduler.FindRun("r1")->info.tasks_failed() == 1);
}

TEST_CASE("a lost node loses its tasks, pending ones included", "[scheduler]") {
  Fixture f(2);
  f.Submit(kTwoSuites);
  f.Schedule();
  Changes c;
  f.scheduler.OnNodeLost("node-1", kNow + 5, &c);
  CHECK(f.State("r1.0.node-1") == v1::TASK_LOST);
  CHECK(f.State("r1.1.node-1") == v1::TASK_LOST);
  CHECK(f.scheduler.FindTask("r1.1.node-1")->info.message().find("before the task started") !=
        std::string::npos);
  CHECK(f.State("r1.0.node-0") == v1::TASK_ASSIGNED);
  // No cancel goes to the lost node itself (it cannot hear it).
  CHECK(Count(c, v1::CoordinatorMessage::kCancel, "node-1") == 0);
  CHECK(c.finished_runs.empty());
}

TEST_CASE("cancel stops assigned tasks and ends the run cancelled", "[scheduler]") {
  Fixture f(2);
  f.Submit(kTwoSuites);
  f.Schedule();
  Changes c;
  auto n = f.scheduler.Cancel("r1", kNow + 1, &c);
  REQUIRE(n.ok());
  CHECK(*n == 4);
  CHECK(Count(c, v1::CoordinatorMessage::kCancel) == 2);  // the two assigned ones
  CHECK(f.State("r1.1.node-0") == v1::TASK_CANCELLED);
  REQUIRE(c.finished_runs.size() == 1);
  CHECK(f.scheduler.FindRun("r1")->info.state() == "cancelled");
  Changes again;
  CHECK(absl::IsNotFound(f.scheduler.Cancel("nope", kNow, &again).status()));
}

TEST_CASE("a failing rank ends the whole gang and stops the other ranks", "[scheduler]") {
  Fixture f(3);
  f.Submit("name: g\nsuites:\n  - suite: selftest\n    scope: gang\n    ranks_per_node: 2\n");
  Changes c = f.Schedule();
  REQUIRE(Count(c, v1::CoordinatorMessage::kAssign) == 3);
  const std::string id = "r1.0.gang";
  TaskRow* t = f.scheduler.FindTask(id);
  CHECK(t->assignment.world_size() == 6);
  for (const auto& o : c.out) {
    CHECK(o.message.assign().ranks_size() == 2);
    CHECK(o.message.assign().local_world_size() == 2);
  }
  SECTION("every rank completing completes it") {
    for (int r = 0; r < 6; ++r) {
      f.Report(Fixture::Node(r / 2), id, 1, v1::TASK_COMPLETED, r);
      CHECK(f.State(id) == (r < 5 ? v1::TASK_ASSIGNED : v1::TASK_COMPLETED));
    }
  }
  SECTION("one failed rank fails it at once") {
    f.Report("node-0", id, 1, v1::TASK_COMPLETED, 0);
    Changes fail = f.Report("node-1", id, 1, v1::TASK_FAILED, 3);
    CHECK(f.State(id) == v1::TASK_FAILED);
    CHECK(f.scheduler.FindTask(id)->info.message().find("rank 3 on node-1") != std::string::npos);
    CHECK(Count(fail, v1::CoordinatorMessage::kCancel) == 3);
  }
  SECTION("a lost node ends it and the others are told to stop") {
    Changes lost;
    f.scheduler.OnNodeLost("node-2", kNow, &lost);
    CHECK(f.State(id) == v1::TASK_LOST);
    CHECK(Count(lost, v1::CoordinatorMessage::kCancel, "node-0") == 1);
    CHECK(Count(lost, v1::CoordinatorMessage::kCancel, "node-1") == 1);
    CHECK(Count(lost, v1::CoordinatorMessage::kCancel, "node-2") == 0);
  }
}

TEST_CASE("a reconnecting agent gets lost assignments again and stale tasks cancelled",
          "[scheduler]") {
  Fixture f(1);
  f.Submit("name: one\nsuites:\n  - suite: selftest\n");
  f.Schedule();
  const std::string id = "r1.0.node-0";
  SECTION("assigned but not held: the assignment is sent again, same attempt") {
    Changes c;
    f.scheduler.OnHello("node-0", HelloFrom("node-0"), &c);
    REQUIRE(Count(c, v1::CoordinatorMessage::kAssign) == 1);
    CHECK(c.out[0].message.assign().attempt() == 1);
    CHECK(f.State(id) == v1::TASK_ASSIGNED);
  }
  SECTION("running but not held: the agent restarted, the task failed") {
    f.Report("node-0", id, 1, v1::TASK_RUNNING);
    Changes c;
    f.scheduler.OnHello("node-0", HelloFrom("node-0", "boot-2"), &c);
    CHECK(f.State(id) == v1::TASK_FAILED);
    CHECK(f.scheduler.FindTask(id)->info.message().find("agent restarted") != std::string::npos);
  }
  SECTION("held and running while the task already ended: cancelled on the agent") {
    Changes lost;
    f.scheduler.OnNodeLost("node-0", kNow, &lost);
    v1::Hello h = HelloFrom("node-0");
    auto* held = h.add_held();
    held->set_task_id(id);
    held->set_attempt(1);
    held->set_running(true);
    Changes c;
    f.scheduler.OnHello("node-0", h, &c);
    REQUIRE(Count(c, v1::CoordinatorMessage::kCancel) == 1);
    CHECK(c.out[0].message.cancel().reason().find("lost") != std::string::npos);
  }
}

TEST_CASE("a plan selecting no connected node is refused", "[scheduler]") {
  Fixture f(1);
  auto plan = ParsePlan("name: x\nsuites:\n  - suite: selftest\n    nodes: [node-9]\n", "x");
  REQUIRE(plan.ok());
  Changes c;
  auto run = f.scheduler.CreateRun(*plan, f.registry, kNow, "r1", &c);
  CHECK(absl::IsFailedPrecondition(run.status()));
  CHECK(run.status().message().find("node-9") != std::string::npos);
}

TEST_CASE("a task running past its timeout plus grace is timed out", "[scheduler]") {
  Fixture f(1);
  f.Submit("name: t\nsuites:\n  - suite: selftest\n    timeout: 10s\n");
  f.Schedule();
  Changes c;
  f.scheduler.ExpireOverdue(kNow + 69'000'000'000, 60'000'000'000, &c);
  CHECK(f.State("r1.0.node-0") == v1::TASK_ASSIGNED);
  f.scheduler.ExpireOverdue(kNow + 71'000'000'000, 60'000'000'000, &c);
  CHECK(f.State("r1.0.node-0") == v1::TASK_TIMED_OUT);
  CHECK(Count(c, v1::CoordinatorMessage::kCancel) == 1);
}

}  // namespace
}  // namespace cmax::coordinator
