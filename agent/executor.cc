// The executor thread (see executor.h for the state machine): the inbox of
// coordinator events and its backpressure, the loop, one Tick over every
// child, accepting an assignment into waiting children or a rejected end
// status (HandleAssign), ending a child (Finish), the restart scan, and the
// held list and stats that Hello and /metrics read. The other ideas have
// their own files (executor_internal.h lists them).
#include "agent/executor.h"

#include <sys/stat.h>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "agent/executor_internal.h"
#include "agent/plan_paths.h"
#include "common/logging.h"
#include "common/status_macros.h"
#include "common/suite_catalog.h"
#include "common/time_util.h"

namespace cmax::agent {
namespace {

std::shared_ptr<spdlog::logger> Log() { return GetLogger("agent"); }

}  // namespace

Executor::Executor(ExecutorOptions options, Outbox* outbox, RendezvousEndpoints* rendezvous)
    : options_(std::move(options)),
      clock_(options_.clock_offset_ns),
      outbox_(outbox),
      rendezvous_(rendezvous),
      store_(options_.work_dir) {}

Executor::~Executor() { Stop(); }

absl::Status Executor::LoadStoredTasks() {
  LoadDoneKeys();
  CMAX_ASSIGN_OR_RETURN(std::vector<StoredTask> stored,
                        store_.ScanAtStartup(clock_.NowNs()));
  for (StoredTask& s : stored) {
    auto task = std::make_unique<Task>();
    task->key = s.key;
    task->has_dir = true;
    task->phase = Phase::kDone;
    task->tailer = std::make_unique<SpoolTailer>(store_.SpoolPath(s.key));
    task->record_count = s.status.record_count();
    task->end_status = s.status;
    Log()->info("holding task {} from before the restart: {} records, {}",
                s.key.DirName(), task->record_count,
                v1::TaskState_Name(s.status.state()));
    tasks_[s.key] = std::move(task);
  }
  held_dirty_ = true;
  RefreshHeld();
  return absl::OkStatus();
}

void Executor::Start() {
  if (started_) return;
  started_ = true;
  thread_ = std::thread([this] { Loop(); });
}

void Executor::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void Executor::Post(Event event) {
  absl::MutexLock lock(&mu_);
  if (inbox_.size() >= options_.max_inbox && !stopping_) {
    if (!dropped_warned_) {
      Log()->warn("executor inbox full ({} events): holding the coordinator stream until it "
                  "drains",
                  inbox_.size());
      dropped_warned_ = true;
    }
    auto room = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
      return inbox_.size() < options_.max_inbox || stopping_;
    };
    mu_.Await(absl::Condition(&room));
  }
  // Stopping: the agent is going away; the coordinator resends what it does
  // not see acknowledged or held after the agent reconnects.
  if (stopping_) return;
  inbox_.push_back(std::move(event));
}

void Executor::Assign(v1::TaskAssignment assignment) { Post(std::move(assignment)); }
void Executor::Cancel(v1::CancelTask cancel) { Post(std::move(cancel)); }
void Executor::HandleAck(v1::Ack ack) { Post(std::move(ack)); }
void Executor::HandleStatusAck(v1::StatusAck ack) { Post(std::move(ack)); }
void Executor::OnConnected(uint64_t generation) { Post(ConnectedEvent{generation}); }

std::vector<v1::HeldTask> Executor::HeldTasks() const {
  absl::MutexLock lock(&mu_);
  return held_;
}

int Executor::spawned_count() const {
  absl::MutexLock lock(&mu_);
  return spawned_;
}

void Executor::Loop() {
  bool busy = false;
  for (;;) {
    std::deque<Event> events;
    {
      absl::MutexLock lock(&mu_);
      if (!busy && inbox_.empty() && !stopping_) {
        auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
          return !inbox_.empty() || stopping_;
        };
        mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Milliseconds(50));
      }
      if (stopping_) break;
      events.swap(inbox_);
      dropped_warned_ = false;
    }
    for (Event& e : events) Handle(e);
    busy = Tick();
    RefreshHeld();
    RefreshStats();
  }
  KillAll();
}

