// Soak mode of the collective suite: one op at one size, run again and again
// for a duration, its bus bandwidth recorded per interval, and a watchdog per
// rank that names a stall (no completed iteration for `stall` seconds).
//
// The bookkeeping here is independent of any backend and takes its clock as
// a function, so tests drive it with a fake clock:
//  - SoakConfig / ValidateSoak: the duration, interval and stall limits;
//    a soak shorter than two intervals is refused.
//  - SoakProgress: the rank's last completed iteration and when it
//    completed (thread-safe: the loop writes, the watchdog reads).
//  - SoakWatchdog: a thread that polls SoakProgress and calls `on_stall`
//    once when no iteration completed for `stall` seconds.
#ifndef CMAX_BENCHMARKS_COLLECTIVE_COMMON_SOAK_H_
#define CMAX_BENCHMARKS_COLLECTIVE_COMMON_SOAK_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"

namespace cmax::collective {

struct SoakConfig {
  double soak_s = 0;       // total duration; 0: no soak (the size sweep)
  double interval_s = 10;  // one Measurement per interval
  double stall_s = 60;     // no completed iteration for this long: a stall
};

// OK, or INVALID_ARGUMENT saying which limit is wrong: interval and stall
// must be >= 1 s, and the soak must last at least two intervals (one
// interval has no median to compare with).
absl::Status ValidateSoak(const SoakConfig& config);

// Whole intervals the soak runs: floor(soak_s / interval_s).
int PlannedIntervals(const SoakConfig& config);

// Seconds on a monotonic clock (steady_clock in the suite, a fake in tests).
using SoakClock = std::function<double()>;
SoakClock SteadySoakClock();

// What a rank knows of its own progress when it stalls.
struct StallReport {
  int interval = 0;            // the interval running when it stalled
  int64_t last_iteration = 0;  // completed iterations since the soak began
  double last_progress_s = 0;  // when the last one completed, s since start
  double waited_s = 0;         // seconds since then
};

// Thread-safe.
class SoakProgress {
 public:
  explicit SoakProgress(SoakClock clock);
  // The soak starts now: iteration 0, interval 0, last progress = now.
  void Start();
  void BeginInterval(int index);
  // `completed` iterations have completed in total (monotonic).
  void NoteCompleted(int64_t completed);
  // Seconds since Start().
  double Elapsed() const;
  // A report when no iteration completed for `stall_s` (measured from the
  // last completion, or from Start() when none completed); else nullopt.
  std::optional<StallReport> CheckStall(double stall_s) const;
  // The same report now, whatever the wait.
  StallReport Snapshot() const;

 private:
  SoakClock clock_;
  mutable absl::Mutex mu_;
  double start_ ABSL_GUARDED_BY(mu_) = 0;
  double last_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t completed_ ABSL_GUARDED_BY(mu_) = 0;
  int interval_ ABSL_GUARDED_BY(mu_) = 0;
};

// Polls `progress` every `poll_s` (real time) on its own thread; calls
// `on_stall` once, on that thread, at the first stall. `on_stall` may end
// the process (the suite writes its finding and exits 1 there). When
// `terminate` is given and becomes true (a SIGTERM handler sets it), calls
// `on_terminate` with Snapshot() instead, once. Stop() (and the destructor)
// ends the thread without a call.
class SoakWatchdog {
 public:
  SoakWatchdog(const SoakProgress* progress, double stall_s, double poll_s,
               std::function<void(const StallReport&)> on_stall,
               const std::atomic<bool>* terminate = nullptr,
               std::function<void(const StallReport&)> on_terminate = {});
  ~SoakWatchdog();
  SoakWatchdog(const SoakWatchdog&) = delete;
  SoakWatchdog& operator=(const SoakWatchdog&) = delete;
  void Stop();

 private:
  void Loop();
  const SoakProgress* progress_;
  double stall_s_, poll_s_;
  std::function<void(const StallReport&)> on_stall_;
  const std::atomic<bool>* terminate_;
  std::function<void(const StallReport&)> on_terminate_;
  absl::Notification stop_;
  std::thread thread_;
};

}  // namespace cmax::collective

#endif  // CMAX_BENCHMARKS_COLLECTIVE_COMMON_SOAK_H_
