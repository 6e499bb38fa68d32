// coordinator/history_pool.h: history queries off the core thread. Queries
// here are stand-ins that wait on a gate the test opens, so what is
// running, queued, shared, refused, dropped and stopped is certain.
#include "coordinator/history_pool.h"

#include <catch2/catch.hpp>
#include <atomic>
#include <chrono>
#include <thread>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "benchmarks/history_scale/history_sim.h"
#include "coordinator/core.h"
#include "tests/scratch_dir.h"

namespace cmax::coordinator {
namespace {

using Result = HistoryPool::Result;

// A store for the workers' readers to open.
struct Db {
  testing::ScratchDir dir;
  std::string path = dir.path + "/cmax.db";
  Db() { REQUIRE(Store::Open(path).ok()); }
};

// Collects one waiter's answer.
struct Answer {
  absl::Mutex mu;
  int calls ABSL_GUARDED_BY(mu) = 0;
  Result result ABSL_GUARDED_BY(mu) = absl::UnknownError("none");
  HistoryPool::Done Done() {
    return [this](Result r) {
      absl::MutexLock lock(&mu);
      ++calls;
      result = std::move(r);
    };
  }
  bool Wait(absl::Duration d = absl::Seconds(10)) {
    absl::MutexLock lock(&mu);
    auto got = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu) { return calls > 0; };
    return mu.AwaitWithTimeout(absl::Condition(&got), d);
  }
  int Calls() {
    absl::MutexLock lock(&mu);
    return calls;
  }
  Result Get() {
    absl::MutexLock lock(&mu);
    return result;
  }
};

// A query that says it started, then waits for the gate (or its
// cancellation), and answers with the fleet's node count = `tag`.
struct Gated {
  absl::Notification started, gate;
  std::atomic<int> runs{0};
  std::atomic<bool> saw_cancel{false};
  HistoryPool::Query Query(int tag) {
    return [this, tag](Store&, const std::function<bool()>& cancelled) -> Result {
      ++runs;
      started.Notify();
      while (!gate.HasBeenNotified()) {
        if (cancelled()) {
          saw_cancel = true;
          return absl::CancelledError("stopped");
        }
        absl::SleepFor(absl::Milliseconds(2));
      }
      v1::GetHistoryResponse r;
      r.mutable_fleet()->set_nodes(tag);
      return r;
    };
  }
};

template <typename F>
bool Eventually(F f) {
  for (int i = 0; i < 2000; ++i) {
    if (f()) return true;
    absl::SleepFor(absl::Milliseconds(5));
  }
  return false;
}

}  // namespace

TEST_CASE("history pool: identical queries in flight run once, every caller gets the answer",
          "[history_pool]") {
  Db db;
  HistoryPool pool({.db_path = db.path, .threads = 2, .max_queued = 4});
  pool.Start();
  Gated q;
  Answer a[5];
  for (auto& x : a) CHECK(pool.Submit("fleet", q.Query(7), x.Done()) != 0);
  REQUIRE(q.started.WaitForNotificationWithTimeout(absl::Seconds(10)));
  q.gate.Notify();
  for (auto& x : a) {
    REQUIRE(x.Wait());
    REQUIRE(x.Get().ok());
    CHECK(x.Get()->fleet().nodes() == 7);
    CHECK(x.Calls() == 1);
  }
  CHECK(q.runs == 1);
  const auto c = pool.counts();
  CHECK(c.run == 1);
  CHECK(c.shared == 4);
}

TEST_CASE("history pool: beyond the queue a caller is told busy at once", "[history_pool]") {
  Db db;
  HistoryPool pool({.db_path = db.path, .threads = 1, .max_queued = 1});
  pool.Start();
  Gated running, queued, third;
  Answer a, b, c;
  REQUIRE(pool.Submit("fleet", running.Query(1), a.Done()) != 0);
  REQUIRE(running.started.WaitForNotificationWithTimeout(absl::Seconds(10)));
  REQUIRE(pool.Submit("node:n1", queued.Query(2), b.Done()) != 0);
  // The queue is full: refused in Submit itself.
  CHECK(pool.Submit("node:n2", third.Query(3), c.Done()) == 0);
  REQUIRE(c.Calls() == 1);
  CHECK(absl::IsResourceExhausted(c.Get().status()));
  CHECK(absl::StrContains(c.Get().status().message(), "busy, retry"));
  // Joining one in flight is never refused.
  Answer d;
  CHECK(pool.Submit("node:n1", queued.Query(2), d.Done()) != 0);
  running.gate.Notify();
  queued.gate.Notify();
  REQUIRE(a.Wait());
  REQUIRE(b.Wait());
  REQUIRE(d.Wait());
  CHECK(b.Get()->fleet().nodes() == 2);
  CHECK(d.Get()->fleet().nodes() == 2);
  CHECK(third.runs == 0);
  const auto n = pool.counts();
  CHECK(n.busy == 1);
  CHECK(n.run == 2);
  CHECK(n.shared == 1);
}