void Executor::Handle(Event& event) {
  if (auto* a = std::get_if<v1::TaskAssignment>(&event)) {
    HandleAssign(*a);
  } else if (auto* c = std::get_if<v1::CancelTask>(&event)) {
    HandleCancelEvent(*c);
  } else if (auto* ack = std::get_if<v1::Ack>(&event)) {
    HandleAckEvent(*ack);
  } else if (auto* sa = std::get_if<v1::StatusAck>(&event)) {
    HandleStatusAckEvent(*sa);
  } else if (auto* conn = std::get_if<ConnectedEvent>(&event)) {
    HandleConnected(conn->generation);
  }
}

void Executor::HandleAssign(const v1::TaskAssignment& a) {
  std::vector<v1::RankAssignment> ranks(a.ranks().begin(), a.ranks().end());
  // mpirun: one child (mpirun itself) reported as rank 0 of the group.
  if (a.launcher() == "mpirun") ranks.clear();
  if (ranks.empty()) ranks.emplace_back();  // rank 0 of 1
  absl::Status valid = ValidateAssignment(a, options_.bench_dir);
  // A plan path this agent does not allow is the plan's problem on this
  // node, not a fault: the suite could not run here (exit 2), as when its
  // binary or a tool is missing.
  bool path_refused = false;
  if (valid.ok()) {
    valid = ValidatePlanPaths(a, options_.allow_read, options_.storage_roots);
    path_refused = !valid.ok();
  }
  const SuiteInfo* suite = FindSuite(a.suite());
  const int64_t now_mono = MonotonicNs();
  int64_t start_mono = now_mono;
  if (a.start_at_agent_ns() > 0) {
    start_mono = now_mono + std::max<int64_t>(0, a.start_at_agent_ns() - clock_.NowNs());
  }
  for (const v1::RankAssignment& r : ranks) {
    TaskKey key{a.task_id(), a.attempt(), r.rank()};
    if (auto it = tasks_.find(key); it != tasks_.end()) {
      Task& t = *it->second;
      Log()->info("task {} assigned again: already {}", key.DirName(),
                  t.phase == Phase::kDone ? "finished" : "held");
      if (t.phase == Phase::kDone && !t.status_acked) t.status_sent = false;  // resend
      continue;
    }
    if (done_keys_.count(key)) {
      Log()->info("task {} assigned again: already finished and acknowledged",
                  key.DirName());
      continue;
    }
    auto task = std::make_unique<Task>();
    task->key = key;
    task->assignment = a;
    task->local_rank = r.local_rank();
    task->start_mono_ns = start_mono;
    Task& t = *task;
    tasks_[key] = std::move(task);
    held_dirty_ = true;
    v1::TaskStatus status;
    status.set_state(v1::TASK_FAILED);
    status.set_exit_code(-1);
    if (!valid.ok()) {
      Log()->warn("rejected task {}: {}", key.DirName(), std::string(valid.message()));
      if (path_refused || IsCouldNotRun(valid)) {
        // Same contract as a suite exiting 2 (DESIGN.md, "Suite exit codes").
        status.set_exit_code(kCouldNotRunExit);
        status.set_message(absl::StrCat("could not run: ", std::string(valid.message())));
      } else {
        status.set_message(absl::StrCat("rejected: ", std::string(valid.message())));
      }
      Finish(t, status);
      continue;
    }
    if (store_.Exists(key)) {
      // Not ours to reuse (left by someone else); never run twice in one dir.
      status.set_message(absl::StrCat("rejected: task directory ", store_.DirFor(key),
                                      " already exists"));
      Finish(t, status);
      continue;
    }
    if (absl::Status created = store_.Create(key, a); !created.ok()) {
      Log()->error("task {}: {}", key.DirName(), std::string(created.message()));
      status.set_message(std::string(std::string(created.message())));
      Finish(t, status);
      continue;
    }
    t.has_dir = true;
    t.tailer = std::make_unique<SpoolTailer>(store_.SpoolPath(key));
    t.timeout_s =
        a.timeout_seconds() > 0 ? a.timeout_seconds() : suite->default_timeout_s;
    Log()->info(
        "task {}: suite {} accepted{}", key.DirName(), a.suite(),
        start_mono > now_mono
            ? absl::StrCat(", starts in ", (start_mono - now_mono) / kNsPerMs, " ms")
            : "");
  }
}

