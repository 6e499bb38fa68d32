// Waiting on a GPU or NCCL operation with a deadline instead of blocking
// for ever: the suites poll (cudaStreamQuery, ncclCommGetAsyncError) through
// this loop, so a hung GPU or a NCCL peer that never joins becomes a finding
// before the agent's task timeout kills the process. Host-only; the clock and
// the sleep are seams for tests.
#ifndef CMAX_BENCHMARKS_GPU_COMMON_GPU_POLL_H_
#define CMAX_BENCHMARKS_GPU_COMMON_GPU_POLL_H_

#include <chrono>
#include <functional>
#include <string>

namespace cmax::bench {

enum class PollState { kDone, kPending, kFailed };

enum class PollOutcome {
  kDone,      // the operation finished
  kFailed,    // the poll said it failed
  kTimedOut,  // still pending at the deadline
  kStopped,   // `stop` said to give up (another rank failed)
};

struct PollClock {
  std::function<std::chrono::steady_clock::time_point()> now;
  std::function<void(std::chrono::microseconds)> sleep;
};
// steady_clock and std::this_thread::sleep_for.
PollClock RealPollClock();

struct PollResult {
  PollOutcome outcome = PollOutcome::kDone;
  int polls = 0;
  std::chrono::steady_clock::duration waited{0};
};

// Calls `poll` until it returns kDone or kFailed, `stop` (may be empty)
// returns true, or `timeout` has passed since the first call; sleeps between
// polls, from 10 us doubling up to `max_sleep`. `poll` is called at least
// once, and once more at the deadline, so an operation that finished just
// then is not reported as timed out.
PollResult PollUntil(const std::function<PollState()>& poll, const std::function<bool()>& stop,
                     std::chrono::steady_clock::duration timeout, const PollClock& clock,
                     std::chrono::microseconds max_sleep = std::chrono::milliseconds(1));

// "done", "failed", "timed out", "stopped".
std::string PollOutcomeName(PollOutcome o);

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_GPU_COMMON_GPU_POLL_H_
