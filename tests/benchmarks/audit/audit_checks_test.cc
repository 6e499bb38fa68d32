// The audit's checks on fixture roots and fake commands.
#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "benchmarks/audit/audit.h"
#include "benchmarks/audit/version_checks.h"
#include "tests/benchmarks/audit/audit_test_util.h"

namespace cmax::audit {
namespace {

using testing::AuditFixture;
using testing::FindCheck;
using testing::FindVersion;
using testing::Fixture;

AdvisoryDb Shipped() {
  auto db = LoadAdvisories(testing::ShippedAdvisories());
  REQUIRE(db.ok());
  return *db;
}

bool HasLink(const CheckResult& c, const std::string& needle) {
  for (const auto& l : c.links) {
    if (absl::StrContains(l, needle)) return true;
  }
  return false;
}

TEST_CASE("Container Toolkit 1.17.7 fails NVIDIAScape with its link, 1.17.8 passes it",
          "[audit]") {
  AdvisoryDb db = Shipped();
  AuditReport old = AuditFixture(Fixture("bin/empty"), "ctk-1.17.7", db);
  const ComponentVersion* v = FindVersion(old, "container_toolkit");
  REQUIRE(v != nullptr);
  CHECK(v->version == "1.17.7");
  CHECK(v->source == "upstream binary");
  const CheckResult* c = FindCheck(old, "audit.advisory.NVIDIA-5659");
  REQUIRE(c != nullptr);
  CHECK(c->status == CheckStatus::kFail);
  CHECK(std::find(c->cves.begin(), c->cves.end(), "CVE-2025-23266") != c->cves.end());
  CHECK(HasLink(*c, "nvidia.custhelp.com/app/answers/detail/a_id/5659"));
  CHECK(c->required == ">= 1.17.8");
  CHECK(FindingSeverity(*c) == v1::SEVERITY_CRITICAL);  // the advisory is rated critical
  CHECK(ExitCodeFor(old) == 1);

  AuditReport fixed = AuditFixture(Fixture("bin/empty"), "ctk-1.17.8", db);
  const CheckResult* f = FindCheck(fixed, "audit.advisory.NVIDIA-5659");
  REQUIRE(f != nullptr);
  CHECK(f->status == CheckStatus::kPass);
  // ... and every advisory before June 2026; NVIDIA-5850 (June 2026, high:
  // up to and including 1.19.0 affected, fixed in 1.19.1) fails it.
  for (const auto& check : fixed.checks) {
    if (check.component != "container_toolkit") continue;
    CHECK(check.status == (check.advisory_id == "NVIDIA-5850" ? CheckStatus::kFail
                                                              : CheckStatus::kPass));
  }
  CHECK(FindCheck(fixed, "audit.advisory.NVIDIA-5850")->required == ">= 1.19.1");
}

TEST_CASE("an installed component whose version cannot be read is UNKNOWN, never a pass",
          "[audit]") {
  AuditReport r = AuditFixture(Fixture("bin/empty"), "ctk-broken", Shipped());
  const ComponentVersion* v = FindVersion(r, "container_toolkit");
  REQUIRE(v != nullptr);
  CHECK(v->installed);
  CHECK(v->version.empty());
  CHECK(absl::StrContains(v->error, "exit 127"));
  const CheckResult* c = FindCheck(r, "audit.version.container_toolkit");
  REQUIRE(c != nullptr);
  CHECK(c->status == CheckStatus::kUnknown);
  CHECK(FindCheck(r, "audit.advisory.NVIDIA-5659") == nullptr);
}

TEST_CASE("upstream runc 1.1.11 fails Leaky Vessels", "[audit]") {
  AuditReport r = AuditFixture(Fixture("bin/empty"), "runc-1.1.11", Shipped());
  const ComponentVersion* v = FindVersion(r, "runc");
  REQUIRE(v != nullptr);
  CHECK(v->version == "1.1.11");
  CHECK(v->source == "upstream binary");
  const CheckResult* c = FindCheck(r, "audit.advisory.GHSA-xr7r-f8xq-vfvv");
  REQUIRE(c != nullptr);
  CHECK(c->status == CheckStatus::kFail);
  CHECK(c->required == ">= 1.1.12");
  // The 1.1 series got no fix for the 2025 escapes either.
  const CheckResult* c2025 = FindCheck(r, "audit.advisory.CVE-2025-31133");
  REQUIRE(c2025 != nullptr);
  CHECK(c2025->status == CheckStatus::kFail);
}

TEST_CASE("Debian's backported runc passes CVE-2024-21626, the unpatched package fails",
          "[audit]") {
  AdvisoryDb db = Shipped();
  AuditReport patched = AuditFixture(Fixture("roots/debian-runc-deb12u1"), "empty", db);
  const ComponentVersion* v = FindVersion(patched, "runc");
  REQUIRE(v != nullptr);
  CHECK(v->source == "dpkg");
  CHECK(v->version == "1.1.5+ds1-1+deb12u1");
  CHECK(v->distribution_package);
  CHECK(v->distro == "debian/bookworm");
  const CheckResult* ok = FindCheck(patched, "audit.advisory.GHSA-xr7r-f8xq-vfvv");
  REQUIRE(ok != nullptr);
  CHECK(ok->status == CheckStatus::kPass);
  CHECK(absl::StrContains(ok->required, "1.1.5+ds1-1+deb12u1"));
  // No Debian fix is recorded for the 2025 advisory: not a false alarm, not a pass.
  const CheckResult* unknown = FindCheck(patched, "audit.advisory.CVE-2025-31133");
  REQUIRE(unknown != nullptr);
  CHECK(unknown->status == CheckStatus::kUnknown);
  // containerd is only in config-files state: not installed.
  CHECK_FALSE(FindVersion(patched, "containerd")->installed);

  AuditReport unpatched = AuditFixture(Fixture("roots/debian-runc-unpatched"), "empty", db);
  const CheckResult* bad = FindCheck(unpatched, "audit.advisory.GHSA-xr7r-f8xq-vfvv");
  REQUIRE(bad != nullptr);
  CHECK(bad->status == CheckStatus::kFail);
  CHECK(absl::StrContains(bad->why, "debian/bookworm package 1.1.5+ds1-1 is older"));
}

TEST_CASE("driver branches: newer than the fix passes, end of life warns or fails, unknown",
          "[audit]") {
  AdvisoryDb db = Shipped();
  // R535 (supported until 2026-06) at 535.274.02, newer than its fixes.
  AuditReport r535 = AuditFixture(Fixture("roots/driver-535"), "empty", db, Tenancy::kUnspecified,
                                  "2025-10");
  CHECK(FindVersion(r535, "driver")->version == "535.274.02");
  CHECK(FindCheck(r535, "audit.advisory.NVIDIA-5670")->status == CheckStatus::kPass);
  CHECK(FindCheck(r535, "audit.advisory.NVIDIA-5614")->status == CheckStatus::kPass);
  CHECK(FindCheck(r535, "audit.driver.branch")->status == CheckStatus::kPass);
  // The same driver once its branch is past end of life: it also misses the
  // 2026 R535 fixes (NVIDIA-5747: 535.288.01, NVIDIA-5821: 535.309.01), so
  // it fails under security (an end-of-life branch with nothing missed only
  // warns: refresh_test).
  AuditReport later = AuditFixture(Fixture("roots/driver-535"), "empty", db,
                                   Tenancy::kUnspecified, "2026-07");
  const CheckResult* eol = FindCheck(later, "audit.driver.branch");
  CHECK(eol->status == CheckStatus::kFail);
  CHECK(eol->category == "security");
  CHECK(absl::StrContains(eol->why, "end of life"));
  CHECK(absl::StrContains(eol->why, "NVIDIA-5821"));

  // R550 is end of life and the July 2025 fixes exist only on R570 and R535.
  AuditReport r550 = AuditFixture(Fixture("roots/driver-550"), "empty", db);
  CHECK(FindVersion(r550, "driver")->version == "550.163.01");
  const CheckResult* branch = FindCheck(r550, "audit.driver.branch");
  CHECK(branch->status == CheckStatus::kFail);
  CHECK(absl::StrContains(branch->why, "NVIDIA-5670"));
  const CheckResult* adv = FindCheck(r550, "audit.advisory.NVIDIA-5670");
  CHECK(adv->status == CheckStatus::kFail);
  CHECK(absl::StrContains(adv->why, "R550 has no fixed release"));
  // January 2025 had an R550 fix, and 550.163.01 has it.
  CHECK(FindCheck(r550, "audit.advisory.NVIDIA-5614")->status == CheckStatus::kPass);

  AuditReport r600 = AuditFixture(Fixture("roots/driver-600"), "empty", db);
  CHECK(FindCheck(r600, "audit.driver.branch")->status == CheckStatus::kUnknown);
}

TEST_CASE("P_Key: only 0xffff warns on InfiniBand, not on RoCE, tenancy decides",
          "[audit][ib]") {
  AdvisoryDb db = Shipped();
  AuditReport r = AuditFixture(Fixture("roots/fabric"), "empty", db);
  const CheckResult* ib = FindCheck(r, "audit.ib.pkey", "port:mlx5_0/1");
  REQUIRE(ib != nullptr);
  CHECK(ib->status == CheckStatus::kWarn);
  CHECK(ib->found == "0xffff");
  CHECK(FindCheck(r, "audit.ib.pkey", "port:mlx5_1/1") == nullptr);  // RoCE: not judged
  const CheckResult* roce = FindCheck(r, "audit.roce.gids", "port:mlx5_1/1");
  REQUIRE(roce != nullptr);
  CHECK(roce->status == CheckStatus::kInfo);
  CHECK(absl::StrContains(roce->found, "RoCE v2"));
  CHECK(absl::StrContains(roce->why, "ens1f0np0.100"));
  // smpquery is not on PATH: M_Key not measured, never a pass.
  CHECK(FindCheck(r, "audit.ib.mkey", "port:mlx5_0/1")->status == CheckStatus::kUnknown);
  CHECK(FindCheck(r, "audit.ib.mkey", "port:mlx5_0/1")->not_measured);
  // opensm.conf with OpenSM's defaults.
  const CheckResult* sm = FindCheck(r, "audit.ib.opensm_keys");
  REQUIRE(sm != nullptr);
  CHECK(sm->status == CheckStatus::kFail);
  CHECK(absl::StrContains(sm->why, "m_key is 0"));
  // Firmware: two ConnectX-7 ports on one version.
  CHECK(FindCheck(r, "audit.firmware.uniform.28")->status == CheckStatus::kPass);

  CHECK(FindCheck(AuditFixture(Fixture("roots/fabric"), "empty", db, Tenancy::kShared),
                  "audit.ib.pkey", "port:mlx5_0/1")
            ->status == CheckStatus::kFail);
  CHECK(FindCheck(AuditFixture(Fixture("roots/fabric"), "empty", db, Tenancy::kSingle),
                  "audit.ib.pkey", "port:mlx5_0/1")
            ->status == CheckStatus::kInfo);
}

TEST_CASE("M_Key through smpquery: protect bits 0 fail, a drop with NodeInfo passes",
          "[audit][ib]") {
  AdvisoryDb db = Shipped();
  AuditReport unprotected = AuditFixture(Fixture("roots/fabric"), "smpquery-protect0", db);
  const CheckResult* open = FindCheck(unprotected, "audit.ib.mkey", "port:mlx5_0/1");
  REQUIRE(open != nullptr);
  CHECK(open->status == CheckStatus::kFail);
  CHECK(absl::StrContains(open->found, "ProtectBits 0"));
  CHECK(absl::StrContains(absl::StrJoin(open->evidence, " "), "portinfo 5 1"));

  AuditReport dropped = AuditFixture(Fixture("roots/fabric"), "smpquery-drop", db);
  CHECK(FindCheck(dropped, "audit.ib.mkey", "port:mlx5_0/1")->status == CheckStatus::kPass);

  AuditReport denied = AuditFixture(Fixture("roots/fabric"), "smpquery-denied", db);
  CHECK(FindCheck(denied, "audit.ib.mkey", "port:mlx5_0/1")->status == CheckStatus::kUnknown);
  CHECK(FindCheck(denied, "audit.ib.mkey", "port:mlx5_0/1")->not_measured);
  // An answered query is a measurement.
  CHECK_FALSE(FindCheck(unprotected, "audit.ib.mkey", "port:mlx5_0/1")->not_measured);
}

TEST_CASE("smpquery portinfo output parses", "[audit][ib]") {
  PortInfoKeys k = ParseSmpPortInfo(
      "# Port info: Lid 5 port 1\nMkey:............................0x00000000deadbeef\n"
      "MkeyLeasePeriod:.................60\nProtectBits:.....................2\n");
  CHECK(k.has_mkey);
  CHECK(k.mkey == 0xdeadbeefULL);
  CHECK(k.protect_bits == 2);
  CHECK(k.lease_period == 60);
}

TEST_CASE("a stale kernel and a pending reboot are lifecycle warnings", "[audit]") {
  AuditReport r = AuditFixture(Fixture("roots/kernel-stale"), "empty", Shipped());
  CHECK(r.kernel.running == "6.1.0-28-amd64");
  CHECK(r.kernel.newest == "6.1.0-30-amd64");
  const CheckResult* newest = FindCheck(r, "audit.kernel.newest");
  CHECK(newest->status == CheckStatus::kWarn);
  CHECK(newest->category == "lifecycle");
  const CheckResult* reboot = FindCheck(r, "audit.kernel.reboot_required");
  CHECK(reboot->status == CheckStatus::kWarn);
  CHECK(absl::StrContains(reboot->why, "linux-image-6.1.0-30-amd64"));
}

TEST_CASE("dpkg status and os-release parse", "[audit]") {
  auto pkgs = ParseDpkgStatus(
      "Package: a\nStatus: install ok installed\nVersion: 1.0-1\n\n"
      "Package: b\nStatus: deinstall ok config-files\nVersion: 2.0\n\n"
      "Package: c\nVersion: 3:4.5\nStatus: install ok installed\nDescription: x\n more\n");
  CHECK(pkgs.size() == 2);
  CHECK(pkgs["a"] == "1.0-1");
  CHECK(pkgs["c"] == "3:4.5");
  CHECK(DistroFromOsRelease("ID=ubuntu\nVERSION_ID=\"22.04\"\nVERSION_CODENAME=jammy\n") ==
        "ubuntu/jammy");
  CHECK(DistroFromOsRelease("ID=\"rhel\"\nVERSION_ID=\"9.4\"\n") == "rhel/9");
}

}  // namespace
}  // namespace cmax::audit
