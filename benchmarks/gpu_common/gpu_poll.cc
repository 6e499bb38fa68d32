#include "benchmarks/gpu_common/gpu_poll.h"

#include <algorithm>
#include <thread>

namespace cmax::bench {

PollClock RealPollClock() {
  return {[] { return std::chrono::steady_clock::now(); },
          [](std::chrono::microseconds d) { std::this_thread::sleep_for(d); }};
}

PollResult PollUntil(const std::function<PollState()>& poll, const std::function<bool()>& stop,
                     std::chrono::steady_clock::duration timeout, const PollClock& clock,
                     std::chrono::microseconds max_sleep) {
  PollResult r;
  const auto start = clock.now();
  const auto deadline = start + timeout;
  std::chrono::microseconds pause(10);
  for (;;) {
    const PollState s = poll();
    ++r.polls;
    const auto now = clock.now();
    r.waited = now - start;
    if (s == PollState::kDone) {
      r.outcome = PollOutcome::kDone;
      return r;
    }
    if (s == PollState::kFailed) {
      r.outcome = PollOutcome::kFailed;
      return r;
    }
    if (stop && stop()) {
      r.outcome = PollOutcome::kStopped;
      return r;
    }
    if (now >= deadline) {
      r.outcome = PollOutcome::kTimedOut;
      return r;
    }
    // Never sleep past the deadline: the last poll happens at it.
    auto left = std::chrono::duration_cast<std::chrono::microseconds>(deadline - now);
    clock.sleep(std::max(std::chrono::microseconds(1), std::min(pause, left)));
    pause = std::min(pause * 2, max_sleep);
  }
}

PollState CudaQueryState(int rc, const CudaQueryCalls& calls) {
  if (rc == calls.success) return PollState::kDone;
  if (rc != calls.not_ready) return PollState::kFailed;
  if (calls.peek_last && calls.take_last && calls.peek_last() == calls.not_ready) {
    calls.take_last();
  }
  return PollState::kPending;
}

std::string PollOutcomeName(PollOutcome o) {
  switch (o) {
    case PollOutcome::kDone: return "done";
    case PollOutcome::kFailed: return "failed";
    case PollOutcome::kTimedOut: return "timed out";
    case PollOutcome::kStopped: return "stopped";
  }
  return "?";
}

}  // namespace cmax::bench
