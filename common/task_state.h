// Task states as the coordinator, cmaxctl, the web view and the scorecard
// name and group them: one table for all. In cmax_common: TaskState is a
// messages-only enum (cmax/v1/run.proto, library cmax_proto_msgs), so this
// needs no gRPC, and builds that compile common/ without the service proto
// (the fuzz targets, the GPU bundle) compile it too.
#ifndef CMAX_COMMON_TASK_STATE_H_
#define CMAX_COMMON_TASK_STATE_H_

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

}  // namespace cmax

#endif  // CMAX_COMMON_TASK_STATE_H_
