#include "benchmarks/audit/version.h"

#include <catch2/catch.hpp>

namespace cmax::audit {
namespace {

int Semver(const char* a, const char* b) {
  auto c = CompareSemver(a, b);
  REQUIRE(c.ok());
  return *c;
}

TEST_CASE("semver orders releases and pre-releases as semver.org §11", "[audit][version]") {
  CHECK(Semver("1.17.7", "1.17.8") < 0);
  CHECK(Semver("1.17.10", "1.17.8") > 0);  // numeric, not lexical
  CHECK(Semver("v1.29.2", "1.29.2") == 0);
  CHECK(Semver("1.4.0-rc.3", "1.4.0") < 0);
  CHECK(Semver("1.4.0-rc.2", "1.4.0-rc.3") < 0);
  CHECK(Semver("1.4.0-rc.10", "1.4.0-rc.3") > 0);
  CHECK(Semver("1.0.0-alpha", "1.0.0-alpha.1") < 0);
  CHECK(Semver("1.0.0-alpha.1", "1.0.0-alpha.beta") < 0);  // numeric ids first
  CHECK(Semver("1.0.0-beta.11", "1.0.0-rc.1") < 0);
  CHECK(Semver("1.0.0-rc93", "1.0.0") < 0);
  CHECK(Semver("1.1.12+build.5", "1.1.12") == 0);
  CHECK(Semver("23.02.6", "23.02.10") < 0);
  CHECK(Semver("23.11", "23.11.0") == 0);
  CHECK_FALSE(CompareSemver("1.x.2", "1.0").ok());
}

TEST_CASE("Debian versions follow Policy 5.6.12", "[audit][version]") {
  CHECK(CompareDebian("1.1.5+ds1-1+deb12u1", "1.1.5+ds1-1") > 0);
  CHECK(CompareDebian("1.0~rc1", "1.0") < 0);
  CHECK(CompareDebian("1.0~rc1-1", "1.0-1") < 0);
  CHECK(CompareDebian("1.0~~", "1.0~") < 0);
  CHECK(CompareDebian("1.0", "1.0a") < 0);       // end before letters
  CHECK(CompareDebian("1.0a", "1.0+") < 0);      // letters before other characters
  CHECK(CompareDebian("1:0.9", "2.0") > 0);      // the epoch wins
  CHECK(CompareDebian("0:2.0", "2.0") == 0);     // epoch 0 is the default
  CHECK(CompareDebian("2.0-10", "2.0-9") > 0);   // revisions by value
  CHECK(CompareDebian("1.1.12-1", "1.1.5+ds1-1+deb12u1") > 0);
  CHECK(CompareDebian("6.1.0-30-amd64", "6.1.0-28-amd64") > 0);
  CHECK(CompareDebian("2.21.5-1+cuda12.4", "2.21.5-1+cuda12.4") == 0);
}

TEST_CASE("RPM versions compare like rpmvercmp", "[audit][version]") {
  CHECK(CompareRpm("1.1.12-1.el9", "1.1.11-1.el9") > 0);
  CHECK(CompareRpm("1:1.0-1", "2.0-1") > 0);        // epoch
  CHECK(CompareRpm("1.0~rc1-1", "1.0-1") < 0);      // tilde before release
  CHECK(CompareRpm("1.0^git1-1", "1.0-1") > 0);     // caret after the version
  CHECK(CompareRpm("1.0^git1-1", "1.0.1-1") < 0);   // but before more segments
  CHECK(CompareRpm("1.0a-1", "1.0-1") > 0);         // more segments is newer
  CHECK(CompareRpm("1.0.1-1", "1.0a-1") > 0);       // numbers newer than letters
  CHECK(CompareRpm("5.14.0-427.13.1.el9_4", "5.14.0-427.13.1.el9_4") == 0);
  CHECK(CompareRpm("24.10-1.1.4.0", "23.10-1.1.9.0") > 0);
  CHECK(CompareRpm("1.0-1", "1.0-2") < 0);
}

TEST_CASE("driver versions compare within their branch only", "[audit][version]") {
  auto b = DriverBranch("580.65.06");
  REQUIRE(b.ok());
  CHECK(*b == 580);
  auto c = CompareDriver("535.274.02", "535.261.03");
  REQUIRE(c.ok());
  CHECK(*c > 0);
  auto d = CompareDriver("570.86.15", "570.172.08");
  REQUIRE(d.ok());
  CHECK(*d < 0);
  auto cross = CompareDriver("580.65.06", "570.172.08");
  CHECK(cross.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_FALSE(DriverBranch("unknown").ok());
}

TEST_CASE("firmware compares family.train.patch within the train", "[audit][version]") {
  auto t = FirmwareTrain("28.39.1002");
  REQUIRE(t.ok());
  CHECK(*t == "28.39");
  auto c = CompareFirmware("28.39.1002", "28.39.2048");
  REQUIRE(c.ok());
  CHECK(*c < 0);
  CHECK(CompareFirmware("28.39.1002", "28.40.1000").status().code() ==
        absl::StatusCode::kFailedPrecondition);
  CHECK(CompareFirmware("28.39.1002", "32.39.1002").status().code() ==
        absl::StatusCode::kFailedPrecondition);
  CHECK_FALSE(FirmwareTrain("28.39").ok());
}

TEST_CASE("a firmware fix for family xx holds on every family of its train",
          "[audit][version]") {
  auto below = CompareFirmware("28.46.2000", "xx.46.3008");
  REQUIRE(below.ok());
  CHECK(*below < 0);
  auto above = CompareFirmware("xx.46.3008", "32.46.3010");
  REQUIRE(above.ok());
  CHECK(*above < 0);
  CHECK(CompareFirmware("28.45.1000", "xx.46.3008").status().code() ==
        absl::StatusCode::kFailedPrecondition);
  CHECK(*FirmwareTrain("xx.46.3008") == "xx.46");
  CHECK_FALSE(FirmwareTrain("xx.46").ok());
}

TEST_CASE("package versions reduce to their upstream base", "[audit][version]") {
  CHECK(UpstreamBase("1.1.5+ds1-1+deb12u1") == "1.1.5");
  CHECK(UpstreamBase("1:3.3.5") == "3.3.5");
  CHECK(UpstreamBase("2.21.5-1+cuda12.4") == "2.21.5");
  CHECK(UpstreamBase("1.17.8-1") == "1.17.8");
  CHECK(MajorMinor("1.1.11") == "1.1");
  CHECK(MajorMinor("v1.4.0-rc.3") == "1.4");
  CHECK(MajorMinor("23.02.6") == "23.02");
}

}  // namespace
}  // namespace cmax::audit
