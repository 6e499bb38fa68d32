// Task states as the coordinator, cmaxctl, the web view and the scorecard
// name and group them: one table for all. In cmax_common: TaskState is a
// messages-only enum (cmax/v1/run.proto, library cmax_proto_msgs), so this
// needs no gRPC, and builds that compile common/ without the service proto
// (the fuzz targets, the GPU bundle) compile it too.
#ifndef CMAX_COMMON_TASK_STATE_H_
#define CMAX_COMMON_TASK_STATE_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cmax/v1/run.pb.h"

namespace cmax {

// Completed, failed, timed out, lost or cancelled: the task will not change.
bool IsTerminal(v1::TaskState state);
// Failed, timed out or lost: what RunInfo.tasks_failed counts (a task that
// could not run, TASK_FAILED with exit code 2, included; cmaxctl counts that
// apart by its exit code).
bool IsFailedState(v1::TaskState state);
// "pending", "assigned", "running", "completed", "failed", "timed_out",
// "lost", "cancelled"; "unknown" for anything else.
const char* TaskStateName(v1::TaskState state);
// The state TaskStateName names `name`; nullopt for "unknown" and anything
// else (the scorecard's tasks carry their state by name).
std::optional<v1::TaskState> TaskStateFromName(std::string_view name);

// The suites' exit code for "could not run" (DESIGN.md, "Suite exit
// codes"); the agent ends a task it cannot start with it too.
inline constexpr int kCouldNotRunExit = 2;
// Could not run: TASK_FAILED with exit code 2. Not measured, never a
// failure (reports/RULES.md, rule 2).
bool TaskCouldNotRun(const v1::TaskInfo& task);
// Broke: lost, hung (timed out) or crashed (TASK_FAILED with any other exit
// code, or a signal): IsFailedState and not TaskCouldNotRun.
bool TaskBroke(const v1::TaskInfo& task);
bool TaskBroke(v1::TaskState state, int exit_code);

// The tasks of a run by outcome, as cmaxctl prints them and the coordinator
// logs them: one count so the two never disagree (a task that could not run,
// exit code 2, is not a failure).
struct TaskCounts {
  int total = 0;
  int ended = 0;
  int completed = 0;
  int could_not_run = 0;  // TASK_FAILED with exit code 2
  int failed = 0;         // crashed (other exit codes, signals), timed out, lost
  int cancelled = 0;
};
TaskCounts CountTasks(const std::vector<v1::TaskInfo>& tasks);

// "13 completed, 23 could not run, 1 failed" and ", 1 cancelled" when any.
std::string TaskCountsText(const TaskCounts& counts);

}  // namespace cmax

#endif  // CMAX_COMMON_TASK_STATE_H_
