// Runs and tasks: expands a plan into tasks, decides what runs where and
// when, and applies what agents report.
//
// Task states (cmax.v1.TaskState):
//
//   PENDING ──assign──▶ ASSIGNED ──agent: running──▶ RUNNING ──agent: end──▶ COMPLETED
//      │                   │                            │                    FAILED ──(retries left)──▶ PENDING
//      │                   │                            │                    TIMED_OUT
//      └──── cancel ───────┴──── cancel / node lost ────┴──────────────────▶ CANCELLED / LOST
//
// A node runs one task at a time. A task is ready when every task of its run
// with a lower suite index on any of its nodes has ended, and all its nodes
// are connected and free. Runs are served first come, first served. Group
// tasks (gang, barrier, pairs) hold all their nodes; a rank that fails, or a
// node that is lost, ends the whole group and stops the other ranks.
//
// Outcomes: TaskInfo describes the task's latest attempt; an attempt that
// ends and is retried is appended to TaskInfo.earlier_attempts first. A
// group task that ends badly names in TaskInfo.blamed_nodes the node of the
// first rank that ended non-completed (not the ranks stopped because of it),
// the lost node, or on the scheduler's timeout the nodes whose ranks had not
// ended (all of them when none had).
//
// Barrier scope: at assignment the scheduler picks one instant T (coordinator
// clock, TaskInfo.start_at_unix_ns) and gives each node T in its own clock
// (TaskAssignment.start_at_agent_ns, from the registry's offset estimate);
// resends keep it.
//
// A run ends when all its tasks have ended: "completed", or "cancelled" after
// a cancel. A task whose entry needs more nodes than the run has ends at
// creation (CreateRun) without an attempt.
//
// Thread: owned by the coordinator core thread; not thread-safe.
#ifndef CMAX_COORDINATOR_SCHEDULER_H_
#define CMAX_COORDINATOR_SCHEDULER_H_

#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "absl/status/statusor.h"
#include "common/task_state.h"
#include "coordinator/registry.h"
#include "coordinator/store.h"

namespace cmax::coordinator {

// A message for one agent.
struct Outbound {
  std::string node;
  v1::CoordinatorMessage message;
};

// What a scheduler call changed: to persist, to broadcast, to send.
struct Changes {
  std::set<std::string> tasks;  // task ids whose row changed
  std::set<std::string> runs;   // run ids whose row changed
  std::vector<Outbound> out;
  std::vector<std::string> finished_runs;  // runs that just ended
};

// How Schedule looks for ready tasks.
enum class ScheduleMode {
  // Incremental, with a full pass as a backstop at most every 10 s (by the
  // `now_unix_ns` passed in), on the first call, and when at least half the
  // nodes with tasks changed (cheaper then). What the core uses.
  kAuto,
  // Only the pending tasks that can have become ready since the last call:
  // those on a node whose tasks changed state or that (re)connected
  // (NodeChanged, OnHello), and those of a run just created or restored.
  kIncremental,
  // Every pending task of every run (the test oracle and the backstop).
  kFull,
};

class Scheduler {
 public:
  // Expands `plan` over the connected agents. INVALID_ARGUMENT for an
  // unknown suite or bad parameters, FAILED_PRECONDITION when an entry
  // selects no connected node (or names one that is not connected).
  // An entry that needs more nodes than it selects (pairs: 2; gang, barrier:
  // SuiteSpec.min_nodes, and ranks enough for the suite's SuiteInfo.min_ranks)
  // is not refused:
  // it gets one task over its nodes, already ended as could not run
  // (TASK_FAILED, exit code 2, attempt 0, never assigned) with the message
  // "not measured: needs 2 nodes, the run has 1", and the rest of the plan
  // runs. When no task is left to run the run ends here (finished_runs).
  // `only_nodes` (a schedule's wave, schedules.h): the run sees only these
  // of the connected agents, as if they were the whole cluster; null: all.
  absl::StatusOr<RunRow*> CreateRun(const v1::Plan& plan, const Registry& registry,
                                    int64_t now_unix_ns, const std::string& run_id,
                                    Changes* changes,
                                    const std::vector<std::string>* only_nodes = nullptr);
  // Brings back an unfinished run from the store (coordinator restart).
  void Restore(RunRow run, std::vector<TaskRow> tasks);

