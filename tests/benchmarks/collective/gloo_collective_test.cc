// cmax-bench collective --backend gloo with 3 and 4 ranks, each a child
// process of the test, meeting through a fake rendezvous socket and talking
// TCP over loopback: every op correct, busbw consistent with algbw and the
// rank count, a corrupted element detected and named.
#include <catch2/catch.hpp>
#include <map>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "benchmarks/collective_common/collective_types.h"
#include "common/suite_catalog.h"
#include "tests/benchmarks/collective/rank_runner.h"
#include "tests/scratch_dir.h"

using cmax::testing::MeasurementsOf;
using cmax::testing::RankOutput;
using cmax::testing::RunRanks;

namespace {

const std::string kBench = std::string(CMAX_TEST_BIN_DIR) + "/cmax-bench";

std::string Label(const cmax::v1::Measurement& m, const std::string& k) {
  auto it = m.labels().find(k);
  return it == m.labels().end() ? "" : it->second;
}

std::string Describe(const std::vector<RankOutput>& outs) {
  std::string s;
  for (size_t r = 0; r < outs.size(); ++r) {
    absl::StrAppend(&s, "rank ", r, ": ", outs[r].exit.Describe(),
                    outs[r].timed_out ? " (timed out)" : "", "\n", outs[r].err, "\n");
  }
  return s;
}

void CheckAllOpsCorrect(int n) {
  const cmax::testing::ScratchDir scratch;
  const std::string& dir = scratch.path;
  auto outs = RunRanks(kBench,
                       {"collective", "--backend=gloo", "--op=all", "--min-bytes=1K",
                        "--max-bytes=256K", "--factor=16", "--iters=3", "--warmup=1",
                        "--check-iters=2", "--dtype=float", "--gloo-address=127.0.0.1", "--jsonl"},
                       n, dir, std::chrono::seconds(120));
  INFO(Describe(outs));
  for (const auto& o : outs) REQUIRE(o.exit.exited);
  for (const auto& o : outs) CHECK(o.exit.code == 0);
  // Measurements come from rank 0 only.
  auto busbw = MeasurementsOf(outs[0].records, "busbw_gbps");
  auto algbw = MeasurementsOf(outs[0].records, "algbw_gbps");
  for (size_t r = 1; r < outs.size(); ++r) CHECK(MeasurementsOf(outs[r].records, "busbw_gbps").empty());
  // 3 sizes (1K, 16K, 256K) x (out + in for 4 ops, out for alltoall and sendrecv).
  CHECK(busbw.size() == 3 * (4 * 2 + 2));
  REQUIRE(busbw.size() == algbw.size());
  std::set<std::string> ops;
  for (size_t i = 0; i < busbw.size(); ++i) {
    const auto& m = busbw[i];
    ops.insert(Label(m, "op"));
    CHECK(Label(m, "wrong") == "0");
    CHECK(Label(m, "ranks") == absl::StrCat(n));
    CHECK(Label(m, "backend") == "gloo");
    CHECK(Label(m, "group_size") == absl::StrCat(n));  // node-0 ... node-(n-1)
    CHECK(absl::StrContains(Label(m, "nodes"), "node-0"));
    CHECK(m.value() > 0);
    // busbw = algbw x nccl-tests' factor for this op and rank count.
    auto op = cmax::collective::ParseOps(Label(m, "op"));
    REQUIRE(op.ok());
    CHECK(m.value() == Approx(algbw[i].value() * cmax::collective::BusFactor((*op)[0], n)));
  }
  CHECK(ops.size() == 6);
  for (const auto& o : outs) {
    for (const auto& r : o.records) {
      if (r.has_finding()) CHECK(r.finding().severity() < cmax::v1::SEVERITY_FAIL);
    }
  }
}

}  // namespace

TEST_CASE("gloo: every op correct with 3 ranks", "[collective][gloo]") { CheckAllOpsCorrect(3); }

TEST_CASE("gloo: every op correct with 4 ranks", "[collective][gloo]") { CheckAllOpsCorrect(4); }

