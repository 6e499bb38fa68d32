// The agent's side of a remediation step (issue #47): the coordinator sends a
// RemediationAction (CoordinatorMessage.remediate); the RemediationRunner
// checks it again against this node's own configuration, runs it as an argv
// (never a shell) and sends a RemediationResult back (AgentMessage.remediation).
//
// What it runs, and nothing else:
//   COLLECT       journalctl -k --since -15min --no-pager -o short-iso
//                 journalctl --since -15min --no-pager -p warning -o short-iso
//                 nvidia-bug-report.sh --output-file
//                 <work>/remediation/<incident>/nvidia-bug-report.log (the last one only
//                 where the program exists)
//   RESTART_UNIT  systemctl restart -- UNIT ; systemctl is-active -- UNIT
//   RESET_GPU     nvidia-smi --gpu-reset -i N
//   REBOOT        systemctl reboot
// The coordinator's message contributes only values parsed and checked here:
// an incident id (a path component, so '.' and '..' are refused too), a
// systemd unit name that is in Options::allowed_units, a GPU index below
// Options::gpu_count. The allow-list comes from the agent's own flag
// (--remediation-units), never from the coordinator.
//
// Threads: Post, OnConnected and Validate may be called from any thread and
// never block on a command. Accepted actions run one at a time on the
// runner's own worker thread (started by the constructor, joined by the
// destructor, which lets the running command finish first). The worker
// lives as long as the runner, as common/subprocess.h asks of a thread that
// forks (PR_SET_PDEATHSIG follows the forking thread).
#ifndef CMAX_AGENT_REMEDIATION_ACTIONS_H_
#define CMAX_AGENT_REMEDIATION_ACTIONS_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "agent/agent_clock.h"
#include "agent/outbox.h"
#include "cmax/v1/service.pb.h"

namespace cmax::agent {

// Whether `name` is a valid systemd unit name to restart
// (common/systemd_unit.h's check): "prefix.type" or "prefix@instance.type"
// (no bare template "prefix@.type"), at most 255 characters of
// [A-Za-z0-9:_.\-@\\], not starting with '-', '.' or '@', with any of
// systemd's unit types as suffix. INVALID_ARGUMENT says what is wrong.
absl::Status ValidateUnitName(absl::string_view name);

// Whether `id` is a valid incident id: 1 to 64 of [A-Za-z0-9_:.-], and not
// "." or "..". INVALID_ARGUMENT says what is wrong.
absl::Status ValidateIncidentId(absl::string_view id);

class RemediationRunner {
 public:
  struct Options {
    // Units RESTART_UNIT may name (exact names), from --remediation-units.
    // Empty: every RESTART_UNIT is refused.
    std::vector<std::string> allowed_units;
    // Programs: a name looked up on PATH, or a path (tests point these at
    // fake scripts).
    std::string systemctl = "systemctl";
    std::string nvidia_smi = "nvidia-smi";
    std::string journalctl = "journalctl";
    std::string nvidia_bug_report = "nvidia-bug-report.sh";
    // GPUs on this node (the agent's inventory): RESET_GPU needs 0 <= i < this.
    int gpu_count = 0;
    std::chrono::milliseconds restart_timeout{60000};   // each systemctl call
    std::chrono::milliseconds reset_timeout{120000};    // nvidia-smi --gpu-reset
    std::chrono::milliseconds collect_timeout{300000};  // the whole COLLECT step
    std::chrono::milliseconds reboot_timeout{60000};    // systemctl reboot
    // REBOOT: how long to wait between queueing the "reboot requested"
    // result and running systemctl reboot, so the stream can carry it.
    std::chrono::milliseconds reboot_grace{2000};
    // Evidence goes under <work_dir>/remediation/<incident id>/.
    std::string work_dir;
    // True while any task runs on this node (the executor knows). RESET_GPU
    // and REBOOT are refused while it holds. Null: never busy. Called from
    // Post's caller and from the worker thread; must be thread-safe.
    std::function<bool()> busy;
    // Started/ended times are in the agent's clock.
    AgentClock clock;
    // Accepted actions waiting behind the running one; more are refused.
    size_t max_queued = 16;
    // Results kept for resending while the stream is down; past this the
    // oldest is dropped (and logged).
    size_t max_unsent = 64;
  };

