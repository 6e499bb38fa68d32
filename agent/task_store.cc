#include "agent/task_store.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "agent/spool.h"
#include "common/atomic_file.h"
#include "common/record_io.h"
#include "common/status_macros.h"
#include "common/subprocess.h"
#include "google/protobuf/util/json_util.h"

namespace cmax::agent {
namespace {

namespace fs = std::filesystem;

// FileError's code and text, prefixed "work dir ".
absl::Status WorkDirError(const std::string& path, int err) {
  absl::Status s = FileError(path, err);
  return absl::Status(s.code(), absl::StrCat("work dir ", s.message()));
}

absl::Status MakeDir(const std::string& path) {
  if (mkdir(path.c_str(), 0750) == 0) return absl::OkStatus();
  return WorkDirError(path, errno);
}

// cmax::WriteFileAtomically, its message prefixed as the other work dir errors.
absl::Status WriteFileAtomically(const std::string& path, const std::string& data) {
  absl::Status s = cmax::WriteFileAtomically(path, data);
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat("work dir ", s.message()));
}

absl::StatusOr<std::string> ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (errno == ENOENT) return absl::NotFoundError(absl::StrCat(path, ": not found"));
    return absl::InternalError(absl::StrCat(path, ": ", strerror(errno)));
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

template <typename Message>
absl::StatusOr<Message> ReadJsonMessage(const std::string& path) {
  CMAX_ASSIGN_OR_RETURN(std::string text, ReadWholeFile(path));
  Message message;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  auto status = google::protobuf::util::JsonStringToMessage(text, &message, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": ", std::string(status.message())));
  }
  return message;
}

}  // namespace

std::string TaskKey::DirName() const {
  return absl::StrCat(task_id, ".a", attempt, ".r", rank);
}

bool ParseTaskDirName(const std::string& name, TaskKey* key) {
  size_t r = name.rfind(".r");
  if (r == std::string::npos || r == 0) return false;
  size_t a = name.rfind(".a", r - 1);
  if (a == std::string::npos || a == 0) return false;
  int32_t attempt = 0, rank = 0;
  std::string attempt_text = name.substr(a + 2, r - a - 2);
  std::string rank_text = name.substr(r + 2);
  if (attempt_text.empty() || rank_text.empty()) return false;
  for (char ch : attempt_text + rank_text) {
    if (ch < '0' || ch > '9') return false;
  }
  if (!absl::SimpleAtoi(attempt_text, &attempt) || !absl::SimpleAtoi(rank_text, &rank)) {
    return false;
  }
  key->task_id = name.substr(0, a);
  key->attempt = attempt;
  key->rank = rank;
  return true;
}

TaskStore::TaskStore(std::string work_dir)
    : work_dir_(std::move(work_dir)), tasks_root_(work_dir_ + "/tasks") {}

std::string TaskStore::DirFor(const TaskKey& key) const {
  return absl::StrCat(tasks_root_, "/", key.DirName());
}

bool TaskStore::Exists(const TaskKey& key) const {
  struct stat st;
  return stat(DirFor(key).c_str(), &st) == 0;
}

absl::Status TaskStore::Create(const TaskKey& key,
                               const v1::TaskAssignment& assignment) const {
  struct stat st;
  if (stat(tasks_root_.c_str(), &st) != 0) {
    // Create the work dir and tasks/ (one level each; the work dir's parent
    // must exist).
    if (stat(work_dir_.c_str(), &st) != 0) {
      absl::Status made = MakeDir(work_dir_);
      if (!made.ok() && !absl::IsAlreadyExists(made)) return made;
    }
    absl::Status made = MakeDir(tasks_root_);
    if (!made.ok() && !absl::IsAlreadyExists(made)) return made;
  }
  std::string dir = DirFor(key);
  CMAX_RETURN_IF_ERROR(MakeDir(dir));
  absl::Status written = WriteFileAtomically(dir + "/assignment.json",
                                             MessageToJsonLine(assignment, true) + "\n");
  if (!written.ok()) {
    std::error_code ec;
    fs::remove_all(dir, ec);
    return written;
  }
  return absl::OkStatus();
}

absl::Status TaskStore::WriteStatus(const TaskKey& key,
                                    const v1::TaskStatus& status) const {
  return WriteFileAtomically(DirFor(key) + "/status.json",
                             MessageToJsonLine(status, true) + "\n");
}

absl::StatusOr<v1::TaskStatus> TaskStore::ReadStatus(const TaskKey& key) const {
  return ReadJsonMessage<v1::TaskStatus>(DirFor(key) + "/status.json");
}

absl::StatusOr<v1::TaskAssignment> TaskStore::ReadAssignment(const TaskKey& key) const {
  return ReadJsonMessage<v1::TaskAssignment>(DirFor(key) + "/assignment.json");
}

absl::Status TaskStore::Remove(const TaskKey& key) const {
  std::error_code ec;
  fs::remove_all(DirFor(key), ec);
  if (ec)
    return absl::InternalError(absl::StrCat("remove ", DirFor(key), ": ", ec.message()));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<StoredTask>> TaskStore::ScanAtStartup(
    int64_t now_unix_ns) const {
  std::vector<StoredTask> out;
  std::error_code ec;
  if (!fs::exists(tasks_root_, ec)) return out;
  fs::directory_iterator it(tasks_root_, ec);
  if (ec)
    return absl::InternalError(absl::StrCat("list ", tasks_root_, ": ", ec.message()));
  std::vector<std::string> names;
  for (const fs::directory_entry& entry : it) {
    if (entry.is_directory(ec)) names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  for (const std::string& name : names) {
    StoredTask task;
    if (!ParseTaskDirName(name, &task.key)) continue;
    task.dir = DirFor(task.key);
    absl::StatusOr<v1::TaskStatus> status = ReadStatus(task.key);
    if (status.ok()) {
      task.status = *std::move(status);
      // The directory name is the truth for the key.
      task.status.set_task_id(task.key.task_id);
      task.status.set_attempt(task.key.attempt);
      task.status.set_rank(task.key.rank);
    } else {
      v1::TaskStatus& s = task.status;
      s.set_task_id(task.key.task_id);
      s.set_attempt(task.key.attempt);
      s.set_rank(task.key.rank);
      s.set_state(v1::TASK_FAILED);
      s.set_exit_code(-1);
      s.set_message("agent restarted; the task process died with it");
      s.set_stderr_tail(TailOfFile(StderrPath(task.key), kStderrTailBytes));
      absl::StatusOr<int64_t> lines = CountSpoolLines(SpoolPath(task.key));
      s.set_record_count(lines.ok() ? *lines : 0);
      s.set_ended_unix_ns(now_unix_ns);
      // Best effort: if it cannot be written the scan repeats next start.
      (void)WriteStatus(task.key, s);
    }
    out.push_back(std::move(task));
  }
  return out;
}

}  // namespace cmax::agent
