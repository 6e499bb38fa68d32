#include "common/task_state.h"

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

}  // namespace cmax
