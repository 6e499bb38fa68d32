// The audit's human output: verbosity levels and links (OSC 8 or plain).
#include <cstdio>
#include <cstdlib>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "benchmarks/audit/audit.h"
#include "tests/benchmarks/audit/audit_test_util.h"

namespace cmax::audit {
namespace {

using testing::AuditFixture;
using testing::Fixture;

constexpr char kAdvisoryPage[] = "https://nvidia.custhelp.com/app/answers/detail/a_id/5659";
constexpr char kOsc8[] = "\033]8;;";

std::string Human(const AuditReport& report, int verbosity, bool hyperlinks) {
  char* buf = nullptr;
  size_t size = 0;
  FILE* f = open_memstream(&buf, &size);
  REQUIRE(f != nullptr);
  HumanOptions o;
  o.verbosity = verbosity;
  o.hyperlinks = hyperlinks;
  WriteHuman(report, o, f);
  std::fclose(f);
  std::string out(buf, size);
  std::free(buf);
  return out;
}

AuditReport OldToolkit() {
  auto db = LoadAdvisories(testing::ShippedAdvisories());
  REQUIRE(db.ok());
  return AuditFixture(Fixture("bin/empty"), "ctk-1.17.7", *db);
}

// The failing Container Toolkit check alone, for its lines.
AuditReport OnlyToolkitCheck(AuditReport r) {
  std::vector<CheckResult> kept;
  for (auto& c : r.checks) {
    if (c.check_id == "audit.advisory.NVIDIA-5659") kept.push_back(c);
  }
  REQUIRE(kept.size() == 1);
  r.checks = kept;
  return r;
}

TEST_CASE("audit output: -v adds the advisory, -vv why it matters, -vvv how to fix",
          "[audit][report]") {
  const AuditReport r = OnlyToolkitCheck(OldToolkit());
  const CheckResult& c = r.checks.front();
  CHECK(c.advisory_url == kAdvisoryPage);
  CHECK(c.component_name == "NVIDIA Container Toolkit");
  CHECK(absl::StartsWith(c.upgrade_url, "https://docs.nvidia.com/datacenter/cloud-native/"));

  const std::string v0 = Human(r, 0, false);
  CHECK(absl::StrContains(v0, "FAIL     NVIDIA Container Toolkit: NVIDIA-5659"));
  CHECK(absl::StrContains(v0, "required >= 1.17.8"));
  CHECK_FALSE(absl::StrContains(v0, "advisory NVIDIA-5659"));

  const std::string v1 = Human(r, 1, false);
  CHECK(absl::StrContains(v1, "advisory NVIDIA-5659 (critical): CVE-2025-23266"));
  CHECK(absl::StrContains(v1, std::string("link ") + kAdvisoryPage));
  CHECK_FALSE(absl::StrContains(v1, "why it matters"));

  const std::string v2 = Human(r, 2, false);
  CHECK(absl::StrContains(v2, "why it matters: "));
  CHECK(absl::StrContains(v2, "evidence: "));
  CHECK_FALSE(absl::StrContains(v2, "how to fix"));
  CHECK_FALSE(absl::StrContains(v2, "upgrade page"));

  const std::string v3 = Human(r, 3, false);
  CHECK(absl::StrContains(v3, "how to fix: "));
  CHECK(absl::StrContains(v3, "upgrade page " + c.upgrade_url));
  CHECK_FALSE(absl::StrContains(v3, kOsc8));
}

TEST_CASE("audit output: without the table's text, why and fix are said from its entry",
          "[audit][report]") {
  AuditReport r = OnlyToolkitCheck(OldToolkit());
  r.checks.front().description.clear();
  r.checks.front().remediation.clear();
  const std::string out = Human(r, 3, false);
  CHECK(absl::StrContains(out, "why it matters: NVIDIA Container Toolkit has a critical advisory, "
                               "NVIDIA-5659 (CVE-2025-23266"));
  CHECK(absl::StrContains(out, "how to fix: upgrade NVIDIA Container Toolkit to 1.17.8 or later (" +
                                   r.checks.front().upgrade_url + ")"));
  // A passing check gets no fix, neither invented nor the table's.
  r.checks.front().status = CheckStatus::kPass;
  CHECK_FALSE(absl::StrContains(Human(r, 3, false), "how to fix"));
  r.checks.front().remediation = "Upgrade nvidia-container-toolkit to 1.17.8 or newer.";
  CHECK_FALSE(absl::StrContains(Human(r, 3, false), "how to fix"));
}

TEST_CASE("audit output: OSC 8 hyperlinks only when asked, never for hostile URLs",
          "[audit][report]") {
  AuditReport r = OnlyToolkitCheck(OldToolkit());
  const std::string linked = Human(r, 3, true);
  CHECK(absl::StrContains(linked, std::string(kOsc8) + kAdvisoryPage + "\033\\" + kAdvisoryPage +
                                      kOsc8 + "\033\\"));
  CHECK(absl::StrContains(linked, std::string("upgrade page ") + kOsc8));
  CHECK_FALSE(absl::StrContains(Human(r, 3, false), kOsc8));

  r.checks.front().links = {"javascript:alert(1)", "https://example.com/\033]8;;evil\a"};
  const std::string hostile = Human(r, 1, true);
  CHECK(absl::StrContains(hostile, "link javascript:alert(1)\n"));
  CHECK(absl::StrContains(hostile, "link https://example.com/?]8;;evil?\n"));
  CHECK_FALSE(absl::StrContains(hostile, std::string(kOsc8) + "javascript"));
  CHECK_FALSE(absl::StrContains(hostile, "\033]8;;evil"));
}

TEST_CASE("links mode auto means a terminal whose TERM is set and not dumb", "[audit][report]") {
  CHECK(UseHyperlinks(LinkMode::kAuto, true, "xterm-256color"));
  CHECK_FALSE(UseHyperlinks(LinkMode::kAuto, true, "dumb"));
  CHECK_FALSE(UseHyperlinks(LinkMode::kAuto, true, ""));
  CHECK_FALSE(UseHyperlinks(LinkMode::kAuto, true, nullptr));
  CHECK_FALSE(UseHyperlinks(LinkMode::kAuto, false, "xterm"));
  CHECK(UseHyperlinks(LinkMode::kOsc8, false, nullptr));
  CHECK_FALSE(UseHyperlinks(LinkMode::kPlain, true, "xterm"));
  CHECK(*ParseLinkMode("") == LinkMode::kAuto);
  CHECK(*ParseLinkMode("osc8") == LinkMode::kOsc8);
  CHECK(*ParseLinkMode("plain") == LinkMode::kPlain);
  CHECK_FALSE(ParseLinkMode("always").ok());
}

}  // namespace
}  // namespace cmax::audit
