// A Clock that tests move by hand (tests only).
#ifndef CMAX_TESTS_COORDINATOR_FAKE_CLOCK_H_
#define CMAX_TESTS_COORDINATOR_FAKE_CLOCK_H_

#include <cstdint>

#include "coordinator/clock.h"

namespace cmax::coordinator {

class FakeClock final : public Clock {
 public:
  explicit FakeClock(int64_t now_unix_ns) : now_(now_unix_ns) {}
  int64_t NowUnixNs() const override { return now_; }
  void Set(int64_t now_unix_ns) { now_ = now_unix_ns; }
  void Advance(int64_t ns) { now_ += ns; }

 private:
  int64_t now_;
};

}  // namespace cmax::coordinator

#endif  // CMAX_TESTS_COORDINATOR_FAKE_CLOCK_H_