  // Assigns every ready task: runs first come, first served (creation
  // order), within a run in TasksOf order. kAuto and kIncremental assign the
  // same tasks in the same order as kFull (tests/coordinator/
  // scheduler_test.cc holds them to it) at a cost of the tasks on the
  // changed nodes instead of every task.
  void Schedule(const Registry& registry, int64_t now_unix_ns, Changes* changes,
                ScheduleMode mode = ScheduleMode::kAuto);
  // A node's connection or tasks changed outside this class's calls: its
  // pending tasks are looked at by the next incremental Schedule. OnHello
  // calls it itself (a node becomes connected only with a Hello).
  void NodeChanged(const std::string& node);
  // An agent reported on a task (start or end).
  void OnStatus(const std::string& node, const v1::TaskStatus& status, int64_t now_unix_ns,
                Changes* changes);
  // An agent (re)connected holding these tasks: re-send assignments it lost,
  // stop tasks that ended here meanwhile.
  void OnHello(const std::string& node, const v1::Hello& hello, Changes* changes);
  void OnNodeLost(const std::string& node, int64_t now_unix_ns, Changes* changes);
  // The same for every node of `nodes` (in that order: a task on several of
  // them is blamed on the first), in one pass over the tasks and one
  // MaybeFinishRun a run: a sweep that loses thousands of agents must not
  // cost nodes x tasks (docs/scale.md).
  void OnNodesLost(const std::vector<std::string>& nodes, int64_t now_unix_ns, Changes* changes);
  // Cancels every unfinished task of a run. NOT_FOUND for an unknown or
  // finished run. Returns how many tasks were cancelled.
  absl::StatusOr<int> Cancel(const std::string& run_id, int64_t now_unix_ns, Changes* changes);
  // Backstop for agents that do not enforce a timeout: a task running past
  // its timeout plus `grace_ns` is ended as timed out.
  void ExpireOverdue(int64_t now_unix_ns, int64_t grace_ns, Changes* changes);

  RunRow* FindRun(const std::string& run_id);
  TaskRow* FindTask(const std::string& task_id);
  // The task's ranks per node in TaskRow::nodes order for its current
  // attempt (rank_claims.h LocalSizesOf: uniform when the layout is not
  // known, as after a coordinator restart).
  std::vector<int> LocalSizes(const TaskRow& task) const;
  // The run's tasks by plan entry, then id. Cached per run until the run's
  // tasks change (CreateRun, Restore, Forget): the reference stays valid
  // until then.
  const std::vector<TaskRow*>& TasksOf(const std::string& run_id);
  std::vector<RunRow*> Runs();
  // Drops a finished run from memory (it stays in the store).
  void Forget(const std::string& run_id);
  // The run's counters (tasks_total, tasks_done, tasks_failed,
  // tasks_could_not_run) set from the totals kept as tasks change state: O(1).
  void RefreshCounters(RunRow* run);
  // The same counters counted over the run's tasks, for tests: {total,
  // done (terminal), failed (broke), could not run}.
  std::vector<int> RecountForTest(const std::string& run_id);

