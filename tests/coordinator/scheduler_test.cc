// The scheduler's state machine with a registry of fake sessions: assign,
// end, retry, loss, cancel, group failure, reconnects.
#include "coordinator/scheduler.h"

#include <catch2/catch.hpp>
#include <algorithm>
#include <map>
#include <memory>
#include <random>
#include <tuple>

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
                 v1::TaskState state, int rank = 0, int exit_code = 0) {
    v1::TaskStatus s;
    s.set_task_id(task_id);
    s.set_attempt(attempt);
    s.set_rank(rank);
    s.set_state(state);
    s.set_exit_code(exit_code);
    s.set_message(state == v1::TASK_FAILED ? "crashed: signal 6" : "");
    Changes c;
    scheduler.OnStatus(node, s, kNow + 1, &c);
    return c;
  }
  // A clock sample for `node`: agent clock = coordinator clock + offset_ns,
  // with round trip rtt_ns.
  void Pong(int i, int64_t offset_ns, int64_t rtt_ns) {
    v1::Pong p;
    p.set_t1_ns(kNow);
    p.set_t2_ns(kNow + rtt_ns / 2 + offset_ns);
    p.set_t3_ns(kNow + rtt_ns / 2 + offset_ns);
    registry.OnPong(sessions[i].get(), p, kNow + rtt_ns);
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

TEST_CASE("a run restricted to some nodes (a schedule's wave) sees only those", "[scheduler]") {
  Fixture f(4);
  auto plan = ParsePlan(
      "name: wave\nsuites:\n  - suite: selftest\n  - suite: selftest\n    scope: gang\n",
      "wave.yaml");
  REQUIRE(plan.ok());
  const std::vector<std::string> wave = {"node-1", "node-3", "node-9"};  // node-9: not connected
  Changes c;
  auto run = f.scheduler.CreateRun(*plan, f.registry, kNow, "r1", &c, &wave);
  INFO(run.status().ToString());
  REQUIRE(run.ok());
  CHECK((*run)->nodes == std::vector<std::string>{"node-1", "node-3"});
  std::vector<std::string> tasks;
  for (TaskRow* t : f.scheduler.TasksOf("r1")) tasks.push_back(t->info.task_id());
  CHECK(tasks == std::vector<std::string>{"r1.0.node-1", "r1.0.node-3", "r1.1.gang"});
  CHECK(f.scheduler.FindTask("r1.1.gang")->nodes == std::vector<std::string>{"node-1", "node-3"});
  const std::vector<std::string> gone = {"node-7"};
  auto none = f.scheduler.CreateRun(*plan, f.registry, kNow, "r2", &c, &gone);
  REQUIRE_FALSE(none.ok());
  CHECK(none.status().message() == "none of the run's nodes is connected");
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

TEST_CASE("a retried task describes its last attempt and keeps the earlier ones",
          "[scheduler]") {
  Fixture f(1);
  f.Submit("name: r\nsuites:\n  - suite: selftest\n    retries: 2\n");
  const std::string id = "r1.0.node-0";
  f.Schedule();
  // Attempt 1 crashes with exit code 139.
  f.Report("node-0", id, 1, v1::TASK_RUNNING);
  f.Report("node-0", id, 1, v1::TASK_FAILED, 0, 139);
  const v1::TaskInfo& info = f.scheduler.FindTask(id)->info;
  REQUIRE(info.earlier_attempts_size() == 1);
  CHECK(info.earlier_attempts(0).attempt() == 1);
  CHECK(info.earlier_attempts(0).state() == v1::TASK_FAILED);
  CHECK(info.earlier_attempts(0).exit_code() == 139);
  CHECK(info.earlier_attempts(0).message() == "crashed: signal 6");
  CHECK(info.earlier_attempts(0).finished_unix_ns() == kNow + 1);
  CHECK(info.state() == v1::TASK_PENDING);
  // Attempt 2: the agent restarts and holds no trace of it (OnHello).
  f.Schedule();
  f.Report("node-0", id, 2, v1::TASK_RUNNING);
  Changes c;
  f.scheduler.OnHello("node-0", HelloFrom("node-0", "boot-2"), &c);
  REQUIRE(info.earlier_attempts_size() == 2);
  CHECK(info.earlier_attempts(1).attempt() == 2);
  CHECK(info.earlier_attempts(1).state() == v1::TASK_FAILED);
  CHECK(info.earlier_attempts(1).exit_code() == -1);  // no exit code: it vanished
  CHECK_THAT(info.earlier_attempts(1).message(), Catch::Contains("agent restarted"));
  CHECK(info.earlier_attempts(1).finished_unix_ns() > 0);
  // Attempt 3 completes: the task's own fields are attempt 3's alone.
  f.Schedule();
  CHECK(info.exit_code() == -1);  // assigned: no outcome yet, none inherited
  f.Report("node-0", id, 3, v1::TASK_COMPLETED);
  CHECK(info.state() == v1::TASK_COMPLETED);
  CHECK(info.attempt() == 3);
  CHECK(info.exit_code() == 0);
  CHECK(info.message().empty());
  CHECK(info.earlier_attempts_size() == 2);
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

TEST_CASE("nodes lost in one sweep lose their tasks and end the run as one by one would",
          "[scheduler]") {
  Fixture f(3);
  f.Submit(kTwoSuites);
  f.Schedule();
  f.Report("node-2", "r1.0.node-2", 1, v1::TASK_COMPLETED);
  f.Schedule();
  f.Report("node-2", "r1.1.node-2", 1, v1::TASK_COMPLETED);
  Changes c;
  f.scheduler.OnNodesLost({"node-0", "node-1"}, kNow + 5, &c);
  for (const char* id : {"r1.0.node-0", "r1.1.node-0", "r1.0.node-1", "r1.1.node-1"}) {
    INFO(id);
    CHECK(f.State(id) == v1::TASK_LOST);
    CHECK(c.tasks.count(id) == 1);
  }
  CHECK_THAT(f.scheduler.FindTask("r1.0.node-1")->info.message(),
             Catch::Contains("agent on node-1 lost (no heartbeat)"));
  CHECK_THAT(f.scheduler.FindTask("r1.1.node-0")->info.message(),
             Catch::Contains("agent on node-0 lost before the task started"));
  CHECK(f.State("r1.0.node-2") == v1::TASK_COMPLETED);
  // Every task is terminal now: the run ends, once.
  CHECK(c.finished_runs.size() == 1);
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
    Changes fail = f.Report("node-1", id, 1, v1::TASK_FAILED, 3, 139);
    CHECK(f.State(id) == v1::TASK_FAILED);
    const v1::TaskInfo& info = f.scheduler.FindTask(id)->info;
    CHECK(info.message() == "rank 3 on node-1 crashed (exit code 139)");
    CHECK(info.exit_code() == 139);
    CHECK(Count(fail, v1::CoordinatorMessage::kCancel) == 3);
    // Only the node of the rank that failed is blamed ...
    CHECK(info.blamed_nodes() == "node-1");
    // ... and the ranks stopped because of it add no blame when they report.
    f.Report("node-2", id, 1, v1::TASK_CANCELLED, 4);
    f.Report("node-0", id, 1, v1::TASK_FAILED, 1, 143);
    CHECK(info.blamed_nodes() == "node-1");
    CHECK(info.message() == "rank 3 on node-1 crashed (exit code 139)");
  }
  SECTION("a rank that could not run says so") {
    v1::TaskStatus st;
    st.set_task_id(id);
    st.set_attempt(1);
    st.set_rank(5);
    st.set_state(v1::TASK_FAILED);
    st.set_exit_code(2);
    st.set_message("could not run: not measured: no NCCL");  // agent's words, then the suite's
    Changes c2;
    f.scheduler.OnStatus("node-2", st, kNow + 1, &c2);
    const v1::TaskInfo& info = f.scheduler.FindTask(id)->info;
    CHECK(info.message() == "rank 5 on node-2 could not run: no NCCL");
    CHECK(info.exit_code() == 2);
    CHECK(info.blamed_nodes() == "node-2");
  }
  SECTION("a lost node ends it and the others are told to stop") {
    Changes lost;
    f.scheduler.OnNodeLost("node-2", kNow, &lost);
    CHECK(f.State(id) == v1::TASK_LOST);
    CHECK(f.scheduler.FindTask(id)->info.blamed_nodes() == "node-2");
    CHECK(Count(lost, v1::CoordinatorMessage::kCancel, "node-0") == 1);
    CHECK(Count(lost, v1::CoordinatorMessage::kCancel, "node-1") == 1);
    CHECK(Count(lost, v1::CoordinatorMessage::kCancel, "node-2") == 0);
  }
}

TEST_CASE("a gang past the scheduler's deadline blames the nodes whose ranks had not ended",
          "[scheduler]") {
  Fixture f(3);
  f.Submit("name: g\nsuites:\n  - suite: selftest\n    scope: gang\n    ranks_per_node: 2\n"
           "    timeout: 10s\n");
  f.Schedule();
  const std::string id = "r1.0.gang";
  const int64_t late = kNow + 71'000'000'000, grace = 60'000'000'000;
  SECTION("node-1's second rank never ended") {
    for (int r : {0, 1, 2, 4, 5}) f.Report(Fixture::Node(r / 2), id, 1, v1::TASK_COMPLETED, r);
    Changes c;
    f.scheduler.ExpireOverdue(late, grace, &c);
    CHECK(f.State(id) == v1::TASK_TIMED_OUT);
    CHECK(f.scheduler.FindTask(id)->info.blamed_nodes() == "node-1");
    CHECK_THAT(f.scheduler.FindTask(id)->info.message(), Catch::Contains("on node-1"));
  }
  SECTION("no rank ended: every node is blamed") {
    Changes c;
    f.scheduler.ExpireOverdue(late, grace, &c);
    CHECK(f.State(id) == v1::TASK_TIMED_OUT);
    CHECK(f.scheduler.FindTask(id)->info.blamed_nodes() == "node-0,node-1,node-2");
  }
}

TEST_CASE("every node of a barrier task gets one instant, shifted into its own clock",
          "[scheduler]") {
  Fixture f(3);
  // node-0 runs 5 s ahead, node-1 on time, node-2 3 s behind; node-2's round
  // trip (400 ms) sets the lead: 10 round trips = 4 s > the 2 s floor.
  f.Pong(0, 5'000'000'000, 1'000'000);
  f.Pong(1, 0, 2'000'000);
  f.Pong(2, -3'000'000'000, 400'000'000);
  f.Submit("name: b\nsuites:\n  - suite: selftest\n    scope: barrier\n");
  Changes c = f.Schedule();
  REQUIRE(Count(c, v1::CoordinatorMessage::kAssign) == 3);
  const v1::TaskInfo& info = f.scheduler.FindTask("r1.0.barrier")->info;
  const int64_t t = info.start_at_unix_ns();
  CHECK(t == kNow + 4'000'000'000);
  std::map<std::string, int64_t> at;
  for (const auto& o : c.out) at[o.node] = o.message.assign().start_at_agent_ns();
  CHECK(at["node-0"] == t + 5'000'000'000);
  CHECK(at["node-1"] == t);
  CHECK(at["node-2"] == t - 3'000'000'000);
  SECTION("a resend after a reconnect keeps the same instant") {
    Changes again;
    f.scheduler.OnHello("node-2", HelloFrom("node-2"), &again);
    REQUIRE(Count(again, v1::CoordinatorMessage::kAssign, "node-2") == 1);
    CHECK(again.out[0].message.assign().start_at_agent_ns() == t - 3'000'000'000);
    CHECK(info.start_at_unix_ns() == t);
  }
  SECTION("without round trips measured the lead is the 2 s floor") {
    Fixture g(2);
    g.Submit("name: b\nsuites:\n  - suite: selftest\n    scope: barrier\n");
    Changes gc = g.Schedule();
    const int64_t gt = g.scheduler.FindTask("r1.0.barrier")->info.start_at_unix_ns();
    CHECK(gt == kNow + 2'000'000'000);
    for (const auto& o : gc.out) CHECK(o.message.assign().start_at_agent_ns() == gt);
  }
  SECTION("node and gang tasks get no start instant") {
    Fixture g(2);
    g.Submit("name: n\nsuites:\n  - suite: selftest\n  - suite: selftest\n    scope: gang\n");
    Changes gc = g.Schedule();
    for (const auto& o : gc.out) CHECK(o.message.assign().start_at_agent_ns() == 0);
    CHECK(g.scheduler.FindTask("r1.0.node-0")->info.start_at_unix_ns() == 0);
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

// Issue #33 item 7: one node is a cluster too. Entries that need more nodes
// than the run has end unstarted as could not run (exit code 2, attempt 0),
// with the reason; the plan is not refused and the rest of it runs.
constexpr char kOneNodePlan[] = R"(name: one
suites:
  - suite: selftest
  - suite: rdma
    name: rdma-pairs
    scope: pairs
  - suite: selftest
    name: gang-of-two
    scope: gang
    min_nodes: 2
  - suite: connectivity
  - suite: selftest
    name: after
)";

void CheckNotStarted(Fixture& f, const std::string& task_id, const std::string& message) {
  INFO(task_id);
  TaskRow* t = f.scheduler.FindTask(task_id);
  REQUIRE(t != nullptr);
  CHECK(t->info.state() == v1::TASK_FAILED);
  CHECK(t->info.exit_code() == 2);  // could not run: never a crash, never a pass
  CHECK(t->info.attempt() == 0);    // never assigned
  CHECK(t->info.message() == message);
  CHECK(t->info.finished_unix_ns() == kNow);
}

TEST_CASE("on one node, pairs and gang entries that need two nodes end not measured and the "
          "rest of the plan runs",
          "[scheduler]") {
  Fixture f(1);
  f.Submit(kOneNodePlan);
  REQUIRE(f.scheduler.TasksOf("r1").size() == 5);
  const std::string why = "not measured: needs 2 nodes, the run has 1";
  CheckNotStarted(f, "r1.1.pairs", why);
  CheckNotStarted(f, "r1.2.gang", why);
  // connectivity declares two nodes itself (SuiteInfo.min_nodes): a gang of
  // one has no pair to measure.
  CheckNotStarted(f, "r1.3.gang", why);
  CHECK(f.scheduler.FindTask("r1.1.pairs")->info.node() == "node-0");

  // The node entries run, the one after the unstarted entries too.
  Changes c = f.Schedule();
  CHECK(Count(c, v1::CoordinatorMessage::kAssign) == 1);
  CHECK(f.State("r1.0.node-0") == v1::TASK_ASSIGNED);
  CHECK(f.State("r1.4.node-0") == v1::TASK_PENDING);
  f.Report("node-0", "r1.0.node-0", 1, v1::TASK_COMPLETED);
  c = f.Schedule();
  CHECK(Count(c, v1::CoordinatorMessage::kAssign, "node-0") == 1);
  CHECK(f.State("r1.4.node-0") == v1::TASK_ASSIGNED);
  // Nothing of the unstarted entries is ever sent.
  for (const auto& o : c.out) {
    if (o.message.has_assign()) CHECK(o.message.assign().task_id() == "r1.4.node-0");
  }
  c = f.Report("node-0", "r1.4.node-0", 1, v1::TASK_COMPLETED);
  REQUIRE(c.finished_runs == std::vector<std::string>{"r1"});
  RunRow* run = f.scheduler.FindRun("r1");
  CHECK(run->info.state() == "completed");
  CHECK(run->info.tasks_done() == 5);
  CHECK(f.scheduler.RecountForTest("r1") == std::vector<int>{5, 5, 0, 3});
}

TEST_CASE("a run whose every entry needs more nodes than it has ends when it is created",
          "[scheduler]") {
  Fixture f(1);
  auto plan = ParsePlan("name: x\nsuites:\n  - suite: rdma\n    scope: pairs\n", "x");
  REQUIRE(plan.ok());
  Changes c;
  auto run = f.scheduler.CreateRun(*plan, f.registry, kNow, "r1", &c);
  INFO(run.status().ToString());
  REQUIRE(run.ok());
  CheckNotStarted(f, "r1.0.pairs", "not measured: needs 2 nodes, the run has 1");
  // Nothing will ever be assigned: the run ends now, so its scorecard is built.
  CHECK(c.finished_runs == std::vector<std::string>{"r1"});
  CHECK((*run)->info.state() == "completed");
  CHECK(Count(f.Schedule(), v1::CoordinatorMessage::kAssign) == 0);
}

TEST_CASE("an entry selecting fewer nodes than it needs says how many of the run's it selects",
          "[scheduler]") {
  Fixture f(3);
  f.Submit(R"(name: x
suites:
  - suite: rdma
    scope: pairs
    nodes: [node-1]
  - suite: selftest
    scope: gang
    min_nodes: 3
    nodes: [node-0, node-2]
  - suite: selftest
    name: barrier-of-four
    scope: barrier
    min_nodes: 4
)");
  CheckNotStarted(f, "r1.0.pairs", "not measured: needs 2 nodes, the entry selects 1 of the run's 3");
  CheckNotStarted(f, "r1.1.gang", "not measured: needs 3 nodes, the entry selects 2 of the run's 3");
  CheckNotStarted(f, "r1.2.barrier", "not measured: needs 4 nodes, the run has 3");
  // The task names the nodes it would have run on: the scorecard's coverage
  // reports the entry on them.
  CHECK(f.scheduler.FindTask("r1.1.gang")->info.node() == "node-0,node-2");
  CHECK(f.scheduler.TasksOf("r1").size() == 3);
}

TEST_CASE("with enough nodes, pairs, connectivity and min_nodes gangs run as before",
          "[scheduler]") {
  Fixture f(2);
  f.Submit(R"(name: x
suites:
  - suite: connectivity
  - suite: rdma
    scope: pairs
  - suite: selftest
    scope: gang
    min_nodes: 2
)");
  CHECK(f.State("r1.0.gang") == v1::TASK_PENDING);
  CHECK(f.State("r1.1.p0") == v1::TASK_PENDING);
  CHECK(f.State("r1.2.gang") == v1::TASK_PENDING);
  Changes c = f.Schedule();
  CHECK(Count(c, v1::CoordinatorMessage::kAssign) == 2);  // connectivity's two ranks
  CHECK(f.State("r1.0.gang") == v1::TASK_ASSIGNED);
}

TEST_CASE("connectivity needs two ranks, not two nodes: two ranks on one node run",
          "[scheduler]") {
  Fixture f(1);
  f.Submit("name: x\nsuites:\n  - suite: connectivity\n    ranks_per_node: 2\n");
  CHECK(f.State("r1.0.gang") == v1::TASK_PENDING);
  f.Schedule();
  CHECK(f.State("r1.0.gang") == v1::TASK_ASSIGNED);
  CHECK(f.scheduler.FindTask("r1.0.gang")->assignment.world_size() == 2);
}

TEST_CASE("a plan with an unknown suite is still refused", "[scheduler]") {
  Fixture f(1);
  v1::Plan plan;
  plan.set_name("x");
  plan.add_suites()->set_suite("no-such-suite");
  Changes c;
  auto run = f.scheduler.CreateRun(plan, f.registry, kNow, "r1", &c);
  CHECK(absl::IsInvalidArgument(run.status()));
  CHECK(run.status().message().find("no-such-suite") != std::string::npos);
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

// Adopt (scheduler.h): CreateRun and Restore take a task row the same way,
// and a row of an id already held replaces the old one in the counts and
// the node index.
TEST_CASE("a node named twice gets one task, counted once", "[scheduler]") {
  Fixture f(2);
  RunRow* run = f.Submit("name: t\nsuites:\n  - suite: selftest\n    nodes: [node-0, node-0]\n");
  REQUIRE(f.scheduler.TasksOf("r1").size() == 1);
  CHECK(f.scheduler.RecountForTest("r1") == std::vector<int>{1, 0, 0, 0});
  CHECK(Count(f.Schedule(), v1::CoordinatorMessage::kAssign, "node-0") == 1);
  Changes c = f.Report("node-0", "r1.0.node-0", 1, v1::TASK_COMPLETED);
  CHECK(c.finished_runs == std::vector<std::string>{"r1"});
  f.scheduler.RefreshCounters(run);
  CHECK(run->info.tasks_done() == 1);
}

TEST_CASE("a restored row replaces the one of the same id in the counts and node index",
          "[scheduler]") {
  Fixture f(2);
  f.Submit("name: t\nsuites:\n  - suite: selftest\n");
  REQUIRE(Count(f.Schedule(), v1::CoordinatorMessage::kAssign) == 2);
  // The rows as the store would give them back: node-0's task ended, node-1's
  // pending again (its assignment lost with the restart).
  RunRow run = *f.scheduler.FindRun("r1");
  std::vector<TaskRow> rows;
  for (const TaskRow* t : f.scheduler.TasksOf("r1")) rows.push_back(*t);
  REQUIRE(rows.size() == 2);
  rows[0].info.set_state(v1::TASK_COMPLETED);
  rows[1].info.set_state(v1::TASK_PENDING);
  f.scheduler.Restore(std::move(run), std::move(rows));
  REQUIRE(f.scheduler.TasksOf("r1").size() == 2);
  CHECK(f.scheduler.RecountForTest("r1") == std::vector<int>{2, 1, 0, 0});
  RunRow* restored = f.scheduler.FindRun("r1");
  f.scheduler.RefreshCounters(restored);
  CHECK(restored->info.tasks_total() == 2);
  CHECK(restored->info.tasks_done() == 1);
  // node-1 no longer holds the replaced ASSIGNED row: its task is assigned
  // again (attempt 2), and node-0 gets nothing.
  Changes c = f.Schedule();
  CHECK(Count(c, v1::CoordinatorMessage::kAssign, "node-1") == 1);
  CHECK(Count(c, v1::CoordinatorMessage::kAssign, "node-0") == 0);
  c = f.Report("node-1", "r1.0.node-1", 2, v1::TASK_COMPLETED);
  CHECK(c.finished_runs == std::vector<std::string>{"r1"});
}

// --- Incremental scheduling against the full pass -------------------------

// What a scheduler call sent, in order: (node, kind, task id, attempt).
using Sent = std::vector<std::tuple<std::string, int, std::string, int>>;
Sent SentOf(const Changes& c) {
  Sent out;
  for (const auto& o : c.out) {
    const auto kind = o.message.msg_case();
    std::string id;
    int attempt = 0;
    if (o.message.has_assign()) {
      id = o.message.assign().task_id();
      attempt = o.message.assign().attempt();
    } else if (o.message.has_cancel()) {
      id = o.message.cancel().task_id();
      attempt = o.message.cancel().attempt();
    }
    out.emplace_back(o.node, static_cast<int>(kind), id, attempt);
  }
  return out;
}

// One cluster driven twice: `inc` schedules incrementally only, `full` with
// the full pass every time. Every event goes to both.
class Twin {
 public:
  static constexpr int kNodes = 20;
  Twin() {
    for (int i = 0; i < kNodes; ++i) {
      inc.Connect(Fixture::Node(i));
      full.Connect(Fixture::Node(i));
      connected[i] = true;
    }
  }
  // Runs `f` on both schedulers and checks they changed the same.
  template <typename F>
  void Both(const std::string& what, F f) {
    Changes a, b;
    f(inc, &a);
    f(full, &b);
    INFO("step " << step << ": " << what);
    REQUIRE(SentOf(a) == SentOf(b));
    REQUIRE(a.tasks == b.tasks);
    REQUIRE(a.runs == b.runs);
    REQUIRE(a.finished_runs == b.finished_runs);
    for (const auto& o : a.out) assigns += o.message.has_assign();
    for (const auto& r : a.finished_runs) finished.push_back(r);
  }
  void Schedule() {
    Both("schedule", [&](Fixture& f, Changes* c) {
      f.scheduler.Schedule(f.registry, now, c,
                           &f == &inc ? ScheduleMode::kIncremental : ScheduleMode::kFull);
    });
  }
  // Same runs, tasks, states and counters on both; counters equal a recount.
  void Compare() {
    INFO("step " << step);
    std::vector<RunRow*> ra = inc.scheduler.Runs(), rb = full.scheduler.Runs();
    REQUIRE(ra.size() == rb.size());
    for (size_t i = 0; i < ra.size(); ++i) {
      const std::string& id = ra[i]->info.run_id();
      INFO("run " << id);
      REQUIRE(rb[i]->info.run_id() == id);
      CHECK(ra[i]->info.state() == rb[i]->info.state());
      const auto& ta = inc.scheduler.TasksOf(id);
      const auto& tb = full.scheduler.TasksOf(id);
      REQUIRE(ta.size() == tb.size());
      for (size_t k = 0; k < ta.size(); ++k) {
        INFO("task " << ta[k]->info.task_id());
        REQUIRE(ta[k]->info.task_id() == tb[k]->info.task_id());
        REQUIRE(ta[k]->info.state() == tb[k]->info.state());
        REQUIRE(ta[k]->info.attempt() == tb[k]->info.attempt());
        REQUIRE(ta[k]->info.message() == tb[k]->info.message());
      }
      for (Fixture* f : {&inc, &full}) {
        RunRow* run = f->scheduler.FindRun(id);
        f->scheduler.RefreshCounters(run);
        const std::vector<int> recount = f->scheduler.RecountForTest(id);
        REQUIRE(run->info.tasks_total() == recount[0]);
        REQUIRE(run->info.tasks_done() == recount[1]);
        REQUIRE(run->info.tasks_failed() == recount[2]);
        REQUIRE(run->info.tasks_could_not_run() == recount[3]);
      }
      REQUIRE(ra[i]->info.tasks_done() == rb[i]->info.tasks_done());
      REQUIRE(ra[i]->info.tasks_failed() == rb[i]->info.tasks_failed());
    }
  }

  Fixture inc{0}, full{0};
  bool connected[kNodes] = {};
  int64_t now = kNow;
  int step = 0;
  int assigns = 0;
  std::vector<std::string> finished;
};

// A random plan over connected nodes: node, pairs and gang entries, retries,
// short timeouts.
std::string RandomPlan(std::mt19937& rng, const Twin& twin, const std::string& name) {
  std::vector<std::string> up;
  for (int i = 0; i < Twin::kNodes; ++i) {
    if (twin.connected[i]) up.push_back(Fixture::Node(i));
  }
  std::string yaml = "name: " + name + "\nsuites:\n";
  const int entries = 1 + static_cast<int>(rng() % 3);
  for (int e = 0; e < entries; ++e) {
    const int kind = static_cast<int>(rng() % 3);  // 0 node, 1 pairs, 2 gang
    std::shuffle(up.begin(), up.end(), rng);
    size_t n = std::min(up.size(), static_cast<size_t>(kind == 0 ? 1 + rng() % 8 : 2 + rng() % 5));
    std::vector<std::string> pick(up.begin(), up.begin() + n);
    // rdma allows scope pairs, selftest does not.
    yaml += kind == 1 ? "  - suite: rdma\n" : "  - suite: selftest\n";
    if (kind == 1) yaml += "    scope: pairs\n";
    if (kind == 2) yaml += "    scope: gang\n";
    yaml += "    nodes: [";
    for (size_t i = 0; i < pick.size(); ++i) yaml += (i ? ", " : "") + pick[i];
    yaml += "]\n";
    yaml += "    retries: " + std::to_string(rng() % 3) + "\n";
    yaml += "    timeout: " + std::to_string(10 + rng() % 30) + "s\n";
  }
  return yaml;
}

TEST_CASE("incremental scheduling assigns what the full pass assigns, in the same order",
          "[scheduler]") {
  for (unsigned seed : {1u, 2u, 3u, 4u, 5u, 6u}) {
    INFO("seed " << seed);
    std::mt19937 rng(seed);
    Twin twin;
    int runs = 0;
    for (twin.step = 0; twin.step < 1500; ++twin.step) {
      twin.now += 1'000'000'000;
      const int roll = static_cast<int>(rng() % 100);
      int up = 0;
      for (bool c : twin.connected) up += c;
      // Unfinished runs in memory.
      int open = 0;
      for (RunRow* r : twin.inc.scheduler.Runs()) open += r->info.state() == "running";
      // Tasks holding nodes, as the incremental twin has them (the same on
      // both, Compare checks it).
      std::vector<TaskRow*> active;
      for (RunRow* r : twin.inc.scheduler.Runs()) {
        for (TaskRow* t : twin.inc.scheduler.TasksOf(r->info.run_id())) {
          auto s = t->info.state();
          if (s == v1::TASK_ASSIGNED || s == v1::TASK_RUNNING) active.push_back(t);
        }
      }
      if (roll < 10 && open < 4 && up >= 2) {
        const std::string id = "r" + std::to_string(++runs);
        const std::string yaml = RandomPlan(rng, twin, id);
        auto plan = ParsePlan(yaml, "random.yaml");
        INFO(yaml << plan.status().ToString());
        REQUIRE(plan.ok());
        twin.Both("submit " + id, [&](Fixture& f, Changes* c) {
          auto run = f.scheduler.CreateRun(*plan, f.registry, twin.now, id, c);
          INFO(run.status().ToString());
          REQUIRE(run.ok());
        });
      } else if (roll < 55 && !active.empty()) {
        TaskRow* t = active[rng() % active.size()];
        const int world = std::max(1, t->assignment.world_size());
        const int rank = static_cast<int>(rng() % world);
        const std::string node = t->nodes[std::min<size_t>(rank, t->nodes.size() - 1)];
        const int pick = static_cast<int>(rng() % 10);
        v1::TaskStatus st;
        st.set_task_id(t->info.task_id());
        st.set_attempt(t->info.attempt());
        st.set_rank(t->assignment.group().empty() ? 0 : rank);
        st.set_state(pick < 3 ? v1::TASK_RUNNING
                              : pick < 8 ? v1::TASK_COMPLETED : v1::TASK_FAILED);
        // 9: could not run (exit 2), counted apart from the crashes (8).
        st.set_exit_code(pick < 8 ? 0 : pick == 8 ? 1 : 2);
        twin.Both("status " + st.task_id() + " from " + node, [&](Fixture& f, Changes* c) {
          f.scheduler.OnStatus(node, st, twin.now, c);
        });
      } else if (roll < 63) {
        // A stream ends: the node is disconnected, its tasks stay.
        const int i = static_cast<int>(rng() % Twin::kNodes);
        if (twin.connected[i]) {
          twin.connected[i] = false;
          for (Fixture* f : {&twin.inc, &twin.full}) {
            f->registry.OnStreamEnded(f->registry.Find(Fixture::Node(i))->session, 1);
          }
        }
      } else if (roll < 73) {
        // A disconnected node comes back (a new boot now and then: its
        // running tasks are gone).
        const int i = static_cast<int>(rng() % Twin::kNodes);
        if (!twin.connected[i]) {
          twin.connected[i] = true;
          const v1::Hello hello = HelloFrom(Fixture::Node(i), rng() % 2 ? "boot-1" : "boot-2");
          twin.Both("hello " + Fixture::Node(i), [&](Fixture& f, Changes* c) {
            f.Connect(Fixture::Node(i));
            f.scheduler.OnHello(Fixture::Node(i), hello, c);
          });
        }
      } else if (roll < 77) {
        // A disconnected node is lost.
        std::vector<std::string> lost;
        for (int i = 0; i < Twin::kNodes; ++i) {
          if (!twin.connected[i] && rng() % 2) lost.push_back(Fixture::Node(i));
        }
        twin.Both("lose", [&](Fixture& f, Changes* c) {
          f.scheduler.OnNodesLost(lost, twin.now, c);
        });
      } else if (roll < 79 && open > 0) {
        std::vector<std::string> ids;
        for (RunRow* r : twin.inc.scheduler.Runs()) {
          if (r->info.state() == "running") ids.push_back(r->info.run_id());
        }
        const std::string id = ids[rng() % ids.size()];
        twin.Both("cancel " + id, [&](Fixture& f, Changes* c) {
          REQUIRE(f.scheduler.Cancel(id, twin.now, c).ok());
        });
      } else if (roll < 85) {
        twin.Both("expire", [&](Fixture& f, Changes* c) {
          f.scheduler.ExpireOverdue(twin.now, 5'000'000'000, c);
        });
      } else if (roll < 88) {
        // Finished runs leave memory (as the core does after the scorecard).
        for (const std::string& id : twin.finished) {
          twin.inc.scheduler.Forget(id);
          twin.full.scheduler.Forget(id);
        }
        twin.finished.clear();
      }
      if (rng() % 2) twin.Schedule();
      twin.Compare();
    }
    // The sequence exercised what it is meant to.
    CHECK(runs >= 20);
    CHECK(twin.assigns >= 200);
  }
}

TEST_CASE("an incremental round misses a node connected without NodeChanged until the backstop",
          "[scheduler]") {
  Fixture f(2);
  f.Submit("name: one\nsuites:\n  - suite: selftest\n");
  f.registry.OnStreamEnded(f.registry.Find("node-1")->session, 1);
  Changes c;
  f.scheduler.Schedule(f.registry, kNow, &c);  // kAuto's first call: a full pass
  CHECK(Count(c, v1::CoordinatorMessage::kAssign) == 1);
  f.Connect("node-1");  // the registry only: the scheduler is not told
  Changes inc;
  f.scheduler.Schedule(f.registry, kNow + 1'000'000'000, &inc);
  CHECK(Count(inc, v1::CoordinatorMessage::kAssign) == 0);
  SECTION("the full pass 10 s after the last one assigns it") {
    Changes later;
    f.scheduler.Schedule(f.registry, kNow + 10'000'000'000, &later);
    CHECK(Count(later, v1::CoordinatorMessage::kAssign, "node-1") == 1);
  }
  SECTION("NodeChanged makes the next incremental round look at it") {
    f.scheduler.NodeChanged("node-1");
    Changes next;
    f.scheduler.Schedule(f.registry, kNow + 2'000'000'000, &next);
    CHECK(Count(next, v1::CoordinatorMessage::kAssign, "node-1") == 1);
  }
}

}  // namespace
}  // namespace cmax::coordinator
