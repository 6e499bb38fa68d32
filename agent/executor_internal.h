// Shared by the executor's own files only (agent/executor*.cc); nothing
// outside them includes it. The Executor's state machine and its public
// interface are described in agent/executor.h; its code lies in one file
// per idea:
//
//   executor.cc             the executor thread: its inbox, the loop, one
//                           Tick over every child, accepting an assignment
//                           (HandleAssign), ending a child (Finish), the
//                           restart scan, and what /metrics and Hello see;
//   assignment_validation.cc what an assignment must be before anything is
//                           spawned: task id, the catalog's re-validation of
//                           suite and args, env, ranks, mpirun options;
//   executor_launch.cc      starting a child: argv (direct and through
//                           mpirun), its environment and working directory,
//                           the start record, the group's rendezvous;
//   executor_records.cc     delivery: pumping each spool into RecordBatch
//                           messages, the end status after its records,
//                           acks, rewinds after a reconnect, forgetting a
//                           delivered child and remembering its key;
//   executor_kill.cc        stopping children: timeouts and cancels
//                           (SIGTERM, SIGKILL after the grace), the kill log,
//                           what a suite left in its process group, how a
//                           child's end is classified, and shutdown.
#ifndef CMAX_AGENT_EXECUTOR_INTERNAL_H_
#define CMAX_AGENT_EXECUTOR_INTERNAL_H_

#include <cstdint>
#include <memory>
#include <string>

#include "agent/executor.h"
#include "agent/spool.h"
#include "agent/task_store.h"
#include "cmax/v1/service.pb.h"
#include "common/subprocess.h"
#include "common/task_state.h"

namespace cmax::agent {

inline constexpr int64_t kNsPerMs = 1000000;
inline constexpr int64_t kNsPerS = 1000000000;
// kCouldNotRunExit (common/task_state.h): the code of a suite that could not
// run, which the agent also reports when it cannot start the suite at all.

// ^[A-Za-z0-9_.-]{1,128}$ (task ids and group names; assignment_validation.cc).
bool ValidTaskId(const std::string& id);

// One child: a rank of a (task, attempt). Executor thread only.
struct Executor::Task {
  TaskKey key;
  v1::TaskAssignment assignment;
  int32_t local_rank = 0;
  bool has_dir = false;
  Phase phase = Phase::kWaiting;
  int64_t start_mono_ns = 0;
  int64_t deadline_mono_ns = 0;  // 0: no timeout
  int64_t kill_at_mono_ns = 0;   // pending SIGKILL
  bool kill_started = false;
  bool timed_out = false;
  bool cancelled = false;
  std::string cancel_reason;
  int timeout_s = 0;
  int64_t started_unix_ns = 0;
  std::unique_ptr<Subprocess> proc;
  std::unique_ptr<SpoolTailer> tailer;  // null without a directory
  int64_t acked = 0;                    // records with seq < acked are durable
  int64_t record_count = 0;             // valid in kDone
  v1::TaskStatus end_status;
  bool status_sent = false;
  bool status_acked = false;
  int64_t next_error_log_mono_ns = 0;
};

}  // namespace cmax::agent

#endif  // CMAX_AGENT_EXECUTOR_INTERNAL_H_
