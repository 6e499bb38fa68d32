#include "benchmarks/gpu_common/driver_check.h"

#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>

using cmax::bench::DecideDriver;
using cmax::bench::DriverProbe;
using cmax::bench::GpuAvailability;

namespace {
std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(CMAX_SOURCE_DIR) + "/tests/fixtures/gpu_common/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}
}  // namespace

TEST_CASE("an R535 driver under a CUDA 13 build is 'driver too old', not 'no GPU'", "[driver]") {
  DriverProbe p;
  p.runtime_error = cmax::bench::kCudaErrorInsufficientDriver;
  p.runtime_error_name = "cudaErrorInsufficientDriver";
  p.driver_files_present = true;
  p.proc_driver_version = Fixture("proc_driver_version_r535.txt");
  REQUIRE_FALSE(p.proc_driver_version.empty());
  p.driver_api_version = 12020;
  p.runtime_version = 13000;
  auto d = DecideDriver(p);
  CHECK(d.availability == GpuAvailability::kDriverTooOld);
  CHECK(d.exit_code == 2);
  REQUIRE(d.finding);
  CHECK(d.finding->severity() == cmax::v1::SEVERITY_FAIL);
  CHECK(d.finding->check_id() == "gpu.driver_too_old");
  CHECK_FALSE(d.finding->not_measured());
  // Names what was found and what the build needs.
  CHECK_THAT(d.message, Catch::Contains("driver too old: found 535.183.01"));
  CHECK_THAT(d.message, Catch::Contains("this build needs CUDA 13.0"));
  CHECK_THAT(d.message, Catch::Contains("R580"));
  CHECK_THAT(d.message, Catch::EndsWith("or newer"));
  CHECK_THAT(d.finding->detail(), Catch::Contains("535.183.01"));
}

TEST_CASE("the same runtime error without driver files is 'no GPU driver'", "[driver]") {
  DriverProbe p;
  p.runtime_error = cmax::bench::kCudaErrorInsufficientDriver;
  p.driver_files_present = false;
  p.runtime_version = 13000;
  auto d = DecideDriver(p);
  CHECK(d.availability == GpuAvailability::kNoDriver);
  CHECK(d.exit_code == 2);
  CHECK(d.message == "not measured: no GPU driver");
  REQUIRE(d.finding);
  CHECK(d.finding->severity() != cmax::v1::SEVERITY_FAIL);
  CHECK(d.finding->check_id() == "gpu.no_driver");
  CHECK(d.finding->not_measured());  // never a pass in the scorecard
  CHECK_FALSE(d.finding->detail().empty());
}

TEST_CASE("no device, a ready device and other errors", "[driver]") {
  DriverProbe p;
  p.runtime_error = cmax::bench::kCudaErrorNoDevice;
  p.runtime_version = 13000;
  auto none = DecideDriver(p);
  CHECK(none.availability == GpuAvailability::kNoDevice);
  CHECK(none.exit_code == 2);
  CHECK_THAT(none.message, Catch::Contains("no GPU"));
  REQUIRE(none.finding);
  CHECK(none.finding->check_id() == "gpu.no_device");
  CHECK(none.finding->not_measured());
  CHECK_THAT(none.finding->detail(), Catch::Contains("error 100"));

  p.driver_files_present = true;
  p.proc_driver_version = Fixture("proc_driver_version_r580_open.txt");
  auto hidden = DecideDriver(p);
  CHECK(hidden.availability == GpuAvailability::kNoDevice);
  REQUIRE(hidden.finding);
  CHECK(hidden.finding->severity() == cmax::v1::SEVERITY_WARN);
  CHECK(hidden.finding->not_measured());  // the WARN is a hint, not a grade
  CHECK_THAT(hidden.message, Catch::Contains("580.95.05"));

  DriverProbe ok;
  ok.device_count = 8;
  auto ready = DecideDriver(ok);
  CHECK(ready.availability == GpuAvailability::kReady);
  CHECK(ready.exit_code == 0);
  CHECK_FALSE(ready.finding);

  DriverProbe mismatch;
  mismatch.runtime_error = cmax::bench::kCudaErrorSystemDriverMismatch;
  mismatch.runtime_error_name = "cudaErrorSystemDriverMismatch";
  mismatch.driver_files_present = true;
  auto bad = DecideDriver(mismatch);
  CHECK(bad.availability == GpuAvailability::kInitFailed);
  CHECK(bad.exit_code == 2);
  REQUIRE(bad.finding);
  CHECK(bad.finding->severity() == cmax::v1::SEVERITY_FAIL);
  CHECK_FALSE(bad.finding->not_measured());  // a broken driver is a verdict
  CHECK_THAT(bad.message, Catch::Contains("cudaErrorSystemDriverMismatch"));
}

TEST_CASE("driver version strings", "[driver]") {
  CHECK(cmax::bench::ParseProcDriverVersion(Fixture("proc_driver_version_r535.txt")) ==
        "535.183.01");
  CHECK(cmax::bench::ParseProcDriverVersion(Fixture("proc_driver_version_r580_open.txt")) ==
        "580.95.05");
  CHECK(cmax::bench::ParseProcDriverVersion("garbage").empty());
  CHECK(cmax::bench::CudaVersionString(12080) == "12.8");
  CHECK(cmax::bench::CudaVersionString(13000) == "13.0");
  CHECK_THAT(cmax::bench::MinimumDriverFor(13000), Catch::StartsWith("R580"));
  CHECK_THAT(cmax::bench::MinimumDriverFor(12040), Catch::StartsWith("R525"));
}