void Executor::Finish(Task& t, v1::TaskStatus s) {
  s.set_task_id(t.key.task_id);
  s.set_attempt(t.key.attempt);
  s.set_rank(t.key.rank);
  s.set_started_unix_ns(t.started_unix_ns);
  s.set_ended_unix_ns(clock_.NowNs());
  last_end_unix_ns_[t.assignment.suite()] = s.ended_unix_ns();
  t.record_count = 0;
  if (t.has_dir) {
    absl::StatusOr<int64_t> lines = CountSpoolLines(store_.SpoolPath(t.key));
    if (lines.ok()) {
      t.record_count = *lines;
    } else {
      Log()->error("task {}: {}", t.key.DirName(), std::string(lines.status().message()));
      t.record_count = t.tailer ? t.tailer->next_seq() : 0;
    }
  }
  s.set_record_count(t.record_count);
  if (t.has_dir) {
    if (absl::Status w = store_.WriteStatus(t.key, s); !w.ok()) {
      Log()->error("task {}: status.json not written: {}", t.key.DirName(),
                   std::string(w.message()));
      s.set_message(
          absl::StrCat(s.message(), " (status.json not written: ", w.message(), ")"));
    }
  }
  t.end_status = std::move(s);
  t.phase = Phase::kDone;
  t.status_sent = false;
  held_dirty_ = true;
}

bool Executor::Tick() {
  bool busy = false;
  const int64_t now_mono = MonotonicNs();
  for (auto it = tasks_.begin(); it != tasks_.end();) {
    Task& t = *it->second;
    if (t.phase == Phase::kWaiting && now_mono >= t.start_mono_ns) StartChild(t);
    if (t.phase == Phase::kRunning) {
      ExitInfo info;
      if (t.proc->Poll(&info)) {
        OnExit(t, info);
      } else {
        EnforceDeadline(t, now_mono);
      }
    }
    if (PumpRecords(t)) busy = true;
    MaybeSendEnd(t);
    if (MaybeForget(t)) {
      it = tasks_.erase(it);
      held_dirty_ = true;
    } else {
      ++it;
    }
  }
  if (rendezvous_ != nullptr) CloseIdleRendezvous();
  return busy;
}

void Executor::RefreshHeld() {
  if (!held_dirty_) return;
  held_dirty_ = false;
  std::vector<v1::HeldTask> held;
  held.reserve(tasks_.size());
  for (const auto& [key, task] : tasks_) {
    v1::HeldTask h;
    h.set_task_id(key.task_id);
    h.set_attempt(key.attempt);
    h.set_rank(key.rank);
    h.set_running(task->phase != Phase::kDone);
    held.push_back(std::move(h));
  }
  absl::MutexLock lock(&mu_);
  held_ = std::move(held);
}

void Executor::RefreshStats() {
  const int64_t now = MonotonicNs();
  if (now - stats_mono_ns_ < 500'000'000) return;
  stats_mono_ns_ = now;
  ExecutorStats st;
  st.held = static_cast<int>(tasks_.size());
  for (const auto& [key, task] : tasks_) {
    if (task->phase == Phase::kRunning) ++st.running;
    if (task->tailer) {
      st.unacked_records += std::max<int64_t>(0, task->tailer->next_seq() - task->acked);
      struct stat sb;
      if (stat(task->tailer->path().c_str(), &sb) == 0) st.spool_bytes += sb.st_size;
    }
  }
  st.last_end_unix_ns = last_end_unix_ns_;
  absl::MutexLock lock(&mu_);
  stats_ = std::move(st);
}

ExecutorStats Executor::Stats() const {
  absl::MutexLock lock(&mu_);
  return stats_;
}

}  // namespace cmax::agent
