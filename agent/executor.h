// Runs the coordinator's tasks as child processes and delivers their records.
//
// Threads: the public methods are thread-safe and never block on the
// executor (they post an event and return), so the connection's reader
// thread can call them. Everything else -- children, task directories,
// spool tailers, timeouts -- is owned by ONE long-lived executor thread.
// Children are spawned only from that thread: Linux ties PR_SET_PDEATHSIG
// to the thread that forked, so a child forked from a short-lived thread
// would be killed when that thread exits.
//
// Per child (a rank of a (task, attempt)), on the executor thread:
//
//   assign ──validate──▶ rejected ─────────────────────────────┐
//     │ create dir (fails: failed "work dir ...") ─────────────┤
//     ▼                                                         ▼
//   kWaiting ──start_at reached──▶ kRunning ──child exits──▶ kDone
//     │ cancel                       │ timeout: SIGTERM, SIGKILL after grace
//     └────────── cancelled ─────────┴ cancel:  SIGTERM, SIGKILL after grace
//
//   rejected: TASK_FAILED, exit code 2 "could not run: ..." when the suite's
//   binary (or mpirun) is missing, its arguments are refused or a plan path
//   lies outside what the agent allows (ValidatePlanPaths), exit code -1
//   "rejected: ..." otherwise (ValidateAssignment). kWaiting → kRunning with a
//   start instant (barrier scope) first writes TaskStartRecord as line 0 of
//   the spool, then spawns the suite appending to it.
//
//   kDone: status.json written; records are sent up to record_count, THEN
//   the end TaskStatus; on StatusAck with every record acked, the directory
//   is removed and the child forgotten (its key remembered so a duplicate
//   assignment does not run it again).
//
// Delivery: records go out in RecordBatch messages (≤ max_batch_records or
// about max_batch_bytes) while the outbox has room and fewer than
// max_unacked_records are unacknowledged; after a reconnect every spool
// rewinds to its acked seq and unacknowledged end statuses go out again.
//
// The code is split by idea (agent/executor_internal.h lists the files):
// executor.cc (the thread, Tick, accepting and ending children),
// assignment_validation.cc, executor_launch.cc, executor_records.cc and
// executor_kill.cc.
#ifndef CMAX_AGENT_EXECUTOR_H_
#define CMAX_AGENT_EXECUTOR_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <variant>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "agent/agent_clock.h"
#include "agent/outbox.h"
#include "agent/rendezvous_relay.h"
#include "agent/spool.h"
#include "agent/task_store.h"
#include "cmax/v1/service.pb.h"
#include "common/subprocess.h"

