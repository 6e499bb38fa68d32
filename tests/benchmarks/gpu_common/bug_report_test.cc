// nvidia-bug-report.sh after a failed burn-in, with a fake tool of the same
// name placed first in PATH (the real one needs an NVIDIA driver and root).
// The fake takes the real tool's --output-file <name> and writes <name>.gz.
#include "benchmarks/gpu_common/bug_report.h"

#include <stdlib.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <cstdio>
#include <filesystem>
#include <string>

#include "tests/benchmarks/gpu_common/capture_records.h"

namespace cmax::bench {
namespace {

// SHA-256("abc"), the test vector of FIPS 180-2 appendix B.1.
constexpr char kSha256Abc[] =
    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";

// A temporary directory holding a fake nvidia-bug-report.sh (the given
// script body), put first in this process's PATH until destroyed.
class FakeTool {
 public:
  explicit FakeTool(const std::string& body) {
    char tmpl[] = "/tmp/cmax-bugreport-XXXXXX";
    dir_ = mkdtemp(tmpl);
    std::filesystem::create_directories(dir_ + "/bin");
    if (!body.empty()) {
      const std::string tool = dir_ + "/bin/" + kBugReportTool;
      FILE* f = std::fopen(tool.c_str(), "w");
      REQUIRE(f != nullptr);
      std::fputs(("#!/bin/sh\n" + body).c_str(), f);
      std::fclose(f);
      chmod(tool.c_str(), 0755);
    }
    const char* path = std::getenv("PATH");
    old_path_ = path ? path : "";
    // Without a body the PATH holds only the empty directory: no tool at all.
    setenv("PATH", (dir_ + "/bin" + (body.empty() ? "" : ":" + old_path_)).c_str(), 1);
  }
  ~FakeTool() {
    setenv("PATH", old_path_.c_str(), 1);
    std::filesystem::remove_all(dir_);
  }
  std::string out_dir() const { return dir_ + "/artifacts/node-07-1700000000"; }

 private:
  std::string dir_;
  std::string old_path_;
};

BugReportRequest Request(const FakeTool& fake) {
  return {.dir = fake.out_dir(), .node = "node-07", .timeout = std::chrono::seconds(20)};
}

const v1::Artifact* FindArtifact(const std::vector<v1::Record>& recs) {
  for (const auto& r : recs) {
    if (r.has_artifact()) return &r.artifact();
  }
  return nullptr;
}

std::string Logs(const std::vector<v1::Record>& recs) {
  std::string all;
  for (const auto& r : recs) {
    if (r.has_log()) all += r.log().level() + ": " + r.log().message() + "\n";
  }
  return all;
}

}  // namespace

TEST_CASE(
    "the bug report goes to the flag's directory, beside the agent's tasks, or /var/lib",
    "[bugreport]") {
  CHECK(BugReportDir("/data/rma", "/var/lib/cmax-agent/tasks/t1.a0.r0", "n1", 17) ==
        "/data/rma");
  CHECK(BugReportDir("", "/var/lib/cmax-agent/tasks/t1.a0.r0/", "n1", 17) ==
        "/var/lib/cmax-agent/artifacts/n1-17");
  CHECK(BugReportDir("", "", "n1", 17) == "/var/lib/cmax/artifacts/n1-17");
  CHECK(BugReportDir("", "/tmp/elsewhere", "n1", 17) == "/var/lib/cmax/artifacts/n1-17");
  // A node name from the environment never leaves the artifacts directory.
  CHECK(BugReportDir("", "", "../../etc/x y", 17) == "/var/lib/cmax/artifacts/.._.._etc_x_y-17");
  CHECK(BugReportArgv("/usr/bin/nvidia-bug-report.sh", "/d/r.log") ==
        std::vector<std::string>{"/usr/bin/nvidia-bug-report.sh", "--output-file",
                                 "/d/r.log"});
}

TEST_CASE("after a failure the report is written and named by path, size and SHA-256",
          "[bugreport]") {
  FakeTool fake(
      "[ \"$1\" = --output-file ] || { echo \"usage: $0 --output-file FILE\" >&2; exit "
      "64; }\n"
      "printf abc > \"$2.gz\"\n"
      "echo 'nvidia-bug-report.sh will now collect information'\n");
  bool ran = false;
  auto recs = CaptureRecords([&](RecordWriter* out) {
    ran = MaybeCollectBugReport(true, true, Request(fake), out);
  });
  CHECK(ran);
  const std::string file = fake.out_dir() + "/nvidia-bug-report-node-07.log.gz";
  CHECK(std::filesystem::exists(file));
  const v1::Artifact* a = FindArtifact(recs);
  REQUIRE(a != nullptr);
  CHECK(a->name() == "nvidia_bug_report.txt");
  CHECK_THAT(a->content(), Catch::Contains("node: node-07") &&
                               Catch::Contains("file: " + file) &&
                               Catch::Contains("size_bytes: 3") &&
                               Catch::Contains(std::string("sha256: ") + kSha256Abc) &&
                               Catch::Contains("--output-file " + fake.out_dir()) &&
                               Catch::Contains("exit: exit 0"));
  CHECK_THAT(a->content(), !Catch::Contains("stderr"));
  CHECK_THAT(Logs(recs), Catch::StartsWith("info: ") && Catch::Contains(kSha256Abc));
}

TEST_CASE("a failing tool leaves its exit and stderr tail in the artifact",
          "[bugreport]") {
  FakeTool fake("echo 'ERROR: Please run nvidia-bug-report.sh as root.' >&2\nexit 1\n");
  auto recs = CaptureRecords(
      [&](RecordWriter* out) { MaybeCollectBugReport(true, true, Request(fake), out); });
  const v1::Artifact* a = FindArtifact(recs);
  REQUIRE(a != nullptr);
  CHECK_THAT(a->content(),
             Catch::Contains("exit: exit 1") &&
                 Catch::Contains("Please run nvidia-bug-report.sh as root") &&
                 Catch::Contains("no report written"));
  CHECK_THAT(Logs(recs), Catch::StartsWith("warn: ") && Catch::Contains("node-07"));
}

TEST_CASE("no report unless asked for and something failed, a missing tool is said so",
          "[bugreport]") {
  FakeTool fake("printf abc > \"$2.gz\"\n");
  bool ran = true;
  auto recs = CaptureRecords([&](RecordWriter* out) {
    ran = MaybeCollectBugReport(false, true, Request(fake), out);
  });
  CHECK_FALSE(ran);
  CHECK(recs.empty());
  recs = CaptureRecords([&](RecordWriter* out) {
    ran = MaybeCollectBugReport(true, false, Request(fake), out);
  });
  CHECK_FALSE(ran);
  CHECK(recs.empty());
  CHECK_FALSE(std::filesystem::exists(fake.out_dir()));

  FakeTool none("");
  recs = CaptureRecords([&](RecordWriter* out) {
    ran = MaybeCollectBugReport(true, true, Request(none), out);
  });
  CHECK_FALSE(ran);
  CHECK(FindArtifact(recs) == nullptr);
  CHECK(Logs(recs) == "info: nvidia-bug-report.sh not found: not collected\n");
}

}  // namespace cmax::bench
