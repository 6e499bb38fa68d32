// What a plan can make a root suite read or write, end to end: health
// --thresholds, audit --advisories and storage --path under the agent's
// limits (the environment the agent sets), with nothing of a refused file
// quoted back.
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

#include "absl/strings/match.h"
#include "common/subprocess.h"
#include "tests/benchmarks/suite_run.h"
#include "tests/scratch_dir.h"

using namespace std::chrono_literals;
using cmax::testing::RunSuite;
using cmax::testing::SuiteRun;

namespace {

using Tmp = cmax::testing::ScratchDir;

using cmax::testing::WriteFileWithMode;

constexpr char kSecret[] = "s3cr3t-token-0f9e8d7c";

bool Quotes(const SuiteRun& r, const std::string& what) {
  return absl::StrContains(r.out, what) || absl::StrContains(r.err, what);
}

}  // namespace

TEST_CASE("health --thresholds /dev/zero is refused at once, not read", "[plan_files][health]") {
  auto t0 = std::chrono::steady_clock::now();
  SuiteRun r = RunSuite("cmax-bench", {"health", "--jsonl", "--thresholds", "/dev/zero"}, 30s,
                        {{"CMAX_ALLOW_READ", "/dev"}});
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(absl::StrContains(r.err, "--thresholds /dev/zero: not a regular file"));
  CHECK(std::chrono::steady_clock::now() - t0 < 10s);
}

TEST_CASE("a 2 GB thresholds file is refused by its size", "[plan_files][health]") {
  Tmp d;
  const std::string big = d.path + "/big.yaml";
  WriteFileWithMode(big, "", 0644);
  REQUIRE(truncate(big.c_str(), int64_t{2} << 30) == 0);  // sparse
  SuiteRun r = RunSuite("cmax-bench", {"health", "--jsonl", "--thresholds", big}, 30s,
                        {{"CMAX_ALLOW_READ", d.path}});
  INFO(r.err);
  CHECK(r.exit_code == 2);
  CHECK(absl::StrContains(r.err, "more than the limit of 1048576 bytes"));
}

TEST_CASE("a root-only advisory file and one outside the allowed dirs are refused unquoted",
          "[plan_files][audit]") {
  Tmp allowed, outside;
  const std::string token = allowed.path + "/token";
  WriteFileWithMode(token, std::string("components: {") + kSecret + ": x}\n", 0600);
  SuiteRun secret = RunSuite("cmax-bench", {"audit", "--jsonl", "--advisories", token}, 60s,
                             {{"CMAX_ALLOW_READ", allowed.path}});
  INFO(secret.out << secret.err);
  CHECK(secret.exit_code == 2);
  CHECK(Quotes(secret, "readable by its owner or group only"));
  CHECK_FALSE(Quotes(secret, kSecret));

  const std::string other = outside.path + "/advisories.yaml";
  WriteFileWithMode(other, std::string("components: {") + kSecret + ": x}\n", 0644);
  SuiteRun out = RunSuite("cmax-bench", {"audit", "--jsonl", "--advisories", other}, 60s,
                          {{"CMAX_ALLOW_READ", allowed.path}});
  INFO(out.out << out.err);
  CHECK(out.exit_code == 2);
  CHECK(Quotes(out, "outside the directories this agent lets plans name"));
  CHECK_FALSE(Quotes(out, kSecret));
}

TEST_CASE("under the agent a parse error gives the place, never the content",
          "[plan_files][health][audit]") {
  Tmp d;
  const std::string th = d.path + "/thresholds.yaml";
  WriteFileWithMode(th, std::string(kSecret) + ":\n  key: 1\n", 0644);
  SuiteRun h = RunSuite("cmax-bench", {"health", "--jsonl", "--thresholds", th}, 30s,
                        {{"CMAX_ALLOW_READ", d.path}});
  INFO(h.err);
  CHECK(h.exit_code == 2);
  CHECK(absl::StrContains(h.err, "not a valid thresholds file"));
  CHECK_FALSE(Quotes(h, kSecret));

  const std::string adv = d.path + "/advisories.yaml";
  WriteFileWithMode(adv,
        std::string("components: {runc: {name: runc, scheme: semver}}\nadvisories:\n"
                    "  - {id: ") + kSecret + ", component: runc, severity: high, url: u}\n",
        0644);
  SuiteRun a = RunSuite("cmax-bench", {"audit", "--jsonl", "--advisories", adv}, 60s,
                        {{"CMAX_ALLOW_READ", d.path}});
  INFO(a.out << a.err);
  CHECK(a.exit_code == 2);
  CHECK(Quotes(a, "line 3"));
  CHECK_FALSE(Quotes(a, kSecret));
}

TEST_CASE("storage writes only under the agent's roots and defaults to its storage dir",
          "[plan_files][storage][fio]") {
  if (cmax::FindExecutable("fio").empty()) {
    FAIL("fio is not installed");
  }
  Tmp roots, outside;
  const std::string dflt = roots.path + "/storage";
  std::map<std::string, std::string> env = {{"CMAX_STORAGE_ROOTS", roots.path},
                                            {"CMAX_STORAGE_DIR", dflt},
                                            {"CMAX_NODE_NAME", "n1"}};
  SuiteRun refused = RunSuite("cmax-bench",
                              {"storage", "--jsonl", "--path", outside.path, "--pattern",
                               "seq-write", "--size", "8M", "--jobs", "1", "--duration", "1"},
                              120s, env);
  INFO(refused.err);
  CHECK(refused.exit_code == 2);
  CHECK(absl::StrContains(refused.err, "outside the storage roots"));
  CHECK(std::filesystem::is_empty(outside.path));

  // No --path: the agent's storage dir, created (it did not exist).
  REQUIRE_FALSE(std::filesystem::exists(dflt));
  SuiteRun ok = RunSuite("cmax-bench",
                         {"storage", "--jsonl", "--pattern", "seq-write", "--size", "8M",
                          "--jobs", "1", "--duration", "1"},
                         120s, env);
  INFO(ok.err);
  CHECK(ok.exit_code == 0);
  CHECK(std::filesystem::is_directory(dflt));
  CHECK(std::filesystem::is_empty(dflt));  // its work dir removed afterwards
  bool measured = false;
  for (const auto& rec : ok.records) measured |= rec.has_measurement();
  CHECK(measured);
}
