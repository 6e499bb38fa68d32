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

// What a CUDA query (cudaEventQuery, cudaStreamQuery) returned, as a poll
// state: `success` is done, `not_ready` pending, anything else failed. A
// query that returns cudaErrorNotReady may also leave it as the runtime's
// last error, where the next cudaGetLastError() -- the check after a kernel
// launch (kernels.h) -- would report it as that launch's failure. So when
// the query said not ready and `peek_last` (cudaPeekAtLastError) shows that
// same code, `take_last` (cudaGetLastError) clears it; any other last error
// is left for its own check. Host-only: the CUDA calls come as functions
// and the codes as ints, so tests need no GPU.
struct CudaQueryCalls {
  int success = 0;
  int not_ready = 0;
  std::function<int()> peek_last;
  std::function<int()> take_last;
};
PollState CudaQueryState(int rc, const CudaQueryCalls& calls);

// "done", "failed", "timed out", "stopped".
std::string PollOutcomeName(PollOutcome o);

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_GPU_COMMON_GPU_POLL_H_
