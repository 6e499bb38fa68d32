#include "common/subprocess.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/time_util.h"

extern char** environ;

namespace cmax {

std::string ExitInfo::Describe() const {
  if (exited) return absl::StrCat("exit ", code);
  const char* name = sigabbrev_np(signal);
  return absl::StrCat("signal ", signal, name ? absl::StrCat(" (SIG", name, ")") : "");
}

std::string FindExecutable(const std::string& name) {
  if (name.empty()) return "";
  if (name.find('/') != std::string::npos) {
    return access(name.c_str(), X_OK) == 0 ? name : "";
  }
  const char* path = std::getenv("PATH");
  std::string search = path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (absl::string_view dir : absl::StrSplit(search, ':', absl::SkipEmpty())) {
    std::string candidate = absl::StrCat(dir, "/", name);
    struct stat st;
    if (stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
  }
  return "";
}

namespace {

// Everything the child needs, prepared before fork (only async-signal-safe
// calls are made between fork and exec).
struct ChildPlan {
  std::string program;
  std::vector<std::string> argv_storage;
  std::vector<std::string> env_storage;
  std::vector<char*> argv;
  std::vector<char*> envp;
  pid_t parent = 0;
};

ChildPlan MakePlan(const std::string& program, const std::vector<std::string>& argv,
                   const std::map<std::string, std::string>& env, bool inherit_env) {
  ChildPlan plan;
  plan.program = program;
  plan.argv_storage = argv;
  std::map<std::string, std::string> merged;
  if (inherit_env) {
    for (char** e = environ; e && *e; ++e) {
      std::string kv = *e;
      size_t eq = kv.find('=');
      if (eq == std::string::npos) continue;
      merged[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
  }
  for (const auto& [k, v] : env) merged[k] = v;
  for (const auto& [k, v] : merged) plan.env_storage.push_back(absl::StrCat(k, "=", v));
  for (auto& a : plan.argv_storage) plan.argv.push_back(a.data());
  plan.argv.push_back(nullptr);
  for (auto& e : plan.env_storage) plan.envp.push_back(e.data());
  plan.envp.push_back(nullptr);
  plan.parent = getpid();
  return plan;
}

// In the child: own process group, die with the parent, then exec.
[[noreturn]] void ExecChild(const ChildPlan& plan, bool die_with_parent, const char* cwd) {
  setpgid(0, 0);
  if (die_with_parent) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != plan.parent) _exit(127);  // the parent died before prctl
  }
  // Restore default signal dispositions and an empty mask.
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  signal(SIGPIPE, SIG_DFL);
  if (cwd && *cwd && chdir(cwd) != 0) _exit(127);
  execve(plan.program.c_str(), plan.argv.data(), plan.envp.data());
  _exit(127);
}

int OpenOutput(const std::string& path, bool append) {
  if (path.empty()) return open("/dev/null", O_WRONLY | O_CLOEXEC);
  int flags = O_WRONLY | O_CREAT | O_CLOEXEC | (append ? O_APPEND : O_TRUNC);
  return open(path.c_str(), flags, 0640);
}

ExitInfo FromWaitStatus(int status) {
  ExitInfo info;
  if (WIFEXITED(status)) {
    info.exited = true;
    info.code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    info.exited = false;
    info.signal = WTERMSIG(status);
  }
  return info;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Subprocess>> Subprocess::Spawn(const SpawnOptions& options) {
  if (options.argv.empty()) return absl::InvalidArgumentError("empty argv");
  std::string program = FindExecutable(options.argv[0]);
  if (program.empty()) {
    return absl::NotFoundError(absl::StrCat("program not found: ", options.argv[0]));
  }
  ChildPlan plan = MakePlan(program, options.argv, options.env, options.inherit_env);
  int out_fd = OpenOutput(options.stdout_path, options.append);
  if (out_fd < 0) {
    return absl::InternalError(
        absl::StrCat("open ", options.stdout_path, ": ", strerror(errno)));
  }
  int err_fd = OpenOutput(options.stderr_path, options.append);
  if (err_fd < 0) {
    int e = errno;
    close(out_fd);
    return absl::InternalError(absl::StrCat("open ", options.stderr_path, ": ", strerror(e)));
  }
  int in_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_t pid = fork();
  if (pid < 0) {
    int e = errno;
    close(out_fd);
    close(err_fd);
    close(in_fd);
    return absl::InternalError(absl::StrCat("fork: ", strerror(e)));
  }
  if (pid == 0) {
    dup2(in_fd, 0);
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    ExecChild(plan, options.die_with_parent, options.cwd.c_str());
  }
  setpgid(pid, pid);  // also in the parent, so SignalGroup works at once
  close(out_fd);
  close(err_fd);
  close(in_fd);
  return std::unique_ptr<Subprocess>(new Subprocess(pid));
}

Subprocess::~Subprocess() {
  if (!reaped_) {
    ExitInfo ignored;
    Poll(&ignored);
  }
}

bool Subprocess::Poll(ExitInfo* info) {
  if (reaped_) {
    *info = exit_;
    return true;
  }
  int status = 0;
  pid_t r = waitpid(pid_, &status, WNOHANG);
  if (r == pid_) {
    reaped_ = true;
    exit_ = FromWaitStatus(status);
    *info = exit_;
    return true;
  }
  if (r < 0 && errno == ECHILD) {  // reaped elsewhere: report as unknown exit
    reaped_ = true;
    exit_.exited = true;
    exit_.code = -1;
    *info = exit_;
    return true;
  }
  return false;
}

ExitInfo Subprocess::Wait() {
  if (reaped_) return exit_;
  int status = 0;
  while (waitpid(pid_, &status, 0) < 0) {
    if (errno != EINTR) {
      reaped_ = true;
      exit_.exited = true;
      exit_.code = -1;
      return exit_;
    }
  }
  reaped_ = true;
  exit_ = FromWaitStatus(status);
  return exit_;
}

void Subprocess::SignalGroup(int sig) {
  if (pid_ > 0) {
    kill(-pid_, sig);
    if (!reaped_) kill(pid_, sig);  // in case it left its group
  }
}

absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         std::chrono::milliseconds timeout,
                                         size_t max_output,
                                         const std::map<std::string, std::string>& env) {
  if (argv.empty()) return absl::InvalidArgumentError("empty argv");
  std::string program = FindExecutable(argv[0]);
  if (program.empty()) return absl::NotFoundError(absl::StrCat("not found: ", argv[0]));
  ChildPlan plan = MakePlan(program, argv, env, /*inherit_env=*/true);
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0) return absl::InternalError("pipe");
  if (pipe2(err_pipe, O_CLOEXEC) != 0) {
    close(out_pipe[0]);
    close(out_pipe[1]);
    return absl::InternalError("pipe");
  }
  int in_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
  pid_t pid = fork();
  if (pid < 0) {
    for (int fd : {out_pipe[0], out_pipe[1], err_pipe[0], err_pipe[1], in_fd}) close(fd);
    return absl::InternalError(absl::StrCat("fork: ", strerror(errno)));
  }
  if (pid == 0) {
    dup2(in_fd, 0);
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    ExecChild(plan, /*die_with_parent=*/true, nullptr);
  }
  setpgid(pid, pid);
  close(out_pipe[1]);
  close(err_pipe[1]);
  close(in_fd);

  CommandResult result;
  const int64_t deadline = MonotonicNs() + int64_t{timeout.count()} * 1000000;
  int64_t kill_at = 0;
  bool out_open = true, err_open = true;
  char buf[8192];
  while (out_open || err_open) {
    int64_t now = MonotonicNs();
    if (!result.timed_out && now >= deadline) {
      result.timed_out = true;
      kill(-pid, SIGTERM);
      kill_at = now + 2000000000LL;
    }
    if (kill_at && now >= kill_at) {
      kill(-pid, SIGKILL);
      kill_at = 0;
    }
    pollfd fds[2];
    int n = 0;
    if (out_open) fds[n++] = {out_pipe[0], POLLIN, 0};
    if (err_open) fds[n++] = {err_pipe[0], POLLIN, 0};
    int r = poll(fds, n, 100);
    if (r < 0 && errno != EINTR) break;
    for (int i = 0; i < n; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t got = read(fds[i].fd, buf, sizeof(buf));
      bool is_out = fds[i].fd == out_pipe[0];
      if (got <= 0) {
        (is_out ? out_open : err_open) = false;
        continue;
      }
      std::string& sink = is_out ? result.out : result.err;
      if (sink.size() < max_output) {
        sink.append(buf, std::min<size_t>(got, max_output - sink.size()));
      }
    }
  }
  close(out_pipe[0]);
  close(err_pipe[0]);
  // The pipes closed; the child may still linger (it closed its stdout).
  int status = 0;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) break;
    if (r < 0 && errno != EINTR) break;
    int64_t now = MonotonicNs();
    if (!result.timed_out && now >= deadline) {
      result.timed_out = true;
      kill(-pid, SIGTERM);
      kill_at = now + 2000000000LL;
    }
    if (kill_at && now >= kill_at) {
      kill(-pid, SIGKILL);
      kill_at = 0;
    }
    usleep(10000);
  }
  result.exit = FromWaitStatus(status);
  return result;
}

std::string TailOfFile(const std::string& path, size_t max_bytes) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in) return "";
  std::streamoff size = in.tellg();
  std::streamoff start = size > static_cast<std::streamoff>(max_bytes)
                             ? size - static_cast<std::streamoff>(max_bytes)
                             : 0;
  in.seekg(start);
  std::string data(static_cast<size_t>(size - start), '\0');
  in.read(data.data(), static_cast<std::streamsize>(data.size()));
  if (start > 0) {
    size_t nl = data.find('\n');
    if (nl != std::string::npos && nl + 1 < data.size()) data.erase(0, nl + 1);
  }
  return data;
}

}  // namespace cmax
