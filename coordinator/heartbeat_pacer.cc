#include "coordinator/heartbeat_pacer.h"

#include <algorithm>
#include <cmath>

namespace cmax::coordinator {

HeartbeatPacer::HeartbeatPacer(Limits limits)
    : limits_(limits), period_ms_(std::max<int64_t>(1, limits.base_period_ms)) {}

int64_t HeartbeatPacer::WantedPeriodMs(size_t connected) const {
  const double n = static_cast<double>(connected);
  double pings_per_s = static_cast<double>(limits_.max_pings_per_second);
  if (n > 0) pings_per_s = std::min(pings_per_s, limits_.max_stream_checks_per_second / n);
  const int64_t wanted =
      pings_per_s > 0 ? static_cast<int64_t>(std::ceil(n * 1000.0 / pings_per_s)) : 0;
  return std::clamp<int64_t>(wanted, std::max<int64_t>(1, limits_.base_period_ms),
                             std::max(limits_.base_period_ms, limits_.max_period_ms));
}

int64_t HeartbeatPacer::Resize(size_t connected, int64_t mono_ns) {
  if (period_since_ns_ < 0) period_since_ns_ = mono_ns;
  const int64_t wanted = WantedPeriodMs(connected);
  if (wanted < period_ms_) {
    period_ms_ = wanted;
    period_since_ns_ = mono_ns;
  } else if (wanted > period_ms_ && mono_ns - period_since_ns_ >= period_ms_ * 1000000) {
    period_ms_ = std::min(wanted, 2 * period_ms_);
    period_since_ns_ = mono_ns;
  }
  return period_ms_;
}

size_t HeartbeatPacer::Owed(size_t connected, int64_t mono_ns) {
  if (last_owed_ns_ < 0) last_owed_ns_ = mono_ns;
  credit_ += static_cast<double>(connected) * static_cast<double>(mono_ns - last_owed_ns_) /
             (static_cast<double>(period_ms_) * 1e6);
  credit_ = std::min(credit_, static_cast<double>(connected));
  last_owed_ns_ = mono_ns;
  if (credit_ < 1) return 0;
  const size_t n = static_cast<size_t>(credit_);
  credit_ -= static_cast<double>(n);
  return n;
}

}  // namespace cmax::coordinator