namespace cmax::agent {

struct ExecutorOptions {
  std::string work_dir;
  std::string bench_dir;  // where cmax-bench / cmax-bench-cuda live
  std::string root;       // --root for suites that take it; empty: none
  std::string node_name;
  int64_t clock_offset_ns = 0;   // --test-clock-offset-ms
  int64_t kill_grace_ms = 5000;  // SIGTERM → SIGKILL
  size_t max_batch_records = 500;
  size_t max_batch_bytes = 1 << 20;
  int64_t max_unacked_records = 20000;  // per child
  size_t max_inbox = 100000;            // events waiting for the executor
  size_t max_remembered_done = 10000;   // finished keys kept for idempotency
  // Every kill the agent makes is noted here ("<unix_ns> <pid>" lines) so the
  // health suite can tell Xid 43/45 caused by cmax's own kills from real
  // faults. Empty: not noted. main.cc sets /run/cmax/kills.
  std::string kills_file;
  // Passed to every suite as CMAX_ALLOW_READ and CMAX_STORAGE_ROOTS (comma
  // separated; the first storage root is also CMAX_STORAGE_DIR), after the
  // plan's environment, which may never set them (ValidateSuiteEnv).
  std::vector<std::string> allow_read;
  std::vector<std::string> storage_roots;
  // The addresses given with --advertise, passed to every suite as
  // CMAX_ADVERTISE (comma separated, after the plan's environment): group
  // suites (connectivity, gloo collectives) listen and publish only these,
  // so trial agents on one machine talk over loopback. Empty: not set, and
  // the suites use the node's interface addresses.
  std::vector<std::string> advertise;
};

// Checks an assignment the way the agent must before it spawns anything:
// task id syntax, suite in the catalog and its binary in `bench_dir`, args,
// env, ranks, and for launcher mpirun the peers and an installed mpirun.
// OK, or with the reason:
//   NOT_FOUND: the suite's binary (or mpirun) is missing on this node;
//   FAILED_PRECONDITION: the suite's declaration refuses the arguments;
//   INVALID_ARGUMENT: anything else (task id, unknown suite, env, ranks).
// The first two mean the suite could not run here (IsCouldNotRun): the task
// ends TASK_FAILED with exit code 2 and "could not run: <reason>", like a
// suite that exits 2. The last is "rejected: <reason>" with exit code -1.
absl::Status ValidateAssignment(const v1::TaskAssignment& assignment,
                                const std::string& bench_dir);
// True for the ValidateAssignment results that mean "could not run" (above).
bool IsCouldNotRun(const absl::Status& status);

// The record the agent writes as the first line of a rank's spool when its
// task had a start instant (TaskAssignment.start_at_agent_ns, barrier scope),
// just before spawning the suite: a Sample "cmax_task_start" of `suite` whose
// value is the lag in seconds (started - scheduled, both in the node's clock),
// labels scheduled_unix_ns, started_unix_ns and clock=node, and
// time_unix_ns = started.
v1::Record TaskStartRecord(const std::string& suite, int64_t scheduled_unix_ns,
                           int64_t started_unix_ns);

// The mpirun command line for a launcher-mpirun group task (see
// docs/mpirun.md): mpirun --allow-run-as-root --oversubscribe -np W
// --host A:R,B:R [allow-listed options] -x CMAX_RENDEZVOUS
// -x CMAX_RENDEZVOUS_SECRET -x CMAX_GROUP <bench-dir>/<binary> <suite>
// <args> --jsonl. REQUIRES: ValidateAssignment(a) is OK.
absl::StatusOr<std::vector<std::string>> MpirunArgv(const v1::TaskAssignment& a,
                                                    const std::string& mpirun,
                                                    const std::string& bench_dir);

// What the agent's /metrics shows of its children (Executor::Stats).
struct ExecutorStats {
  int running = 0;              // children started and not yet ended
  int held = 0;                 // children held: running, or ended and not yet acknowledged
  int64_t unacked_records = 0;  // records read from the spools, not yet acknowledged
  int64_t spool_bytes = 0;      // bytes of every held child's spool file
  std::map<std::string, int64_t> last_end_unix_ns;  // by suite, since the agent started
};

class Executor {
 public:
  // `outbox` must outlive the executor; so must `rendezvous` when given
  // (group tasks then get CMAX_RENDEZVOUS; without it they run without).
  Executor(ExecutorOptions options, Outbox* outbox,
           RendezvousEndpoints* rendezvous = nullptr);
  ~Executor();  // Stop()
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Restart scan of <work-dir>/tasks (see TaskStore::ScanAtStartup): every
  // directory becomes a finished child whose records are resent from seq 0,
  // then its status. REQUIRES: called before Start().
  absl::Status LoadStoredTasks();
  // Starts the executor thread.
  void Start();
  // Stops every child (SIGTERM to its group, SIGKILL after the grace
  // period), then the thread. Children's directories stay without
  // status.json (the next start marks them failed). Idempotent.
  void Stop();

  // Thread-safe event posts. They return at once unless max_inbox events
  // are already waiting: then they block until the executor has taken them
  // (backpressure on the connection's reader, so TCP flow control holds the
  // coordinator back); a coordinator message is never dropped.
  void Assign(v1::TaskAssignment assignment);
  void Cancel(v1::CancelTask cancel);
  void HandleAck(v1::Ack ack);
  void HandleStatusAck(v1::StatusAck ack);
  // A new stream (generation) is up and Hello was sent on it.
  void OnConnected(uint64_t generation);