TEST_CASE("history pool: a query whose callers have all gone is dropped or stopped",
          "[history_pool]") {
  Db db;
  HistoryPool pool({.db_path = db.path, .threads = 1, .max_queued = 4});
  pool.Start();
  Gated running, queued;
  Answer a1, a2, b;
  const uint64_t t1 = pool.Submit("fleet", running.Query(1), a1.Done());
  const uint64_t t2 = pool.Submit("fleet", running.Query(1), a2.Done());
  REQUIRE(running.started.WaitForNotificationWithTimeout(absl::Seconds(10)));
  const uint64_t tb = pool.Submit("node:n1", queued.Query(2), b.Done());
  REQUIRE((t1 != 0 && t2 != 0 && tb != 0));

  // Not yet started, nobody waits: dropped, never run.
  CHECK(pool.Abandon(tb));
  CHECK(pool.counts().dropped == 1);
  CHECK(pool.counts().queued == 0);

  // Running: one caller left, it goes on for the other...
  CHECK(pool.Abandon(t1));
  absl::SleepFor(absl::Milliseconds(50));
  CHECK_FALSE(running.saw_cancel);
  // ...and stops once the last one has gone.
  CHECK(pool.Abandon(t2));
  CHECK(Eventually([&] { return running.saw_cancel.load(); }));
  CHECK(Eventually([&] { return pool.counts().cancelled == 1; }));
  CHECK(Eventually([&] { return pool.counts().running == 0; }));
  CHECK(queued.runs == 0);
  // Abandoned callers are never answered; a second Abandon is a no-op.
  CHECK(a1.Calls() == 0);
  CHECK(a2.Calls() == 0);
  CHECK(b.Calls() == 0);
  CHECK_FALSE(pool.Abandon(t1));

  // The same query asked again runs afresh.
  Gated again;
  again.gate.Notify();
  Answer c;
  REQUIRE(pool.Submit("fleet", again.Query(3), c.Done()) != 0);
  REQUIRE(c.Wait());
  CHECK(c.Get()->fleet().nodes() == 3);
}

TEST_CASE("history pool: stopping answers every waiter", "[history_pool]") {
  Db db;
  HistoryPool pool({.db_path = db.path, .threads = 1, .max_queued = 4});
  Answer before;
  Gated q;
  CHECK(pool.Submit("fleet", q.Query(1), before.Done()) == 0);  // not started
  CHECK(absl::IsUnavailable(before.Get().status()));
  pool.Start();
  Answer a, b;
  REQUIRE(pool.Submit("fleet", q.Query(1), a.Done()) != 0);
  REQUIRE(q.started.WaitForNotificationWithTimeout(absl::Seconds(10)));
  Gated q2;
  REQUIRE(pool.Submit("node:n1", q2.Query(2), b.Done()) != 0);
  pool.Stop();
  REQUIRE(a.Wait());
  REQUIRE(b.Wait());
  CHECK(absl::IsUnavailable(a.Get().status()));
  CHECK(absl::IsUnavailable(b.Get().status()));
  CHECK(q2.runs == 0);
}

// The core's side: a fleet query on a real (simulated) history answers off
// the core thread, and a caller that gives up leaves its query.
TEST_CASE("history pool: the core answers history from its pool and abandons late ones",
          "[history_pool][history]") {
  testing::ScratchDir dir;
  REQUIRE(history_sim::FillStore(dir.path + "/cmax.db", {.nodes = 300, .weeks = 20}).ok());
  CoreOptions o;
  o.data_dir = dir.path;
  o.history_threads = 1;
  auto core = CoordinatorCore::Create(o);
  REQUIRE(core.ok());
  (*core)->Start();
  auto fleet = (*core)->SnapshotHistory("", absl::Seconds(30));
  REQUIRE(fleet.ok());
  CHECK(fleet->fleet().nodes() == 300);
  CHECK(fleet->fleet().runs() == 20);
  auto node = (*core)->SnapshotHistory(history_sim::NodeName(5), absl::Seconds(30));
  REQUIRE(node.ok());
  CHECK(node->node().runs_size() == 20);
  CHECK(absl::IsNotFound((*core)->SnapshotHistory("nobody", absl::Seconds(30)).status()));
  CHECK(absl::IsInvalidArgument((*core)->SnapshotHistory("../x", absl::Seconds(30)).status()));
  // Gives up at once: the query is dropped before it starts or stopped.
  auto late = (*core)->SnapshotHistory("", absl::ZeroDuration());
  if (!late.ok()) {
    CHECK(absl::IsUnavailable(late.status()));
    CHECK(Eventually([&] {
      auto m = (*core)->RenderMetrics(absl::Seconds(10));
      return m.ok() &&
             (absl::StrContains(*m, "cmax_history_queries_total{outcome=\"dropped\"} 1\n") ||
              absl::StrContains(*m, "cmax_history_queries_total{outcome=\"cancelled\"} 1\n"));
    }));
  }
  (*core)->Stop();
}

}  // namespace cmax::coordinator
