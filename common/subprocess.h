// Child processes, started from an argv (never a shell).
//
// Every child gets its own process group, so a signal reaches its whole tree,
// and (by default) PR_SET_PDEATHSIG=SIGKILL, so it dies with its parent.
// Linux ties PDEATHSIG to the *thread* that forked: spawn long-lived children
// only from a thread that lives as long as the process (the agent's executor).
#ifndef CMAX_COMMON_SUBPROCESS_H_
#define CMAX_COMMON_SUBPROCESS_H_

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cmax {

// How a child ended.
struct ExitInfo {
  bool exited = false;  // true: exit(code); false: killed by `signal`
  int code = -1;
  int signal = 0;
  // "exit 2", "signal 9 (SIGKILL)".
  std::string Describe() const;
};

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0]: a path, or a name looked up on PATH
  // Added to (or replacing) the parent's environment.
  std::map<std::string, std::string> env;
  bool inherit_env = true;
  std::string cwd;           // empty: the parent's
  std::string stdout_path;   // empty: /dev/null; the file is created or appended
  std::string stderr_path;   // empty: /dev/null
  bool append = false;
  bool die_with_parent = true;
};

// A running child. Not thread-safe; owned by one thread.
class Subprocess {
 public:
  // Starts the child. Errors: NOT_FOUND when the program is not found,
  // INTERNAL when fork/exec set-up fails (with errno text).
  static absl::StatusOr<std::unique_ptr<Subprocess>> Spawn(const SpawnOptions& options);
  ~Subprocess();  // does not kill; reaps if already exited

  pid_t pid() const { return pid_; }
  // Non-blocking: true and fills `info` once the child has exited.
  bool Poll(ExitInfo* info);
  // Blocks until the child exits.
  ExitInfo Wait();
  // Sends `sig` to the child's process group (the whole tree it started).
  void SignalGroup(int sig);

 private:
  explicit Subprocess(pid_t pid) : pid_(pid) {}
  pid_t pid_;
  bool reaped_ = false;
  ExitInfo exit_;
};

struct CommandResult {
  ExitInfo exit;
  std::string out;  // stdout, capped
  std::string err;  // stderr, capped
  bool timed_out = false;
};

// Runs argv to completion with a timeout (SIGTERM, then SIGKILL after 2 s)
// and captures up to `max_output` bytes of each stream. Non-OK only when the
// command could not be started (NOT_FOUND for a missing program).
absl::StatusOr<CommandResult> RunCommand(const std::vector<std::string>& argv,
                                         std::chrono::milliseconds timeout,
                                         size_t max_output = 1 << 20,
                                         const std::map<std::string, std::string>& env = {});

// Resolves `name` against PATH (or checks it when it contains '/').
// Empty when not found or not executable.
std::string FindExecutable(const std::string& name);

// The last `max_bytes` of a file (whole lines where possible); empty on error.
std::string TailOfFile(const std::string& path, size_t max_bytes);

}  // namespace cmax

#endif  // CMAX_COMMON_SUBPROCESS_H_