  // Every child the agent holds (running or finished and unacknowledged),
  // for Hello. Thread-safe.
  std::vector<v1::HeldTask> HeldTasks() const;
  // Children spawned so far (tests). Thread-safe.
  int spawned_count() const;
  // For /metrics; refreshed by the executor thread about twice a second.
  // Thread-safe.
  ExecutorStats Stats() const;

 private:
  enum class Phase { kWaiting, kRunning, kDone };
  struct Task;
  struct ConnectedEvent {
    uint64_t generation;
  };
  using Event = std::variant<v1::TaskAssignment, v1::CancelTask, v1::Ack, v1::StatusAck,
                             ConnectedEvent>;

  void Post(Event event);
  void Loop();
  void Handle(Event& event);
  void HandleAssign(const v1::TaskAssignment& assignment);
  void HandleCancelEvent(const v1::CancelTask& cancel);
  void HandleAckEvent(const v1::Ack& ack);
  void HandleStatusAckEvent(const v1::StatusAck& ack);
  void HandleConnected(uint64_t generation);
  // One pass over every child; true when it did work and another pass
  // should follow at once.
  bool Tick();
  void StartChild(Task& task);
  // Appends "<unix_ns> <pid>" to options_.kills_file (see ExecutorOptions).
  void NoteKill(pid_t pid);
  // Starts stopping a running child: notes the kill, SIGTERM to its process
  // group, SIGKILL due after kill_grace_ms.
  void BeginKill(Task& task, int64_t now_mono_ns);
  // A running child past its timeout starts being stopped; one still alive
  // when its SIGKILL is due gets it.
  void EnforceDeadline(Task& task, int64_t now_mono_ns);
  void OnExit(Task& task, const ExitInfo& info);
  // Ends a child that never ran or ran and ended: writes status.json when
  // it has a directory, queues the end status.
  void Finish(Task& task, v1::TaskStatus status);
  bool PumpRecords(Task& task);
  void MaybeSendEnd(Task& task);
  bool MaybeForget(Task& task);
  void SendStatus(const v1::TaskStatus& status);
  void KillAll();
  // Remembers a delivered child so a repeated assignment never runs it again,
  // also across agent restarts: keys are appended to <work-dir>/finished
  // (LoadStoredTasks reads them back; the file is compacted to the last
  // max_remembered_done keys).
  void RememberDone(const TaskKey& key);
  void LoadDoneKeys();
  void RefreshHeld();
  void RefreshStats();

  // Opens the rendezvous of the child's group task once per (task, attempt)
  // and sets the child's CMAX_RENDEZVOUS*; non-OK: the child cannot start.
  absl::Status PrepareRendezvous(const Task& task, std::map<std::string, std::string>* env);
  // Closes rendezvous endpoints whose group has no waiting or running child.
  void CloseIdleRendezvous();

  const ExecutorOptions options_;
  const AgentClock clock_;  // options_.clock_offset_ns
  Outbox* const outbox_;
  RendezvousEndpoints* const rendezvous_;
  // Executor thread only: open rendezvous endpoints by (task id, attempt).
  std::map<std::pair<std::string, int32_t>, RelayEndpoint> endpoints_;
  TaskStore store_;

  mutable absl::Mutex mu_;
  std::deque<Event> inbox_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<v1::HeldTask> held_ ABSL_GUARDED_BY(mu_);
  int spawned_ ABSL_GUARDED_BY(mu_) = 0;
  ExecutorStats stats_ ABSL_GUARDED_BY(mu_);
  bool dropped_warned_ ABSL_GUARDED_BY(mu_) = false;

  std::thread thread_;
  bool started_ = false;

  // Executor thread only (and LoadStoredTasks before Start).
  std::map<TaskKey, std::unique_ptr<Task>> tasks_;
  std::set<TaskKey> done_keys_;
  std::deque<TaskKey> done_order_;
  size_t done_file_lines_ = 0;
  uint64_t generation_ = 0;
  bool held_dirty_ = true;
  int64_t stats_mono_ns_ = 0;
  std::map<std::string, int64_t> last_end_unix_ns_;
};

}  // namespace cmax::agent

#endif  // CMAX_AGENT_EXECUTOR_H_
