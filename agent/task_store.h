// The agent's task directories: `<work-dir>/tasks/<task_id>.a<attempt>.r<rank>/`
// holding assignment.json, records.jsonl (the child's stdout: the spool),
// stderr.log and, once the task ended, status.json.
//
// A directory without status.json at start-up belonged to a child that died
// with the previous agent: ScanAtStartup marks it failed.
//
// Thread: stateless apart from the path; the executor thread calls it (the
// start-up scan runs before the executor starts).
#ifndef CMAX_AGENT_TASK_STORE_H_
#define CMAX_AGENT_TASK_STORE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cmax/v1/service.pb.h"

namespace cmax::agent {

// Identifies one child: a rank of a (task, attempt).
struct TaskKey {
  std::string task_id;
  int32_t attempt = 0;
  int32_t rank = 0;

  // "<task_id>.a<attempt>.r<rank>": the directory name.
  std::string DirName() const;
  friend bool operator<(const TaskKey& a, const TaskKey& b) {
    if (a.task_id != b.task_id) return a.task_id < b.task_id;
    if (a.attempt != b.attempt) return a.attempt < b.attempt;
    return a.rank < b.rank;
  }
  friend bool operator==(const TaskKey& a, const TaskKey& b) {
    return a.task_id == b.task_id && a.attempt == b.attempt && a.rank == b.rank;
  }
};

// Parses a directory name; false when it is not one of ours.
bool ParseTaskDirName(const std::string& name, TaskKey* key);

// A task directory found at start-up, with its (possibly just written) status.
struct StoredTask {
  TaskKey key;
  std::string dir;
  v1::TaskStatus status;
};

class TaskStore {
 public:
  // `work_dir` is the agent's --work-dir; tasks live in work_dir/tasks.
  explicit TaskStore(std::string work_dir);

  const std::string& tasks_root() const { return tasks_root_; }
  std::string DirFor(const TaskKey& key) const;
  std::string SpoolPath(const TaskKey& key) const {
    return DirFor(key) + "/records.jsonl";
  }
  std::string StderrPath(const TaskKey& key) const { return DirFor(key) + "/stderr.log"; }

  bool Exists(const TaskKey& key) const;

  // Creates the task directory (and tasks/ above it) and writes
  // assignment.json. Non-OK with a message that names the path and the
  // reason, e.g. "work dir /x/tasks/t.a0.r0: No space left on device";
  // ALREADY_EXISTS when the directory exists.
  absl::Status Create(const TaskKey& key, const v1::TaskAssignment& assignment) const;

  // Writes status.json atomically (temporary file + rename).
  absl::Status WriteStatus(const TaskKey& key, const v1::TaskStatus& status) const;
  // Reads status.json: NOT_FOUND when absent, INVALID_ARGUMENT when unparsable.
  absl::StatusOr<v1::TaskStatus> ReadStatus(const TaskKey& key) const;
  absl::StatusOr<v1::TaskAssignment> ReadAssignment(const TaskKey& key) const;

  // Removes the task directory and everything in it.
  absl::Status Remove(const TaskKey& key) const;

  // Lists every task directory. One without a readable status.json gets a
  // TASK_FAILED status "agent restarted; the task process died with it"
  // (record_count = lines in its spool, stderr_tail from stderr.log), which
  // is written to status.json. `now_unix_ns` stamps ended_unix_ns. Entries
  // that are not task directories are skipped. A missing tasks/ is empty.
  absl::StatusOr<std::vector<StoredTask>> ScanAtStartup(int64_t now_unix_ns) const;

 private:
  std::string work_dir_;
  std::string tasks_root_;
};

// Bytes of stderr kept in a TaskStatus.
inline constexpr size_t kStderrTailBytes = 4096;

}  // namespace cmax::agent

#endif  // CMAX_AGENT_TASK_STORE_H_
