// The audit on this machine (root "/"): the real kernel, "not installed" for
// what is absent, records that parse, and exit codes.
#include <sys/utsname.h>
#include <unistd.h>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "benchmarks/audit/audit.h"
#include "common/subprocess.h"
#include "tests/benchmarks/suite_run.h"
#include "tests/benchmarks/audit/audit_test_util.h"

namespace cmax::audit {
namespace {

std::string Bench() { return std::string(CMAX_TEST_BIN_DIR) + "/cmax-bench"; }

TEST_CASE("on this machine the audit reports the real kernel and what is absent",
          "[audit][system]") {
  auto db = LoadAdvisories(testing::ShippedAdvisories());
  REQUIRE(db.ok());
  AuditOptions options;  // root "/"
  AuditReport r = RunAuditChecks(options, *db);
  utsname u;
  REQUIRE(uname(&u) == 0);
  CHECK(r.kernel.running == u.release);
  REQUIRE(r.versions.size() >= 14);
  Sysroot root("/");
  CommandRunner commands(root, std::chrono::milliseconds(1000));
  for (const auto& v : r.versions) {
    INFO(v.component << " " << v.Describe());
    if (v.installed) {
      CHECK(v.source != "none");
    } else {
      CHECK(v.Describe() == "not installed");
      CHECK(v.version.empty());
    }
  }
  // Components whose every trace is absent here must say so.
  const ComponentVersion* driver = testing::FindVersion(r, "driver");
  if (!root.Exists("/proc/driver/nvidia/version") && commands.Find("nvidia-smi").empty()) {
    CHECK_FALSE(driver->installed);
    CHECK(testing::FindCheck(r, "audit.driver.branch")->status == CheckStatus::kSkipped);
  }
  const ComponentVersion* slurm = testing::FindVersion(r, "slurm");
  if (commands.Find("slurmd").empty() && !root.Exists("/var/lib/dpkg/status")) {
    CHECK_FALSE(slurm->installed);
  }
  // Nothing that was not measured is a pass.
  for (const auto& c : r.checks) {
    if (absl::StartsWith(c.found, "not installed")) CHECK(c.status != CheckStatus::kPass);
  }
}

TEST_CASE("cmax-bench audit --jsonl writes records and the kernel measurement",
          "[audit][system]") {
  auto res = cmax::testing::RunSuite("cmax-bench", {"audit", "--jsonl"},
                                     std::chrono::seconds(120));
  INFO(res.err);
  CHECK((res.exit_code == 0 || res.exit_code == 1));
  utsname u;
  uname(&u);
  bool kernel = false;
  int findings = 0;
  for (const auto& rec : res.records) {
    if (rec.has_measurement() && rec.measurement().metric() == "component_version") {
      const auto& labels = rec.measurement().labels();
      CHECK(rec.measurement().value() == 1);
      CHECK(labels.count("source") == 1);
      if (labels.at("component") == "kernel") kernel = labels.at("version") == u.release;
    }
    if (rec.has_finding()) {
      ++findings;
      const std::string& cat = rec.finding().category();
      CHECK((cat == "security" || cat == "lifecycle"));
    }
  }
  CHECK(kernel);
  CHECK(findings > 0);
}

TEST_CASE("cmax-bench audit exits 2 on a malformed advisory file and names the line",
          "[audit][system]") {
  char path[] = "/tmp/cmax-audit-adv-XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  const char text[] =
      "components: {runc: {name: runc, scheme: semver}}\n"
      "advisories:\n"
      "  - {id: OK-1, component: runc, severity: high, fixed: [1.1.12], url: u}\n"
      "  - {id: BROKEN-2, component: runc, severity: high, url: u}\n";
  REQUIRE(write(fd, text, sizeof(text) - 1) == static_cast<ssize_t>(sizeof(text) - 1));
  close(fd);
  auto res = RunCommand({Bench(), "audit", "--advisories", path}, std::chrono::seconds(60));
  unlink(path);
  REQUIRE(res.ok());
  CHECK(res->exit.code == 2);
  CHECK(absl::StrContains(res->err, ":4:"));
  CHECK(absl::StrContains(res->err, "BROKEN-2"));
}

TEST_CASE("cmax-bench audit exits 1 when a check fails and prints the CVE with -v",
          "[audit][system]") {
  testing::ScopedPath path(testing::Fixture("bin/ctk-1.17.7"));
  auto res = RunCommand({Bench(), "audit", "--root", testing::Fixture("roots/tenant"), "-v"},
                        std::chrono::seconds(60));
  REQUIRE(res.ok());
  INFO(res->out << res->err);
  CHECK(res->exit.code == 1);
  CHECK(absl::StrContains(res->out, "FAIL     NVIDIA Container Toolkit: NVIDIA-5659"));
  CHECK(absl::StrContains(res->out, "CVE-2025-23266"));
  CHECK(absl::StrContains(res->out, "link https://nvidia.custhelp.com/app/answers/detail/a_id/5659"));
  CHECK_FALSE(absl::StrContains(res->out, "\033]8;;"));  // not a terminal: plain URLs
}

TEST_CASE("cmax-bench audit --links osc8 writes terminal hyperlinks, plain and a pipe do not",
          "[audit][system]") {
  testing::ScopedPath path(testing::Fixture("bin/ctk-1.17.7"));
  const std::string root = testing::Fixture("roots/tenant");
  const std::string page = "https://nvidia.custhelp.com/app/answers/detail/a_id/5659";
  auto forced = RunCommand({Bench(), "audit", "--root", root, "-vvv", "--links", "osc8"},
                           std::chrono::seconds(60));
  REQUIRE(forced.ok());
  INFO(forced->out << forced->err);
  CHECK(forced->exit.code == 1);
  CHECK(absl::StrContains(forced->out, "link \033]8;;" + page + "\033\\" + page));
  CHECK(absl::StrContains(forced->out, "how to fix: "));
  CHECK(absl::StrContains(forced->out, "upgrade page \033]8;;https://"));
  auto plain = RunCommand({Bench(), "audit", "--root", root, "-vvv", "--links", "plain"},
                          std::chrono::seconds(60));
  REQUIRE(plain.ok());
  CHECK(absl::StrContains(plain->out, "link " + page + "\n"));
  CHECK_FALSE(absl::StrContains(plain->out, "\033]8;;"));
  auto bad = RunCommand({Bench(), "audit", "--root", root, "--links", "always"},
                        std::chrono::seconds(60));
  REQUIRE(bad.ok());
  CHECK(bad->exit.code == 2);
  CHECK(absl::StrContains(bad->err, "auto, osc8 or plain"));
}

}  // namespace
}  // namespace cmax::audit
