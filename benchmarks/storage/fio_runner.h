// Runs fio on one job file inside the work directory, with a timeout, and
// stops it at once when the suite is interrupted (SIGTERM, SIGINT).
//
// fio is started through cmax::Subprocess (argv, its own process group, dies
// with the suite) rather than RunCommand, because the signal handler must
// know the child's process group to kill it mid-run.
#ifndef CMAX_BENCHMARKS_STORAGE_FIO_RUNNER_H_
#define CMAX_BENCHMARKS_STORAGE_FIO_RUNNER_H_

#include <chrono>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "common/subprocess.h"

namespace cmax::storage {

// Installs SIGTERM/SIGINT/SIGHUP handlers that record the signal and kill
// the running fio's process group. Call once, before the first RunFio.
void InstallInterruptHandlers();
// The signal received, or 0.
int InterruptSignal();
// Restores the default action for `sig` and raises it (the suite then dies
// by the signal it was sent, as a killed process should).
[[noreturn]] void ReraiseInterrupt(int sig);

struct FioRun {
  ExitInfo exit;
  bool timed_out = false;
  bool interrupted = false;
  std::string json;        // stdout (the JSON report)
  std::string err;         // stderr (capped)
  int64_t start_unix_ns = 0;  // the suite's clock just before fio started
  int64_t end_unix_ns = 0;    // ... and just after it exited
  std::string job_path;
};

// Writes `job_text` to <work_dir>/<name>.fio and runs
// `fio --output-format=json <name>.fio` with cwd = work_dir (fio's logs land
// there). Non-OK only when fio could not be started or a file could not be
// written; a failing fio is an OK result with a non-zero exit.
absl::StatusOr<FioRun> RunFio(const std::string& fio, const std::string& work_dir,
                              const std::string& name, const std::string& job_text,
                              std::chrono::seconds timeout);

}  // namespace cmax::storage

#endif  // CMAX_BENCHMARKS_STORAGE_FIO_RUNNER_H_