TEST_CASE("gloo: a corrupted element fails the run and is named", "[collective][gloo]") {
  const cmax::testing::ScratchDir scratch;
  const std::string& dir = scratch.path;
  auto outs = RunRanks(kBench,
                       {"collective", "--backend", "gloo", "--op", "all_reduce", "-b", "4K", "-e",
                        "4K", "-n", "2", "-w", "1", "-c", "1", "-d", "int32",
                        "--gloo-address=127.0.0.1", "--fault-inject", "--jsonl"},
                       3, dir, std::chrono::seconds(60));
  INFO(Describe(outs));
  for (const auto& o : outs) {
    REQUIRE(o.exit.exited);
    CHECK(o.exit.code == 1);
  }
  // The last rank corrupted element 512 of 1024 of its output.
  int fails = 0;
  for (const auto& r : outs[2].records) {
    if (!r.has_finding() || r.finding().check_id() != "collective.wrong_elements") continue;
    ++fails;
    const auto& f = r.finding();
    CHECK(f.severity() == cmax::v1::SEVERITY_FAIL);
    CHECK(absl::StrContains(f.title(), "rank 2"));
    CHECK(absl::StrContains(f.title(), "node-2"));
    CHECK(absl::StrContains(f.title(), "all_reduce"));
    CHECK(absl::StrContains(f.title(), "4096 B"));
    CHECK(f.labels().at("first_wrong_index") == "512");
    CHECK(absl::StrContains(f.detail(), "expected"));
  }
  CHECK(fails == 2);  // out-of-place and in-place
  for (const auto& r : outs[0].records) CHECK(!r.has_finding());
  auto busbw = MeasurementsOf(outs[0].records, "busbw_gbps");
  REQUIRE(busbw.size() == 2);
  for (const auto& m : busbw) CHECK(Label(m, "wrong") == "1");
}

TEST_CASE("gloo: the human table has nccl-tests' columns and footer", "[collective][gloo]") {
  const cmax::testing::ScratchDir scratch;
  const std::string& dir = scratch.path;
  auto outs = RunRanks(kBench,
                       {"collective", "--backend=gloo", "--op=all_reduce,alltoall", "-b", "1K",
                        "-e", "8K", "-f", "8", "-n", "2", "-w", "0", "--gloo-address=127.0.0.1"},
                       3, dir, std::chrono::seconds(60));
  INFO(Describe(outs));
  REQUIRE(outs[0].exit.exited);
  CHECK(outs[0].exit.code == 0);
  const std::string& t = outs[0].out;
  CHECK(absl::StrContains(t, "out-of-place"));
  CHECK(absl::StrContains(t, "#wrong"));
  CHECK(absl::StrContains(t, "redop"));
  CHECK(absl::StrContains(t, "# Out of bounds values : 0 OK"));
  CHECK(absl::StrContains(t, "# Avg bus bandwidth"));
  CHECK(absl::StrContains(t, "N/A"));  // alltoall has no in-place column
  CHECK(outs[1].out.empty());          // only rank 0 prints
}

TEST_CASE("gloo: the flags the catalog builds are the ones the suite takes", "[collective][gloo]") {
  const auto* coll = cmax::FindSuite("collective");
  REQUIRE(coll != nullptr);
  auto args = cmax::BuildSuiteArgs(
      *coll, {{"backend", "gloo"}, {"op", "all_reduce,broadcast"}, {"min-bytes", "1K"},
              {"max-bytes", "4K"}, {"factor", "4"}, {"iters", "2"}, {"warmup", "1"},
              {"check-iters", "1"}, {"dtype", "int32"}, {"timeout", "60"}});
  REQUIRE(args.ok());
  REQUIRE(cmax::SuiteBinary(*coll, *args) == "cmax-bench");
  std::vector<std::string> argv = {"collective"};
  argv.insert(argv.end(), args->begin(), args->end());
  argv.push_back("--jsonl");  // the agent adds it
  argv.push_back("--gloo-address=127.0.0.1");
  const cmax::testing::ScratchDir scratch;
  const std::string& dir = scratch.path;
  auto outs = RunRanks(kBench, argv, 2, dir, std::chrono::seconds(60));
  INFO(Describe(outs));
  for (const auto& o : outs) {
    REQUIRE(o.exit.exited);
    CHECK(o.exit.code == 0);
  }
  auto busbw = MeasurementsOf(outs[0].records, "busbw_gbps");
  CHECK(busbw.size() == 2 * 2 * 2);  // 2 sizes x 2 ops x in/out
  for (const auto& m : busbw) CHECK(Label(m, "dtype") == "int32");
}
