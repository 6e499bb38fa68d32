#include "benchmarks/storage/fio_runner.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "common/time_util.h"

namespace cmax::storage {
namespace {

volatile sig_atomic_t g_signal = 0;
std::atomic<pid_t> g_child{0};

void OnSignal(int sig) {
  g_signal = sig;
  pid_t child = g_child.load();
  if (child > 0) kill(-child, SIGKILL);
}

std::string ReadAll(const std::string& path, size_t cap) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  if (s.size() > cap) s = s.substr(s.size() - cap);
  return s;
}

}  // namespace

void InstallInterruptHandlers() {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;  // no SA_RESTART: sleeps and waits return early
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGHUP, &sa, nullptr);
}

int InterruptSignal() { return g_signal; }

void ReraiseInterrupt(int sig) {
  signal(sig, SIG_DFL);
  raise(sig);
  _exit(128 + sig);
}

absl::StatusOr<FioRun> RunFio(const std::string& fio, const std::string& work_dir,
                              const std::string& name, const std::string& job_text,
                              std::chrono::seconds timeout) {
  FioRun run;
  run.job_path = absl::StrCat(work_dir, "/", name, ".fio");
  {
    std::ofstream f(run.job_path, std::ios::trunc);
    f << job_text;
    if (!f) return absl::InternalError(absl::StrCat("cannot write ", run.job_path));
  }
  if (g_signal) {
    run.interrupted = true;
    return run;
  }
  SpawnOptions opts;
  opts.argv = {fio, "--output-format=json", absl::StrCat(name, ".fio")};
  opts.cwd = work_dir;
  opts.stdout_path = absl::StrCat(work_dir, "/", name, ".json");
  opts.stderr_path = absl::StrCat(work_dir, "/", name, ".err");
  run.start_unix_ns = NowUnixNs();
  auto child = Subprocess::Spawn(opts);
  if (!child.ok()) return child.status();
  g_child.store((*child)->pid());
  if (g_signal) (*child)->SignalGroup(SIGKILL);  // a signal raced the store
  const int64_t deadline = MonotonicNs() + int64_t{timeout.count()} * 1000000000LL;
  int64_t kill_at = 0;
  for (;;) {
    if ((*child)->Poll(&run.exit)) break;
    int64_t now = MonotonicNs();
    if (g_signal && !run.interrupted) {
      run.interrupted = true;
      (*child)->SignalGroup(SIGKILL);
    }
    if (!run.timed_out && now >= deadline) {
      run.timed_out = true;
      (*child)->SignalGroup(SIGTERM);
      kill_at = now + 3000000000LL;
    }
    if (kill_at && now >= kill_at) {
      (*child)->SignalGroup(SIGKILL);
      kill_at = 0;
    }
    usleep(20000);
  }
  g_child.store(0);
  run.end_unix_ns = NowUnixNs();
  if (g_signal) run.interrupted = true;
  run.json = ReadAll(opts.stdout_path, 64 << 20);
  run.err = ReadAll(opts.stderr_path, 64 << 10);
  return run;
}

}  // namespace cmax::storage
