// Stopping children and saying why they ended: a timeout or a cancel sends
// SIGTERM to the child's process group and SIGKILL after the grace period;
// every such kill is noted in the kill log (ExecutorOptions::kills_file,
// "<unix_ns> <pid>" in the real clock, which the health suite reads to tell
// cmax's own kills from real Xid faults); what a suite left running in its
// process group after it exited is killed and counted; the end status says
// how the child ended (completed, could not run, crashed, timed out,
// cancelled); at shutdown every running child is stopped.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "agent/executor.h"
#include "agent/executor_internal.h"
#include "common/logging.h"
#include "common/subprocess.h"
#include "common/time_util.h"

namespace cmax::agent {
namespace {

std::shared_ptr<spdlog::logger> Log() { return GetLogger("agent"); }

// The last non-empty line of `text`, at most 300 characters.
std::string LastLine(const std::string& text) {
  std::vector<std::string> lines = absl::StrSplit(text, '\n', absl::SkipWhitespace());
  if (lines.empty()) return "";
  std::string last(absl::StripAsciiWhitespace(lines.back()));
  if (last.size() > 300) last = last.substr(0, 300) + "...";
  return last;
}

// Processes still in process group `pgid` (the suite's group: the suite made
// itself its leader, see Subprocess), from /proc/<pid>/stat field 5 (pgrp;
// proc(5)). Zombies count too.
std::vector<pid_t> GroupMembers(pid_t pgid) {
  std::vector<pid_t> out;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    pid_t pid = 0;
    if (!absl::SimpleAtoi(name, &pid) || pid <= 0) continue;
    std::ifstream in(entry.path() / "stat");
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // "pid (comm) state ppid pgrp ..."; comm may hold spaces and ')'.
    size_t close = stat.rfind(')');
    if (close == std::string::npos) continue;
    std::vector<std::string> f =
        absl::StrSplit(stat.substr(close + 1), ' ', absl::SkipWhitespace());
    pid_t pgrp = 0;
    if (f.size() > 2 && absl::SimpleAtoi(f[2], &pgrp) && pgrp == pgid) out.push_back(pid);
  }
  return out;
}

// SIGKILLs whatever is left of the suite's process group after the suite
// itself exited, waits (up to 2 s) until none of them runs any more, and
// returns how many there were.
int KillLeftovers(pid_t pgid) {
  std::vector<pid_t> members = GroupMembers(pgid);
  if (members.empty()) return 0;
  kill(-pgid, SIGKILL);
  const int64_t until = MonotonicNs() + 2 * kNsPerS;
  while (MonotonicNs() < until) {
    bool running = false;
    for (pid_t pid : GroupMembers(pgid)) {
      std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
      std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      size_t close = stat.rfind(')');
      if (close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z') {
        running = true;
      }
    }
    if (!running) break;
    usleep(5000);
  }
  return static_cast<int>(members.size());
}

}  // namespace

void Executor::NoteKill(pid_t pid) {
  if (options_.kills_file.empty()) return;
  std::string dir = options_.kills_file.substr(0, options_.kills_file.rfind('/'));
  if (!dir.empty()) mkdir(dir.c_str(), 0755);
  if (FILE* f = std::fopen(options_.kills_file.c_str(), "a")) {
    std::fprintf(f, "%lld %d\n", static_cast<long long>(NowUnixNs()), static_cast<int>(pid));
    std::fclose(f);
  }
}

void Executor::BeginKill(Task& t, int64_t now_mono) {
  t.kill_started = true;
  NoteKill(t.proc->pid());
  t.proc->SignalGroup(SIGTERM);
  t.kill_at_mono_ns = now_mono + options_.kill_grace_ms * kNsPerMs;
}

void Executor::EnforceDeadline(Task& t, int64_t now_mono) {
  if (t.deadline_mono_ns > 0 && now_mono >= t.deadline_mono_ns && !t.kill_started) {
    Log()->warn("task {}: timeout of {} s reached; stopping it", t.key.DirName(),
                t.timeout_s);
    t.timed_out = true;
    BeginKill(t, now_mono);
  }
  if (t.kill_at_mono_ns > 0 && now_mono >= t.kill_at_mono_ns) {
    Log()->warn("task {}: still alive {} ms after SIGTERM; SIGKILL", t.key.DirName(),
                options_.kill_grace_ms);
    t.proc->SignalGroup(SIGKILL);
    t.kill_at_mono_ns = 0;
  }
}

