#include "benchmarks/audit/advisories.h"

#include <catch2/catch.hpp>

#include "absl/strings/match.h"

namespace cmax::audit {
namespace {

const std::string kShipped = std::string(CMAX_SOURCE_DIR) + "/benchmarks/audit/data/advisories.yaml";

const Advisory* Find(const AdvisoryDb& db, const std::string& cve) {
  for (const auto& a : db.advisories) {
    for (const auto& c : a.cves) {
      if (c == cve) return &a;
    }
  }
  return nullptr;
}

TEST_CASE("the shipped advisory file loads with its sources", "[audit][advisories]") {
  auto db = LoadAdvisories(kShipped);
  REQUIRE(db.ok());
  for (const char* cve : {"CVE-2024-0132", "CVE-2024-0133", "CVE-2024-0135", "CVE-2025-23359",
                          "CVE-2025-23266", "CVE-2025-23267", "CVE-2024-21626", "CVE-2025-31133",
                          "CVE-2025-52565", "CVE-2025-52881", "CVE-2023-41914", "CVE-2023-49933",
                          "CVE-2023-49938", "CVE-2025-43904"}) {
    const Advisory* a = Find(*db, cve);
    INFO(cve);
    REQUIRE(a != nullptr);
    CHECK(absl::StartsWith(a->url, "https://"));
    CHECK_FALSE(a->remediation.empty());
  }
  const Advisory* runc = Find(*db, "CVE-2024-21626");
  CHECK(runc->distributions.at("debian/bookworm") == "1.1.5+ds1-1+deb12u1");
  CHECK(Find(*db, "CVE-2025-23266")->fixed == std::vector<std::string>{"1.17.8"});
  CHECK_FALSE(db->driver_table_as_of.empty());
  const DriverBranchInfo* r580 = FindDriverBranch(*db, 580);
  REQUIRE(r580 != nullptr);
  CHECK(r580->status == "supported");
  CHECK(absl::StartsWith(r580->source, "https://docs.nvidia.com/"));
  REQUIRE(FindDriverBranch(*db, 550) != nullptr);
  CHECK(FindDriverBranch(*db, 550)->status == "eol");
}

TEST_CASE("a malformed advisory is an error naming the entry and line", "[audit][advisories]") {
  const std::string text =
      "components:\n"
      "  runc: {name: runc, scheme: semver}\n"
      "advisories:\n"
      "  - id: GOOD-1\n"
      "    component: runc\n"
      "    severity: high\n"
      "    fixed: [1.1.12]\n"
      "    url: https://example.invalid/a\n"
      "  - id: BAD-2\n"
      "    component: runc\n"
      "    severity: high\n"
      "    fixed: [one.two]\n"
      "    url: https://example.invalid/b\n";
  auto db = ParseAdvisories(text, "test.yaml");
  REQUIRE_FALSE(db.ok());
  std::string msg(db.status().message());
  INFO(msg);
  CHECK(absl::StrContains(msg, "test.yaml:12:"));
  CHECK(absl::StrContains(msg, "advisory #2 (BAD-2)"));
  CHECK(absl::StrContains(msg, "one.two"));
}

TEST_CASE("unknown components, severities and YAML syntax errors are rejected",
          "[audit][advisories]") {
  auto unknown = ParseAdvisories(
      "components: {runc: {name: runc, scheme: semver}}\n"
      "advisories:\n"
      "  - {id: X, component: crun, severity: high, fixed: [1.0], url: u}\n",
      "f.yaml");
  REQUIRE_FALSE(unknown.ok());
  CHECK(absl::StrContains(unknown.status().message(), "unknown component 'crun'"));
  CHECK(absl::StrContains(unknown.status().message(), "f.yaml:3:"));

  auto severity = ParseAdvisories(
      "components: {runc: {name: runc, scheme: semver}}\n"
      "advisories:\n"
      "  - {id: X, component: runc, severity: urgent, fixed: [1.0], url: u}\n",
      "f.yaml");
  REQUIRE_FALSE(severity.ok());
  CHECK(absl::StrContains(severity.status().message(), "advisory #1 (X)"));

  auto syntax = ParseAdvisories("components: {runc: [\n", "f.yaml");
  REQUIRE_FALSE(syntax.ok());
  CHECK(absl::StrContains(syntax.status().message(), "f.yaml:"));

  CHECK(LoadAdvisories("/nonexistent/advisories.yaml").status().code() ==
        absl::StatusCode::kNotFound);
}

}  // namespace
}  // namespace cmax::audit
