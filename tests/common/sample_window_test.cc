// Telemetry windows: one-second Samples for short runs, min/mean/max windows
// sized so long runs write a bounded number of Samples.
#include <catch2/catch.hpp>
#include <vector>

#include "common/sample_window.h"

using namespace cmax;

namespace {
constexpr uint64_t kBit = 0x4;
}  // namespace

TEST_CASE("telemetry windows: one-second samples or 5-second min/mean/max", "[sample_window]") {
  SampleWindow one(1);
  one.Add("gpu_temperature_c", "C", 60);
  auto s = one.Tick("burnin", {{"gpu", "0"}}, 1);
  REQUIRE(s.size() == 1);
  CHECK(s[0].count() == 1);
  CHECK(s[0].value() == 60);
  CHECK(s[0].labels().at("gpu") == "0");

  SampleWindow five(5);
  std::vector<v1::Sample> got;
  for (int i = 0; i < 5; ++i) {
    five.Add("gpu_power_w", "W", 600 + 10 * i);
    five.AddBits("gpu_throttle_reasons", i == 2 ? kBit : 0);
    got = five.Tick("burnin", {}, i);
    if (i < 4) CHECK(got.empty());
  }
  REQUIRE(got.size() == 2);
  for (const auto& x : got) {
    CHECK(x.count() == 5);
    if (x.metric() == "gpu_power_w") {
      CHECK(x.min() == 600);
      CHECK(x.max() == 640);
      CHECK(x.value() == Approx(620));
    } else {
      CHECK(x.value() == static_cast<double>(kBit));
    }
  }
  five.Add("gpu_power_w", "W", 1);
  CHECK(five.Tick("burnin", {}, 9, /*flush=*/true).size() == 1);
}

TEST_CASE("windows grow with the duration so a metric keeps about 600 Samples",
          "[sample_window]") {
  CHECK(SampleWindowTicks(10) == 1);
  CHECK(SampleWindowTicks(300) == 1);
  CHECK(SampleWindowTicks(600) == 1);
  CHECK(SampleWindowTicks(601) == 2);
  CHECK(SampleWindowTicks(3600) == 6);
  CHECK(SampleWindowTicks(7 * 86400) == 1008);
  for (double d : {900.0, 3600.0, 86400.0, 7 * 86400.0}) {
    INFO(d);
    CHECK(d / SampleWindowTicks(d) <= kMaxWindows);
    CHECK(d / SampleWindowTicks(d) > kMaxWindows / 2);
  }
}
