// benchmarks/scale/measure.h: the time spans, /proc/<pid>/status figures and
// scorecard comparison that cmax-scale-agents, cmax-scale-scorecard,
// cmax-scale-agree and cmax-report-scale share.
#include "benchmarks/scale/measure.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <string>

namespace cmax::scale {
namespace {

TEST_CASE("Seconds is the span between two instants", "[scale_measure]") {
  const Clock::time_point a = Clock::now();
  CHECK(Seconds(a, a + std::chrono::milliseconds(1500)) == Approx(1.5));
  CHECK(Seconds(a, a) == 0);
  CHECK(SecondsSince(a) >= 0);
}

TEST_CASE("StatusKb reads this process's status, or another's by pid", "[scale_measure]") {
  CHECK(StatusKb("VmRSS") > 0);
  CHECK(StatusKb("VmHWM") >= StatusKb("VmRSS") / 2);  // a peak, not below a sample much
  // cmax-scale-agents reads the coordinator's by its pid (and its own).
  CHECK(StatusKb("VmRSS", static_cast<int>(getpid())) > 0);
  CHECK(StatusKb("Threads", static_cast<int>(getpid())) >= 1);
  CHECK(StatusKb("NoSuchLine") == -1);
  CHECK(StatusKb("Vm") == -1);  // a whole key, not a prefix of one
  CHECK(StatusKb("VmRSS", 1 << 30) == -1);  // no such process (pid_max is at most 2^22)
}

TEST_CASE("two scorecards are the same apart from when they were built", "[scale_measure]") {
  v1::Scorecard a;
  a.set_tier("Gold");
  a.set_generated("2026-12-03T17:00:00Z");
  v1::Scorecard b = a;
  b.set_generated("2026-12-03T17:05:00Z");
  CHECK(ScorecardDifferences(a, b).empty());
  CHECK(SameScorecard(a, b));
  b.set_tier("Silver");
  const std::string differences = ScorecardDifferences(a, b);
  CHECK(differences.find("tier") != std::string::npos);
  CHECK_FALSE(SameScorecard(a, b));
}

}  // namespace
}  // namespace cmax::scale
