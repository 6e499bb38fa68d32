// The agent's clock: the real wall clock shifted by --test-clock-offset-ms
// (0 in production, so trial agents on one machine can play nodes whose
// clocks disagree). Every instant the agent reports or is given in its own
// clock -- task start/end times, the start record, ping timestamps, the
// start_at of a barrier task -- is read or converted here, so the offset is
// applied in one place.
//
// What does NOT go through it: timeouts and durations use the monotonic
// clock (MonotonicNs, common/time_util.h), and the kill log
// (/run/cmax/kills) is written in the real clock on purpose, because the
// health suite compares it with the kernel's timestamps of Xid events.
#ifndef CMAX_AGENT_AGENT_CLOCK_H_
#define CMAX_AGENT_AGENT_CLOCK_H_

#include <cstdint>

#include "common/time_util.h"

namespace cmax::agent {

class AgentClock {
 public:
  explicit AgentClock(int64_t offset_ns = 0) : offset_ns_(offset_ns) {}
  // Now, in the agent's clock (nanoseconds since the Unix epoch).
  int64_t NowNs() const { return NowUnixNs() + offset_ns_; }
  // An instant given in the agent's clock, in the real local clock (what a
  // rank that sleeps until it must use).
  int64_t ToRealNs(int64_t agent_ns) const { return agent_ns - offset_ns_; }

 private:
  int64_t offset_ns_;
};

}  // namespace cmax::agent

#endif  // CMAX_AGENT_AGENT_CLOCK_H_
