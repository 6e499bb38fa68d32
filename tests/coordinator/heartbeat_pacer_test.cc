// The heartbeat period: its budgets, how fast it may rise, and the pings it
// spreads over a period.
#include "coordinator/heartbeat_pacer.h"

#include <catch2/catch.hpp>
#include <cstdint>
#include <vector>

using cmax::coordinator::HeartbeatPacer;

namespace {
constexpr int64_t kSecond = 1000000000;
}

TEST_CASE("the heartbeat period stays within the pings' budgets", "[heartbeat]") {
  HeartbeatPacer pacer(HeartbeatPacer::Limits{});
  CHECK(pacer.WantedPeriodMs(0) == 1000);
  CHECK(pacer.WantedPeriodMs(3) == 1000);
  CHECK(pacer.WantedPeriodMs(2500) == 1000);     // 2,500 pings/s
  CHECK(pacer.WantedPeriodMs(10000) == 4000);    // still 2,500/s
  CHECK(pacer.WantedPeriodMs(20000) == 8000);    // 2,500/s x 20,000 streams = 5e7
  CHECK(pacer.WantedPeriodMs(50000) == 50000);   // 1,000/s: 5e7 / 50,000
  CHECK(pacer.WantedPeriodMs(1000000) == 60000); // the cap
  for (size_t n : {1000u, 7000u, 20000u, 33333u, 50000u}) {
    const double per_s = static_cast<double>(n) * 1000.0 / pacer.WantedPeriodMs(n);
    CHECK(per_s <= 2500.0);
    CHECK(per_s * static_cast<double>(n) <= 5e7 * 1.0001);
  }
}

TEST_CASE("the heartbeat period doubles at most once a period and falls at once",
          "[heartbeat]") {
  HeartbeatPacer pacer(HeartbeatPacer::Limits{});
  // 50,000 agents arrive at once; the core resizes once a second.
  std::vector<int64_t> changes_at;  // seconds
  std::vector<int64_t> periods{1000};
  int64_t since = 0;
  for (int64_t t = 0; t <= 200; ++t) {
    const int64_t before = pacer.period_ms();
    const int64_t p = pacer.Resize(50000, t * kSecond);
    if (p != before) {
      // Risen only after the old period was in force a whole period, and to
      // at most twice itself: an agent told the old one (it waits 5 of
      // them) hears again in time.
      CHECK(p <= 2 * before);
      CHECK((t - since) * 1000 >= before);
      since = t;
      changes_at.push_back(t);
      periods.push_back(p);
    }
  }
  CHECK(periods == std::vector<int64_t>{1000, 2000, 4000, 8000, 16000, 32000, 50000});
  CHECK(pacer.period_ms() == 50000);
  CHECK(changes_at.back() < 120);  // at its period within two minutes
  // The fleet shrinks: the period follows at once.
  CHECK(pacer.Resize(100, 201 * kSecond) == 1000);
}

TEST_CASE("the pings owed come to one an agent a period, spread over it", "[heartbeat]") {
  HeartbeatPacer pacer(HeartbeatPacer::Limits{.base_period_ms = 1000});
  size_t total = 0, largest = 0;
  pacer.Owed(500, 0);
  for (int64_t ms = 2; ms <= 10000; ms += 2) {  // 2 ms rounds for 10 s
    const size_t n = pacer.Owed(500, ms * 1000000);
    total += n;
    largest = std::max(largest, n);
  }
  CHECK(total >= 4999);
  CHECK(total <= 5000);
  CHECK(largest <= 2);  // a slice a round, no burst
  // Never more than the fleet at once, however long the gap.
  CHECK(pacer.Owed(500, 3600 * kSecond) == 500);
}
