// Runs a function on the coordinator core's thread and waits for its answer,
// at most a timeout: how the web view (coordinator/web) takes its snapshots
// of the core's state without a lock on it.
#ifndef CMAX_COORDINATOR_AWAIT_ON_CORE_H_
#define CMAX_COORDINATOR_AWAIT_ON_CORE_H_

#include <functional>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace cmax::coordinator {

// Posts `fn` through `core->Post` and waits up to `timeout` for its answer;
// UNAVAILABLE when the core did not answer in time. The answer lives in a
// shared block, so a late one (after the wait gave up) writes into memory
// that is still there. REQUIRES: not called on the core thread.
template <typename T, typename Core>
absl::StatusOr<T> AwaitOnCore(Core* core, std::function<absl::StatusOr<T>()> fn,
                              absl::Duration timeout) {
  struct Reply {
    absl::Mutex mu;
    bool done ABSL_GUARDED_BY(mu) = false;
    absl::StatusOr<T> value ABSL_GUARDED_BY(mu) = absl::UnknownError("no answer");
  };
  auto reply = std::make_shared<Reply>();
  core->Post([reply, fn = std::move(fn)] {
    absl::StatusOr<T> v = fn();
    absl::MutexLock lock(&reply->mu);
    reply->value = std::move(v);
    reply->done = true;
  });
  absl::MutexLock lock(&reply->mu);
  auto done = [r = reply.get()]() ABSL_SHARED_LOCKS_REQUIRED(r->mu) { return r->done; };
  if (!reply->mu.AwaitWithTimeout(absl::Condition(&done), timeout)) {
    return absl::UnavailableError("the coordinator core did not answer in time");
  }
  return std::move(reply->value);
}

}  // namespace cmax::coordinator

#endif  // CMAX_COORDINATOR_AWAIT_ON_CORE_H_