  // REQUIRES: `outbox` outlives the runner. Every allowed unit must pass
  // ValidateUnitName (see CheckOptions); one that does not is never matched.
  RemediationRunner(Options options, Outbox* outbox);
  // Stops taking work, drops the queue (unsent results are lost), lets the
  // running command finish (RunCommand cannot be interrupted: up to its
  // timeout) and joins the worker.
  ~RemediationRunner();
  RemediationRunner(const RemediationRunner&) = delete;
  RemediationRunner& operator=(const RemediationRunner&) = delete;

  // Checks the options main.cc builds from flags: every allowed unit a
  // valid unit name, gpu_count >= 0, a work_dir. INVALID_ARGUMENT names
  // the first offender (for a startup error).
  static absl::Status CheckOptions(const Options& options);

  // OK when `action` may run now. Otherwise (nothing runs):
  //   INVALID_ARGUMENT   bad incident id, unit name, or UNSPECIFIED kind
  //   PERMISSION_DENIED  "unit X is not in --remediation-units"
  //   OUT_OF_RANGE       GPU index outside [0, gpu_count)
  //   FAILED_PRECONDITION  RESET_GPU or REBOOT while a task is running
  // Checked on Post and again just before the action runs.
  absl::Status Validate(const v1::RemediationAction& action) const;

  // Validates and queues `action`; returns at once. A refused action (or one
  // past max_queued, RESOURCE_EXHAUSTED) gets its result, ok=false with the
  // reason, sent from this call. Results go out on the newest generation
  // seen (this one or OnConnected's); one that cannot be sent is kept.
  //
  // What each result says: ok, the command line(s) and how each ended
  // (ExitInfo::Describe, "timed out after N s", "not started (...)"), the
  // last 2 KiB of stderr (valid UTF-8), start and end in the agent's clock;
  // COLLECT adds the artifacts kernel-log.txt and journal.txt (256 KiB each,
  // truncated set when capped) and names the bug report's path and size.
  // REBOOT: the result "reboot requested" (ok) is sent before systemctl
  // runs; if systemctl then fails, a second result for the same step
  // follows with ok=false ("reboot failed: ...").
  void Post(uint64_t generation, v1::RemediationAction action);

  // A new stream is up: resends the kept results, in order, on it.
  void OnConnected(uint64_t generation);

  // For tests and status: results not yet accepted by the outbox, and
  // actions queued or running.
  size_t UnsentCount() const;
  size_t PendingCount() const;

 private:
  struct Job {
    v1::RemediationAction action;
  };

  void WorkerLoop();
  v1::RemediationResult Run(const v1::RemediationAction& action);
  void RunRestart(const v1::RemediationAction& action, v1::RemediationResult* result);
  void RunReset(const v1::RemediationAction& action, v1::RemediationResult* result);
  void RunReboot(const v1::RemediationAction& action, v1::RemediationResult* result);
  void RunCollect(const v1::RemediationAction& action, v1::RemediationResult* result);
  v1::RemediationResult Refused(const v1::RemediationAction& action,
                                const absl::Status& why) const;
  // Sends `result` on the current generation, or keeps it for OnConnected.
  void Deliver(v1::RemediationResult result);
  bool Busy() const;
  bool WorkReady() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  Outbox* const outbox_;

  mutable absl::Mutex mu_;
  uint64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool running_ ABSL_GUARDED_BY(mu_) = false;
  std::deque<Job> queue_ ABSL_GUARDED_BY(mu_);
  std::deque<v1::RemediationResult> unsent_ ABSL_GUARDED_BY(mu_);

  std::thread worker_;
};

}  // namespace cmax::agent

#endif  // CMAX_AGENT_REMEDIATION_ACTIONS_H_
