// cmax-bench collective --backend mpi under mpirun with 2 and 4 ranks; and
// the refusal outside mpirun. Skips with a message when mpirun is missing.
#include <catch2/catch.hpp>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/subprocess.h"
#include "tests/benchmarks/collective/rank_runner.h"

using cmax::testing::MeasurementsOf;
using cmax::testing::ParseRecords;

namespace {

const std::string kBench = std::string(CMAX_TEST_BIN_DIR) + "/cmax-bench";

void RunUnderMpirun(int n) {
  const std::string mpirun = cmax::FindExecutable("mpirun");
  if (mpirun.empty()) {
    FAIL("mpirun not found (apt-get install openmpi-bin)");
  }
  auto r = cmax::RunCommand(
      {mpirun, "--allow-run-as-root", "--oversubscribe", "-np", absl::StrCat(n), "--mca",
       "btl_tcp_if_include", "lo", "--mca", "oob_tcp_if_include", "lo", kBench, "collective",
       "--backend=mpi", "--op=all", "-b", "1K", "-e", "64K", "-f", "8", "-n", "3", "-w", "1",
       "-c", "1", "-d", "double", "--jsonl"},
      std::chrono::seconds(120));
  REQUIRE(r.ok());
  INFO(r->err);
  CHECK(r->exit.exited);
  CHECK(r->exit.code == 0);
  auto records = ParseRecords(r->out);
  auto busbw = MeasurementsOf(records, "busbw_gbps");
  // 3 sizes (1K, 8K, 64K) x (4 ops in and out + 2 ops out), written by rank 0 only.
  CHECK(busbw.size() == 3 * (4 * 2 + 2));
  for (const auto& m : busbw) {
    CHECK(m.labels().at("wrong") == "0");
    CHECK(m.labels().at("ranks") == absl::StrCat(n));
    CHECK(m.labels().at("backend") == "mpi");
    CHECK(m.value() > 0);
  }
  for (const auto& rec : records) {
    if (rec.has_finding()) CHECK(rec.finding().severity() < cmax::v1::SEVERITY_FAIL);
  }
}

}  // namespace

TEST_CASE("mpi: every op correct with 2 ranks under mpirun", "[collective][mpi]") {
  RunUnderMpirun(2);
}

TEST_CASE("mpi: every op correct with 4 ranks under mpirun", "[collective][mpi]") {
  RunUnderMpirun(4);
}

TEST_CASE("mpi: refused outside mpirun with a not-measured record", "[collective][mpi]") {
  auto r = cmax::RunCommand({kBench, "collective", "--backend=mpi", "--jsonl"},
                            std::chrono::seconds(30));
  REQUIRE(r.ok());
  CHECK(r->exit.exited);
  CHECK(r->exit.code == 2);
  auto records = ParseRecords(r->out);
  bool not_measured = false;
  for (const auto& rec : records) {
    if (rec.has_finding() && rec.finding().check_id() == "collective.not_measured") {
      not_measured = absl::StrContains(rec.finding().detail(), "mpirun") ||
                     absl::StrContains(rec.finding().detail(), "not built with MPI");
    }
  }
  CHECK(not_measured);
}
