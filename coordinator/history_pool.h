// History and fleet queries off the coordinator's core thread (issue 45
// item 3; docs/history.md): a few worker threads, each with a read-only
// store connection of its own (Store::OpenReader: it sees what is
// committed; only the core writes), a bounded queue, identical queries in
// flight shared, abandoned ones dropped or stopped. The core's rounds
// (heartbeats, acks, ingest) never wait on a query.
//
//   Submit(key) ─┬─ a query with this key queued or running (and not
//                │  cancelled): the caller waits on it too        "shared"
//                ├─ no thread free and max_queued queries waiting
//                │  already: done(RESOURCE_EXHAUSTED, "busy, retry")
//                │  at once                                       "busy"
//                └─ queued ──▶ a worker takes it                  "run"
//                              └─▶ every waiter's done, once
//   Abandon(ticket): that waiter goes. When the last one has gone, a queued
//   query is removed unrun ("dropped"); a running one is flagged and stops
//   at its next check, per node or per batch of rows ("cancelled").
//
// Thread-safe. Each waiter's `done` is called exactly once -- on a worker
// thread, or in Submit itself (busy, stopped) -- unless Abandon returned
// true for its ticket.
#ifndef CMAX_COORDINATOR_HISTORY_POOL_H_
#define CMAX_COORDINATOR_HISTORY_POOL_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "cmax/v1/service.pb.h"
#include "coordinator/store.h"

namespace cmax::coordinator {

class HistoryPool {
 public:
  using Result = absl::StatusOr<v1::GetHistoryResponse>;
  using Done = std::function<void(Result)>;
  // Runs one query on `store` (the worker's own reader). It should call
  // `cancelled` now and then and return CANCELLED soon after it is true.
  using Query = std::function<Result(Store& store, const std::function<bool()>& cancelled)>;

  struct Options {
    std::string db_path;  // the coordinator's store, opened read-only per worker
    int threads = 2;
    // Distinct queries that may wait while every worker is busy (0: none
    // waits; a query starts on a free worker or is refused).
    int max_queued = 8;
  };
  // What happened to the queries since the start ("outcome" of
  // cmax_history_queries_total) and what is in flight now.
  struct Counts {
    uint64_t run = 0;        // started on a worker
    uint64_t shared = 0;     // a caller joined a query already in flight
    uint64_t busy = 0;       // refused: the queue was full
    uint64_t dropped = 0;    // every waiter gone before it started: never run
    uint64_t cancelled = 0;  // every waiter gone while it ran: stopped
    int queued = 0, running = 0;
  };

  explicit HistoryPool(Options options);
  ~HistoryPool();  // Stop()
  HistoryPool(const HistoryPool&) = delete;
  HistoryPool& operator=(const HistoryPool&) = delete;

  // Starts the workers (named cmax-history). Until then Submit answers
  // UNAVAILABLE.
  void Start();
  // Running queries are cancelled, the workers joined; every waiter still
  // waiting gets UNAVAILABLE. Idempotent.
  void Stop();

  // Asks for the query named `key` (e.g. "fleet", "node:NAME": equal keys
  // must mean equal queries); `query` is used when none with the key is in
  // flight. Returns the waiter's ticket for Abandon, or 0 when `done` has
  // already been called (busy, stopped).
  uint64_t Submit(const std::string& key, Query query, Done done);
  // The waiter leaves (its request timed out, its call was cancelled).
  // True: it was still waiting and its `done` will never be called (the
  // caller answers for itself). False: `done` has been or is being called.
  bool Abandon(uint64_t ticket);

  Counts counts() const;

 private:
  struct Job {
    std::string key;
    Query query;
    std::map<uint64_t, Done> waiters;
    bool running = false;
    std::atomic<bool> cancelled{false};
  };
  void Work();
  // Every waiter of `job` (removed from the maps) gets `result`.
  void Answer(const std::shared_ptr<Job>& job, const Result& result);

  const Options options_;
  mutable absl::Mutex mu_;
  bool started_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_ticket_ ABSL_GUARDED_BY(mu_) = 1;
  std::map<std::string, std::shared_ptr<Job>> in_flight_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, std::shared_ptr<Job>> tickets_ ABSL_GUARDED_BY(mu_);
  std::deque<std::shared_ptr<Job>> queue_ ABSL_GUARDED_BY(mu_);
  Counts counts_ ABSL_GUARDED_BY(mu_);
  std::vector<std::thread> threads_;
};

}  // namespace cmax::coordinator

#endif  // CMAX_COORDINATOR_HISTORY_POOL_H_
