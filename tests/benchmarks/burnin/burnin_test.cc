// CPU burn-in through the built cmax-bench: Samples and Progress stream, no
// mismatches on a healthy machine; the test-only fault injection is caught
// and named.
#include <catch2/catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "tests/benchmarks/suite_run.h"

using namespace cmax;

namespace {

using cmax::testing::SuiteRun;

SuiteRun Burnin(const std::vector<std::string>& extra) {
  std::vector<std::string> args = {"burnin", "--backend", "cpu", "--jsonl", "--threads", "2",
                                   "--size", "256"};
  args.insert(args.end(), extra.begin(), extra.end());
  return cmax::testing::RunSuite("cmax-bench", args, std::chrono::seconds(60));
}

double MeasurementValue(const SuiteRun& r, const std::string& metric) {
  for (const auto& rec : r.records) {
    if (rec.has_measurement() && rec.measurement().metric() == metric) {
      return rec.measurement().value();
    }
  }
  FAIL("no measurement " << metric);
  return -1;
}

}  // namespace

TEST_CASE("a 3-second CPU burn-in streams samples and progress with no mismatches",
          "[burnin]") {
  SuiteRun r = Burnin({"--duration", "3"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  int gflops_samples = 0, progress = 0;
  for (const auto& rec : r.records) {
    if (rec.has_sample() && rec.sample().metric() == "burnin_gflops") {
      ++gflops_samples;
      CHECK(rec.sample().value() > 0);
    }
    progress += rec.has_progress();
    if (rec.has_finding()) CHECK(rec.finding().severity() < v1::SEVERITY_FAIL);
  }
  CHECK(gflops_samples >= 2);  // one a second
  CHECK(progress >= 2);        // start and end at least, plus every 3 s
  CHECK(MeasurementValue(r, "burnin_mismatched_elements") == 0);
  CHECK(MeasurementValue(r, "burnin_iterations") > 0);
  CHECK(MeasurementValue(r, "burnin_gflops_mean") > 0);
  CHECK(MeasurementValue(r, "burnin_gflops_min_window") > 0);
}

TEST_CASE("an injected fault is detected and named (test-only flag)", "[burnin]") {
  for (const char* dtype : {"fp32", "fp64"}) {
    SuiteRun r = Burnin({"--duration", "1", "--dtype", dtype, "--fault-inject", "2"});
    INFO(dtype << " " << r.err);
    CHECK(r.exit_code == 1);
    CHECK(MeasurementValue(r, "burnin_mismatched_elements") == 1);
    const v1::Finding* f = nullptr;
    for (const auto& rec : r.records) {
      if (rec.has_finding() && rec.finding().check_id() == "burnin.mismatch") f = &rec.finding();
    }
    REQUIRE(f != nullptr);
    CHECK(f->severity() == v1::SEVERITY_FAIL);
    CHECK(f->labels().at("iteration") == "2");
    CHECK(f->labels().at("element") == "85,128");  // row n/3, column n/2 of n=256
    CHECK(absl::StrContains(f->title(), "test only"));
  }
}

TEST_CASE("burnin refuses what it cannot run", "[burnin]") {
  CHECK(Burnin({"--duration", "1", "--dtype", "bf16"}).exit_code == 2);
  CHECK(Burnin({"--duration", "0"}).exit_code == 2);
}
