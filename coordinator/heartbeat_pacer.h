// How often the coordinator pings each connected agent (docs/scale.md,
// "Heartbeats").
//
// Small fleets get one ping a period (`base_period_ms`, 1 s). A bigger fleet
// gets a longer period, so that the pings stay under two budgets:
//   - pings a second: at most `max_pings_per_second` (2,500);
//   - pings a second x open streams: at most `max_stream_checks_per_second`.
//     Each ping costs the coordinator two completions (its write, the pong's
//     read), and Debian's libgrpc (built without NDEBUG) checks every
//     completion against every outstanding operation of its completion
//     queue: two per open agent stream, all on one queue (measured: 100,001
//     at 50,000 agents). So a ping costs O(streams), and a fleet's pings
//     O(streams x pings/s); 5e7 holds 2,500 pings/s up to 20,000 agents and
//     1,000/s (a 50 s period) at 50,000.
// The period is at most `max_period_ms` (60 s).
//
// Agents learn the period from their Welcome and from every ping, and give up
// on a stream after max(30 s, 5 periods) without a message (agent/
// connection.cc). So the period rises only after it has been in force for a
// whole period (every agent has been pinged with it, or welcomed with it)
// and then at most to twice itself: an agent told P waits 5 P, and hears
// again within 2 P. It falls at once (more pings never hurt an agent).
//
// Thread: the coordinator core thread; not thread-safe.
#ifndef CMAX_COORDINATOR_HEARTBEAT_PACER_H_
#define CMAX_COORDINATOR_HEARTBEAT_PACER_H_

#include <cstddef>
#include <cstdint>

namespace cmax::coordinator {

class HeartbeatPacer {
 public:
  struct Limits {
    int64_t base_period_ms = 1000;
    int64_t max_pings_per_second = 2500;
    double max_stream_checks_per_second = 5e7;
    int64_t max_period_ms = 60000;
  };

  explicit HeartbeatPacer(Limits limits);

  // The period these budgets want for `connected` agents (no pacing of the
  // change): what Resize moves towards.
  int64_t WantedPeriodMs(size_t connected) const;
  // Sizes the period for `connected` agents at `mono_ns` (the core calls it
  // once a second) and returns it.
  int64_t Resize(size_t connected, int64_t mono_ns);
  // Pings owed since the last call: `connected` agents, one a period each,
  // spread over the period. At most `connected`.
  size_t Owed(size_t connected, int64_t mono_ns);

  int64_t period_ms() const { return period_ms_; }

 private:
  Limits limits_;
  int64_t period_ms_;
  int64_t period_since_ns_ = -1;  // when period_ms_ came into force
  double credit_ = 0;
  int64_t last_owed_ns_ = -1;
};

}  // namespace cmax::coordinator

#endif  // CMAX_COORDINATOR_HEARTBEAT_PACER_H_
