// The wall clock as a seam: what the coordinator's timed decisions that
// tests must drive without sleeping (schedules.h) read "now" from. The
// coordinator uses SystemClock; tests use a fake (tests/coordinator/
// fake_clock.h) that they move by hand.
//
// Thread: SystemClock is thread-safe; a fake belongs to its test's thread.
#ifndef CMAX_COORDINATOR_CLOCK_H_
#define CMAX_COORDINATOR_CLOCK_H_

#include <cstdint>

#include "common/time_util.h"

namespace cmax::coordinator {

class Clock {
 public:
  virtual ~Clock() = default;
  // Nanoseconds since the Unix epoch (UTC).
  virtual int64_t NowUnixNs() const = 0;
};

class SystemClock final : public Clock {
 public:
  int64_t NowUnixNs() const override { return cmax::NowUnixNs(); }
};

}  // namespace cmax::coordinator

#endif  // CMAX_COORDINATOR_CLOCK_H_