 private:
  // Per run: what RefreshCounters reports.
  struct RunCounts {
    int total = 0;
    int ended = 0;          // terminal
    int failed = 0;         // broke: crashed, timed out, lost (common/task_state.h)
    int could_not_run = 0;  // TASK_FAILED with exit code 2: not a failure
  };
  // Adds `sign` times the task's outcome (as it is now) to its run's
  // counts, and remembers that outcome in TaskRow::counted_as.
  void Count(TaskRow* task, RunCounts& c, int sign);
  // Per node: its tasks (of every run in memory) and how many of them hold
  // it (ASSIGNED or RUNNING).
  struct NodeTasks {
    std::vector<TaskRow*> tasks;
    int busy = 0;
  };
  // The one place a task's state changes once it is indexed: keeps the run
  // counts, the node index's busy counts, the active set and the changed
  // nodes right.
  void SetState(TaskRow* task, v1::TaskState state);
  // Adds a new task (state as it is) to the counts and indexes, or removes
  // one about to be dropped.
  void Index(TaskRow* task);
  void Unindex(TaskRow* task);
  // Takes `task` into tasks_ and the indexes (CreateRun, Restore): a row of
  // the same id already there is unindexed and replaced.
  void Adopt(std::unique_ptr<TaskRow> task);
  static bool Holds(v1::TaskState s) { return s == v1::TASK_ASSIGNED || s == v1::TASK_RUNNING; }
  void ScheduleFull(const Registry& registry, int64_t now_unix_ns, Changes* changes);
  void ScheduleIncremental(const Registry& registry, int64_t now_unix_ns, Changes* changes);
  // Whether the task can be assigned now, from the node index: the task's nodes connected and free, and no
  // task of its run with a lower plan index not ended on any of them.
  bool ReadyIndexed(const TaskRow& task, const Registry& registry) const;

  void Assign(TaskRow* task, const Registry& registry, int64_t now_unix_ns, Changes* changes);
  void EndTask(TaskRow* task, v1::TaskState state, const std::string& message,
               int64_t now_unix_ns, Changes* changes);
  void MaybeFinishRun(const std::string& run_id, int64_t now_unix_ns, Changes* changes);
  void StopOnNodes(const TaskRow& task, const std::string& reason, const std::string& except,
                   Changes* changes);
  // Appends the attempt that just ended to info.earlier_attempts.
  void RecordAttempt(TaskRow* task, v1::TaskState state, const std::string& message,
                     int64_t now_unix_ns);
  // Barrier scope: the node's start instant (its own clock) for the task's
  // current attempt; 0 when none is known.
  int64_t StartAtAgent(const std::string& task_id, const std::string& node) const;
  // Sets start_at_agent_ns on every assignment to `node` in `changes`
  // whose task has a start instant for it.
  void StampStartTimes(const std::string& node, Changes* changes) const;
  // A group task's nodes with a rank that has not sent its end status; empty
  // when none has ended at all (or for launcher mpirun, one status in all).
  std::vector<std::string> UnendedNodes(const TaskRow& task) const;

  std::map<std::string, std::unique_ptr<RunRow>> runs_;
  std::map<std::string, std::unique_ptr<TaskRow>> tasks_;
  std::unordered_map<std::string, RunCounts> counts_;     // by run
  std::unordered_map<std::string, NodeTasks> node_tasks_;  // by node
  std::map<std::string, TaskRow*> active_;  // ASSIGNED or RUNNING, by task id
  // Nodes whose pending tasks the next incremental Schedule looks at.
  std::unordered_set<std::string> changed_nodes_;
  int64_t last_full_ns_ = 0;  // the last full pass (kAuto's backstop)
  std::map<std::string, std::vector<TaskRow*>> tasks_of_;  // TasksOf's cache, by run
  std::vector<std::string> run_order_;  // creation order
  // Per group task: end statuses per rank received so far.
  std::map<std::string, std::map<int, v1::TaskStatus>> rank_ends_;
  // Per barrier task, current attempt: each node's start instant in its own
  // clock (TaskInfo.start_at_unix_ns + the node's clock offset), so a resend
  // keeps it. In memory only: after a coordinator restart a resent
  // assignment has none and starts at once.
  std::map<std::string, std::map<std::string, int64_t>> start_at_agent_;
  // Per group task, current attempt: ranks per node, in TaskRow::nodes order.
  std::map<std::string, std::vector<int>> local_sizes_;
};

}  // namespace cmax::coordinator

#endif  // CMAX_COORDINATOR_SCHEDULER_H_
