#include "benchmarks/collective_common/soak.h"

#include <chrono>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"

namespace cmax::collective {

absl::Status ValidateSoak(const SoakConfig& c) {
  if (!(c.interval_s >= 1) || c.interval_s > 86400) {
    return absl::InvalidArgumentError(
        absl::StrCat("soak: interval must be 1..86400 s (got ", c.interval_s, ")"));
  }
  if (!(c.stall_s >= 1) || c.stall_s > 86400) {
    return absl::InvalidArgumentError(
        absl::StrCat("soak: stall must be 1..86400 s (got ", c.stall_s, ")"));
  }
  if (!(c.soak_s >= 2 * c.interval_s) || c.soak_s > 7 * 86400) {
    return absl::InvalidArgumentError(absl::StrCat(
        "soak of ", c.soak_s, " s is shorter than two intervals of ", c.interval_s,
        " s (each interval's bus bandwidth is compared with the median interval): set soak to at "
        "least ", 2 * c.interval_s, " s or a shorter interval"));
  }
  return absl::OkStatus();
}

int PlannedIntervals(const SoakConfig& c) {
  if (c.interval_s <= 0) return 0;
  return static_cast<int>(std::floor(c.soak_s / c.interval_s + 1e-9));
}

SoakClock SteadySoakClock() {
  return [] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
        .count();
  };
}

SoakProgress::SoakProgress(SoakClock clock) : clock_(std::move(clock)) {}

void SoakProgress::Start() {
  const double now = clock_();
  absl::MutexLock l(&mu_);
  start_ = now;
  last_ = now;
  completed_ = 0;
  interval_ = 0;
}

void SoakProgress::BeginInterval(int index) {
  absl::MutexLock l(&mu_);
  interval_ = index;
}

void SoakProgress::NoteCompleted(int64_t completed) {
  const double now = clock_();
  absl::MutexLock l(&mu_);
  if (completed > completed_) {
    completed_ = completed;
    last_ = now;
  }
}

double SoakProgress::Elapsed() const {
  const double now = clock_();
  absl::MutexLock l(&mu_);
  return now - start_;
}

std::optional<StallReport> SoakProgress::CheckStall(double stall_s) const {
  const double now = clock_();
  absl::MutexLock l(&mu_);
  const double waited = now - last_;
  if (waited < stall_s) return std::nullopt;
  StallReport r;
  r.interval = interval_;
  r.last_iteration = completed_;
  r.last_progress_s = last_ - start_;
  r.waited_s = waited;
  return r;
}

StallReport SoakProgress::Snapshot() const {
  const double now = clock_();
  absl::MutexLock l(&mu_);
  StallReport r;
  r.interval = interval_;
  r.last_iteration = completed_;
  r.last_progress_s = last_ - start_;
  r.waited_s = now - last_;
  return r;
}

SoakWatchdog::SoakWatchdog(const SoakProgress* progress, double stall_s, double poll_s,
                           std::function<void(const StallReport&)> on_stall,
                           const std::atomic<bool>* terminate,
                           std::function<void(const StallReport&)> on_terminate)
    : progress_(progress),
      stall_s_(stall_s),
      poll_s_(poll_s),
      on_stall_(std::move(on_stall)),
      terminate_(terminate),
      on_terminate_(std::move(on_terminate)) {
  thread_ = std::thread([this] { Loop(); });
}

SoakWatchdog::~SoakWatchdog() { Stop(); }

void SoakWatchdog::Stop() {
  if (!stop_.HasBeenNotified()) stop_.Notify();
  if (thread_.joinable()) thread_.join();
}

void SoakWatchdog::Loop() {
  while (!stop_.WaitForNotificationWithTimeout(absl::Seconds(poll_s_))) {
    if (terminate_ != nullptr && terminate_->load() && on_terminate_) {
      on_terminate_(progress_->Snapshot());
      return;
    }
    if (auto r = progress_->CheckStall(stall_s_)) {
      on_stall_(*r);
      return;
    }
  }
}

}  // namespace cmax::collective
