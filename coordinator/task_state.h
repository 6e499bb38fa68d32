// Task states as the coordinator and cmaxctl name and group them. A library
// of its own (cmax_task_state, proto messages only) so that cmaxctl can use
// it without linking the daemon library (cmax_coordinator).
#ifndef CMAX_COORDINATOR_TASK_STATE_H_
#define CMAX_COORDINATOR_TASK_STATE_H_

#include "cmax/v1/service.pb.h"

namespace cmax::coordinator {

// Completed, failed, timed out, lost or cancelled: the task will not change.
bool IsTerminal(v1::TaskState state);
// "pending", "assigned", "running", "completed", "failed", "timed_out",
// "lost", "cancelled"; "unknown" for anything else.
const char* TaskStateName(v1::TaskState state);

}  // namespace cmax::coordinator

#endif  // CMAX_COORDINATOR_TASK_STATE_H_