void Executor::OnExit(Task& t, const ExitInfo& info) {
  // Whatever the suite left running in its process group is stopped now,
  // before the spool is counted: records written after this instant would
  // lie beyond record_count and be deleted with the directory unseen.
  const int leftovers = KillLeftovers(t.proc->pid());
  if (leftovers > 0) {
    Log()->warn("task {}: the suite exited and left {} processes in its group; killed them",
                t.key.DirName(), leftovers);
  }
  v1::TaskStatus s;
  s.set_exit_code(info.exited ? info.code : -1);
  s.set_signal(info.exited ? 0 : info.signal);
  s.set_stderr_tail(TailOfFile(store_.StderrPath(t.key), kStderrTailBytes));
  if (t.timed_out) {
    s.set_state(v1::TASK_TIMED_OUT);
    s.set_message(absl::StrCat("killed after ", t.timeout_s, " s timeout"));
  } else if (t.cancelled) {
    s.set_state(v1::TASK_CANCELLED);
    s.set_message(
        absl::StrCat("cancelled", t.cancel_reason.empty() ? "" : ": ", t.cancel_reason));
  } else if (info.exited && (info.code == 0 || info.code == 1)) {
    s.set_state(v1::TASK_COMPLETED);
    s.set_message(info.code == 0 ? "passed" : "ran and found failures");
  } else if (info.exited && info.code == 2) {
    s.set_state(v1::TASK_FAILED);
    std::string last = LastLine(s.stderr_tail());
    s.set_message(absl::StrCat("could not run", last.empty() ? "" : ": ", last));
  } else {
    s.set_state(v1::TASK_FAILED);
    s.set_message(absl::StrCat("crashed: ", info.Describe()));
  }
  if (leftovers > 0) {
    s.set_message(absl::StrCat(s.message(), "; killed ", leftovers, " leftover process",
                               leftovers == 1 ? "" : "es",
                               " of the suite's process group after it exited (their later "
                               "output is not in the records)"));
  }
  Log()->info("task {}: {} ({})", t.key.DirName(), v1::TaskState_Name(s.state()),
              s.message());
  t.proc.reset();
  Finish(t, s);
}

void Executor::HandleCancelEvent(const v1::CancelTask& c) {
  bool found = false;
  const int64_t now_mono = MonotonicNs();
  for (auto& [key, task] : tasks_) {
    if (key.task_id != c.task_id() || key.attempt != c.attempt()) continue;
    found = true;
    Task& t = *task;
    if (t.phase == Phase::kDone) continue;
    t.cancelled = true;
    t.cancel_reason = c.reason();
    if (t.phase == Phase::kWaiting) {
      v1::TaskStatus s;
      s.set_state(v1::TASK_CANCELLED);
      s.set_exit_code(-1);
      s.set_message(absl::StrCat("cancelled before it started",
                                 c.reason().empty() ? "" : ": ", c.reason()));
      Finish(t, s);
    } else if (!t.kill_started) {
      Log()->info("task {}: cancelling ({})", key.DirName(), c.reason());
      BeginKill(t, now_mono);
    }
  }
  if (!found) {
    Log()->warn("cancel for unknown task {} attempt {}", c.task_id(), c.attempt());
  }
}

void Executor::KillAll() {
  std::vector<Task*> running;
  for (auto& [key, task] : tasks_) {
    if (task->phase == Phase::kRunning) {
      Log()->info("task {}: stopping (agent shutting down)", key.DirName());
      NoteKill(task->proc->pid());
      task->proc->SignalGroup(SIGTERM);
      running.push_back(task.get());
    }
  }
  const int64_t kill_at = MonotonicNs() + options_.kill_grace_ms * kNsPerMs;
  while (!running.empty()) {
    ExitInfo info;
    running.erase(std::remove_if(running.begin(), running.end(),
                                 [&](Task* t) { return t->proc->Poll(&info); }),
                  running.end());
    if (running.empty()) break;
    if (MonotonicNs() >= kill_at) {
      for (Task* t : running) {
        t->proc->SignalGroup(SIGKILL);
        t->proc->Wait();
      }
      break;
    }
    usleep(20000);
  }
}

}  // namespace cmax::agent
