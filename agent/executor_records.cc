// Record delivery: each child's spool is read (SpoolTailer) into RecordBatch
// messages while the outbox has room and the unacked window allows; a
// finished child's end status goes out only after its last record; acks
// advance (or skip) the tailer, a reconnect rewinds every spool to its acked
// seq and resends unacknowledged end statuses; a child whose records and
// status are acknowledged is removed and its key remembered in
// <work-dir>/finished so a repeated assignment never runs it again.
#include <algorithm>
#include <deque>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "agent/executor.h"
#include "agent/executor_internal.h"
#include "common/atomic_file.h"
#include "common/logging.h"
#include "common/time_util.h"

namespace cmax::agent {
namespace {

std::shared_ptr<spdlog::logger> Log() { return GetLogger("agent"); }

}  // namespace

void Executor::HandleAckEvent(const v1::Ack& ack) {
  auto it = tasks_.find(TaskKey{ack.task_id(), ack.attempt(), ack.rank()});
  if (it == tasks_.end()) {
    Log()->warn("ack for unknown task {}.a{}.r{}", ack.task_id(), ack.attempt(),
                ack.rank());
    return;
  }
  Task& t = *it->second;
  if (ack.next_seq() <= t.acked) return;
  t.acked = ack.next_seq();
  // The coordinator may already hold more than this agent has sent (records
  // from before a restart): skip ahead instead of resending them.
  if (t.tailer && t.acked > t.tailer->next_seq()) {
    if (absl::Status s = t.tailer->Seek(t.acked); !s.ok()) {
      Log()->warn("task {}: {}", t.key.DirName(), std::string(s.message()));
    }
  }
}

void Executor::HandleStatusAckEvent(const v1::StatusAck& ack) {
  auto it = tasks_.find(TaskKey{ack.task_id(), ack.attempt(), ack.rank()});
  if (it == tasks_.end()) {
    Log()->warn("status ack for unknown task {}.a{}.r{}", ack.task_id(), ack.attempt(),
                ack.rank());
    return;
  }
  // StatusAck carries no state: only an end status that went out on this
  // stream can be what it acknowledges (a late ack of TASK_RUNNING must not
  // count as the end status being durable).
  if (it->second->phase != Phase::kDone || !it->second->status_sent) return;
  it->second->status_acked = true;
}

void Executor::HandleConnected(uint64_t generation) {
  generation_ = generation;
  for (auto& [key, task] : tasks_) {
    Task& t = *task;
    if (t.tailer) {
      if (absl::Status s = t.tailer->Seek(t.acked); !s.ok()) {
        Log()->warn("task {}: {}", key.DirName(), std::string(s.message()));
      }
    }
    if (!t.status_acked) t.status_sent = false;
  }
}

void Executor::SendStatus(const v1::TaskStatus& status) {
  v1::AgentMessage m;
  *m.mutable_status() = status;
  outbox_->Send(generation_, std::move(m));
}

bool Executor::PumpRecords(Task& t) {
  if (!t.tailer || generation_ == 0) return false;
  const bool final = t.phase == Phase::kDone;
  if (final && t.tailer->next_seq() >= t.record_count) return false;
  const int64_t in_flight = t.tailer->next_seq() - t.acked;
  if (in_flight >= options_.max_unacked_records) return false;
  if (!outbox_->HasRoom(generation_)) return false;
  size_t max_records = std::min<int64_t>(options_.max_batch_records,
                                         options_.max_unacked_records - in_flight);
  if (final) {
    max_records = std::min<int64_t>(max_records, t.record_count - t.tailer->next_seq());
  }
  absl::StatusOr<std::vector<SpoolEntry>> entries =
      t.tailer->Read(max_records, options_.max_batch_bytes, final);
  if (!entries.ok()) {
    const int64_t now = MonotonicNs();
    if (now >= t.next_error_log_mono_ns) {
      Log()->error("task {}: {}", t.key.DirName(),
                   std::string(entries.status().message()));
      t.next_error_log_mono_ns = now + 10 * kNsPerS;
    }
    return false;
  }
  if (entries->empty()) return false;
  v1::AgentMessage m;
  v1::RecordBatch* batch = m.mutable_records();
  for (SpoolEntry& e : *entries) {
    v1::SpooledRecord* r = batch->add_records();
    r->set_task_id(t.key.task_id);
    r->set_attempt(t.key.attempt);
    r->set_rank(t.key.rank);
    r->set_seq(e.seq);
    *r->mutable_record() = std::move(e.record);
  }
  outbox_->Send(generation_, std::move(m));
  return true;
}

void Executor::MaybeSendEnd(Task& t) {
  if (t.phase != Phase::kDone || t.status_sent || t.status_acked || generation_ == 0)
    return;
  if (t.tailer && t.tailer->next_seq() < t.record_count) return;  // records first
  v1::AgentMessage m;
  *m.mutable_status() = t.end_status;
  if (outbox_->Send(generation_, std::move(m))) t.status_sent = true;
}

bool Executor::MaybeForget(Task& t) {
  if (t.phase != Phase::kDone || !t.status_acked) return false;
  if (t.tailer && t.acked < t.record_count) return false;
  if (t.has_dir) {
    if (absl::Status s = store_.Remove(t.key); !s.ok()) {
      Log()->warn("task {}: {}", t.key.DirName(), std::string(s.message()));
    }
  }
  Log()->info("task {}: delivered; forgotten", t.key.DirName());
  RememberDone(t.key);
  return true;
}

void Executor::RememberDone(const TaskKey& key) {
  if (!done_keys_.insert(key).second) return;
  done_order_.push_back(key);
  while (done_order_.size() > options_.max_remembered_done) {
    done_keys_.erase(done_order_.front());
    done_order_.pop_front();
  }
  const std::string path = options_.work_dir + "/finished";
  if (done_file_lines_ >= 2 * options_.max_remembered_done) {
    // Compact: write the remembered keys to a new file, then rename it over.
    std::string keys;
    for (const TaskKey& k : done_order_) {
      absl::StrAppend(&keys, k.task_id, " ", k.attempt, " ", k.rank, "\n");
    }
    absl::Status written = WriteFileAtomically(path, keys);
    if (written.ok()) {
      done_file_lines_ = done_order_.size();
      return;
    }
    Log()->warn("cannot compact {}", std::string(written.message()));
  }
  std::ofstream out(path, std::ios::app);
  out << key.task_id << ' ' << key.attempt << ' ' << key.rank << '\n';
  out.flush();
  if (!out) {
    Log()->warn("cannot note task {} in {}: a repeated assignment after a restart would run "
                "it again",
                key.DirName(), path);
  }
  ++done_file_lines_;
}

void Executor::LoadDoneKeys() {
  std::ifstream in(options_.work_dir + "/finished");
  std::string line;
  std::deque<TaskKey> keys;
  while (std::getline(in, line)) {
    ++done_file_lines_;
    std::vector<std::string> f = absl::StrSplit(line, ' ');
    TaskKey k;
    if (f.size() != 3 || !ValidTaskId(f[0]) || !absl::SimpleAtoi(f[1], &k.attempt) ||
        !absl::SimpleAtoi(f[2], &k.rank)) {
      continue;
    }
    k.task_id = f[0];
    keys.push_back(std::move(k));
    if (keys.size() > options_.max_remembered_done) keys.pop_front();
  }
  for (TaskKey& k : keys) {
    if (done_keys_.insert(k).second) done_order_.push_back(std::move(k));
  }
}

}  // namespace cmax::agent
