// cmaxctl's run summary and exit codes (coordinator/ctl/progress.h): the
// precedence of the codes and could-not-run counted apart from failures.
#include "coordinator/ctl/progress.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

namespace cmax::ctl {
namespace {

v1::TaskInfo Task(v1::TaskState state, int exit_code = 0) {
  v1::TaskInfo t;
  t.set_state(state);
  t.set_exit_code(exit_code);
  return t;
}

v1::RunInfo Run(const std::string& state, const std::string& tier, int nodes_failed = 0) {
  v1::RunInfo r;
  r.set_run_id("r1");
  r.set_state(state);
  r.set_tier(tier);
  r.set_nodes_failed(nodes_failed);
  return r;
}

TEST_CASE("tasks are counted by outcome, could not run apart from failures", "[ctl]") {
  TaskCounts c = CountTasks({Task(v1::TASK_COMPLETED), Task(v1::TASK_COMPLETED, 1),
                             Task(v1::TASK_FAILED, 2), Task(v1::TASK_FAILED, 2),
                             Task(v1::TASK_FAILED, 139), Task(v1::TASK_FAILED, -1),
                             Task(v1::TASK_TIMED_OUT, -1), Task(v1::TASK_LOST, -1),
                             Task(v1::TASK_CANCELLED, -1), Task(v1::TASK_RUNNING)});
  CHECK(c.total == 10);
  CHECK(c.ended == 9);
  CHECK(c.completed == 2);
  CHECK(c.could_not_run == 2);
  CHECK(c.failed == 4);
  CHECK(c.cancelled == 1);
}

TEST_CASE("the final line names the tier and counts could-not-run apart", "[ctl]") {
  std::vector<v1::TaskInfo> tasks(13, Task(v1::TASK_COMPLETED));
  tasks.insert(tasks.end(), 23, Task(v1::TASK_FAILED, 2));
  CHECK(SummaryLine(Run("completed", "not rated"), CountTasks(tasks)) ==
        "run r1 completed: not rated; 36/36 tasks ended: 13 completed, 23 could not run, "
        "0 failed; 0 nodes failed");
  tasks.push_back(Task(v1::TASK_LOST, -1));
  tasks.push_back(Task(v1::TASK_CANCELLED, -1));
  CHECK(SummaryLine(Run("completed", "Gold", 1), CountTasks(tasks)) ==
        "run r1 completed: tier Gold; 38/38 tasks ended: 13 completed, 23 could not run, "
        "1 failed, 1 cancelled; 1 node failed");
}

TEST_CASE("exit codes: 3 unfinished, then 1 failed, then 4 not rated, else 0", "[ctl]") {
  const TaskCounts none = CountTasks({Task(v1::TASK_COMPLETED)});
  const TaskCounts cannot = CountTasks({Task(v1::TASK_COMPLETED), Task(v1::TASK_FAILED, 2)});
  const TaskCounts crashed = CountTasks({Task(v1::TASK_COMPLETED), Task(v1::TASK_FAILED, 139)});
  const TaskCounts hung = CountTasks({Task(v1::TASK_TIMED_OUT, -1)});
  const TaskCounts lost = CountTasks({Task(v1::TASK_LOST, -1)});

  CHECK(RunExitCode(Run("completed", "Gold"), none, true) == kExitOk);
  // Could not run is not a failure: the tier speaks for what it left out.
  CHECK(RunExitCode(Run("completed", "Silver"), cannot, true) == kExitOk);
  CHECK(RunExitCode(Run("completed", "Gold"), crashed, true) == kExitFailed);
  CHECK(RunExitCode(Run("completed", "Gold"), hung, true) == kExitFailed);
  CHECK(RunExitCode(Run("completed", "Gold"), lost, true) == kExitFailed);
  CHECK(RunExitCode(Run("completed", "Gold", 1), none, true) == kExitFailed);
  // A failed task or node comes before not rated: it is a fact to act on
  // whatever the coverage.
  CHECK(RunExitCode(Run("completed", "not rated"), none, true) == kExitNotRated);
  CHECK(RunExitCode(Run("completed", "not rated"), cannot, true) == kExitNotRated);
  CHECK(RunExitCode(Run("completed", "not rated", 2), none, true) == kExitFailed);
  CHECK(RunExitCode(Run("completed", "not rated"), crashed, true) == kExitFailed);
  CHECK(RunExitCode(Run("completed", ""), none, true) == kExitNotRated);  // no scorecard
  // Could not finish comes before everything else.
  CHECK(RunExitCode(Run("cancelled", "not rated"), crashed, true) == kExitUnfinished);
  CHECK(RunExitCode(Run("completed", "Gold"), none, false) == kExitUnfinished);
  CHECK(RunExitCode(Run("running", ""), none, true) == kExitUnfinished);
  CHECK(kExitUsage == 2);
  CHECK(kExitNotRated == 4);
}

}  // namespace
}  // namespace cmax::ctl
