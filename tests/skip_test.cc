// The honest skip (tests/skip.h, tests/test_main.cc) on this very binary: its
// hidden [.skip_probe] cases skip, fail before skipping, or pass, and the
// cases below run them as ctest does (one case per run) and read the exit
// code ctest judges by (77: Skipped), the printed reason and the skip log.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "common/subprocess.h"
#include "tests/scratch_dir.h"
#include "tests/skip.h"

namespace cmax {
namespace {

using namespace std::chrono_literals;

TEST_CASE("skip probe: skips", "[.skip_probe]") { CMAX_SKIP("probe reason " << 42); }

TEST_CASE("skip probe: fails then skips", "[.skip_probe]") {
  CHECK(1 + 1 == 3);
  CMAX_SKIP("after a failure");
}

TEST_CASE("skip probe: passes", "[.skip_probe]") { CHECK(1 + 1 == 2); }

struct ProbeRun {
  int code = -1;
  std::string out, log;
};

// This binary with a test spec, its skip log in a scratch file (never the
// log of the ctest run around it).
ProbeRun Probe(const std::string& spec) {
  testing::ScratchDir dir;
  const std::string log = dir.path + "/skipped.tsv";
  auto r = RunCommand({std::string(CMAX_TEST_BIN_DIR) + "/skip_test", spec}, 30s, 1 << 20,
                      {{"CMAX_TEST_SKIP_LOG", log}});
  REQUIRE(r.ok());
  REQUIRE(r->exit.exited);
  ProbeRun p;
  p.code = r->exit.code;
  p.out = r->out;
  std::ifstream in(log);
  std::stringstream ss;
  ss << in.rdbuf();
  p.log = ss.str();
  return p;
}

TEST_CASE("a case that skips exits 77 and says why", "[skip]") {
  const ProbeRun p = Probe("skip probe: skips");
  INFO(p.out);
  CHECK(p.code == testing::kSkipExitCode);
  CHECK(absl::StrContains(p.out, "SKIPPED: skip probe: skips: probe reason 42"));
  CHECK(p.log == "skip_test:skip probe: skips\tprobe reason 42\n");
}

TEST_CASE("a case that fails before it skips is a failure, not a skip", "[skip]") {
  const ProbeRun p = Probe("skip probe: fails then skips");
  INFO(p.out);
  CHECK(p.code != 0);
  CHECK(p.code != testing::kSkipExitCode);
  CHECK(p.log.empty());
}

TEST_CASE("a skipped case run beside a passing one: the run passes", "[skip]") {
  const ProbeRun p = Probe("skip probe: skips,skip probe: passes");
  INFO(p.out);
  CHECK(p.code == 0);
  CHECK(p.log == "skip_test:skip probe: skips\tprobe reason 42\n");  // still logged as skipped
}

TEST_CASE("a passing case exits 0 and logs nothing", "[skip]") {
  const ProbeRun p = Probe("skip probe: passes");
  INFO(p.out);
  CHECK(p.code == 0);
  CHECK(p.log.empty());
}

}  // namespace
}  // namespace cmax
