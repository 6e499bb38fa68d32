#include "common/task_state.h"

#include "absl/strings/str_cat.h"

namespace cmax {

bool IsTerminal(v1::TaskState s) {
  return s == v1::TASK_COMPLETED || s == v1::TASK_FAILED || s == v1::TASK_TIMED_OUT ||
         s == v1::TASK_LOST || s == v1::TASK_CANCELLED;
}

bool IsFailedState(v1::TaskState s) {
  return s == v1::TASK_FAILED || s == v1::TASK_TIMED_OUT || s == v1::TASK_LOST;
}

const char* TaskStateName(v1::TaskState s) {
  switch (s) {
    case v1::TASK_PENDING: return "pending";
    case v1::TASK_ASSIGNED: return "assigned";
    case v1::TASK_RUNNING: return "running";
    case v1::TASK_COMPLETED: return "completed";
    case v1::TASK_FAILED: return "failed";
    case v1::TASK_TIMED_OUT: return "timed_out";
    case v1::TASK_LOST: return "lost";
    case v1::TASK_CANCELLED: return "cancelled";
    default: return "unknown";
  }
}

std::optional<v1::TaskState> TaskStateFromName(std::string_view name) {
  for (v1::TaskState s : {v1::TASK_PENDING, v1::TASK_ASSIGNED, v1::TASK_RUNNING,
                          v1::TASK_COMPLETED, v1::TASK_FAILED, v1::TASK_TIMED_OUT, v1::TASK_LOST,
                          v1::TASK_CANCELLED}) {
    if (name == TaskStateName(s)) return s;
  }
  return std::nullopt;
}

bool TaskCouldNotRun(const v1::TaskInfo& t) {
  return t.state() == v1::TASK_FAILED && t.exit_code() == kCouldNotRunExit;
}

bool TaskBroke(v1::TaskState state, int exit_code) {
  return IsFailedState(state) && !(state == v1::TASK_FAILED && exit_code == kCouldNotRunExit);
}

bool TaskBroke(const v1::TaskInfo& t) { return TaskBroke(t.state(), t.exit_code()); }

TaskCounts CountTasks(const std::vector<v1::TaskInfo>& tasks) {
  TaskCounts c;
  for (const auto& t : tasks) {
    ++c.total;
    if (IsTerminal(t.state())) ++c.ended;
    if (t.state() == v1::TASK_COMPLETED) {
      ++c.completed;
    } else if (TaskCouldNotRun(t)) {
      ++c.could_not_run;
    } else if (TaskBroke(t)) {
      ++c.failed;
    } else if (t.state() == v1::TASK_CANCELLED) {
      ++c.cancelled;
    }
  }
  return c;
}

std::string TaskCountsText(const TaskCounts& c) {
  std::string text = absl::StrCat(c.completed, " completed, ", c.could_not_run,
                                  " could not run, ", c.failed, " failed");
  if (c.cancelled > 0) absl::StrAppend(&text, ", ", c.cancelled, " cancelled");
  return text;
}

}  // namespace cmax
