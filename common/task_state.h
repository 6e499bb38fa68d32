// Task states as the coordinator, cmaxctl, the web view and the scorecard
// name and group them: one table for all (in cmax_common, so cmaxctl has it
// without linking the daemon library).
#ifndef CMAX_COMMON_TASK_STATE_H_
#define CMAX_COMMON_TASK_STATE_H_

#include "cmax/v1/service.pb.h"

namespace cmax {

// Completed, failed, timed out, lost or cancelled: the task will not change.
bool IsTerminal(v1::TaskState state);
// "pending", "assigned", "running", "completed", "failed", "timed_out",
// "lost", "cancelled"; "unknown" for anything else.
const char* TaskStateName(v1::TaskState state);

}  // namespace cmax

#endif  // CMAX_COMMON_TASK_STATE_H_
