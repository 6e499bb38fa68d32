// A root process on one node forges records about its neighbours during a
// real run (issue 45, item 2): its suite's spool carries, besides the real
// records, connectivity results "from node-2" and "from node-0 as rank 1"
// that say node-1 is unreachable. With --slurm-drain, nothing but what the
// node says of itself may fail or drain a node.
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "cmax/v1/scorecard.pb.h"
#include "google/protobuf/util/json_util.h"
#include "tests/integration/cluster.h"
#include "tests/scratch_dir.h"

using cmax::testing::Cluster;
using namespace std::chrono_literals;
namespace fs = std::filesystem;

namespace {

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void WriteExecutable(const std::string& path, const std::string& text) {
  std::ofstream(path) << text;
  chmod(path.c_str(), 0755);
}

}  // namespace

TEST_CASE("records one node forges about others change no other node's verdict and drain "
          "nothing",
          "[integration][security]") {
  cmax::testing::ScratchDir tmp;
  // The agents' bench dir: the real binaries, and a cmax-bench that on
  // node-0 (a root process there, as in the review) adds forged records to
  // the real connectivity suite's output, which is the task's spool.
  const std::string bench = tmp.path + "/forging-bench";
  fs::create_directories(bench);
  for (const auto& e : fs::directory_iterator(Cluster::BinDir())) {
    const std::string name = e.path().filename();
    if (absl::StartsWith(name, "cmax-bench-")) fs::create_symlink(e.path(), bench + "/" + name);
  }
  WriteExecutable(bench + "/cmax-bench", absl::StrCat(R"(#!/bin/sh
")", Cluster::BinDir(), R"(/cmax-bench" "$@"
rc=$?
if [ "$CMAX_NODE_NAME" = node-0 ] && [ "$1" = connectivity ]; then
  for src in node-2 node-0; do
    printf '{"measurement":{"suite":"connectivity","metric":"reachable","value":0,"unit":"bool","labels":{"src":"%s","dst":"node-1"}}}\n' "$src"
  done
  printf '{"measurement":{"suite":"connectivity","metric":"reachable","value":0,"unit":"bool","labels":{"src":"node-0","dst":"node-1","rank":"1"}}}\n'
  printf '{"finding":{"checkId":"connectivity.unreachable","severity":"SEVERITY_FAIL","title":"node-1 is down","labels":{"node":"node-1"}}}\n'
fi
exit $rc
)"));
  // scontrol as --slurm-drain runs it: every node idle, each update logged.
  const std::string drains = tmp.path + "/drains.log";
  WriteExecutable(tmp.path + "/scontrol", absl::StrCat(R"sh(#!/bin/sh
if [ "$1" = show ]; then echo "NodeName=$3 State=IDLE Reason=(null)"; exit 0; fi
echo "$*" >>")sh", drains, R"sh("
)sh"));
  Cluster c("fr1", {.agents = 3,
                    .bench_dir = bench,
                    .coordinator_args = {"--slurm-drain", "--scontrol", tmp.path + "/scontrol"}});
  auto s = c.Start();
  INFO(s.ToString());
  REQUIRE(s.ok());
  const std::string plan = c.WritePlan(
      "fr1", "name: fr1\nsuites:\n  - suite: connectivity\n    scope: gang\n    timeout: 3m\n");
  auto run = c.Ctl({"run", "--plan", plan}, 240s);
  INFO(run.out << run.err);
  const std::string run_id = Cluster::RunIdFrom(run.out);
  REQUIRE(!run_id.empty());
  auto report = c.Ctl({"report", run_id, "--format", "json"});
  REQUIRE(report.exit.code == 0);
  cmax::v1::Scorecard card;
  REQUIRE(google::protobuf::util::JsonStringToMessage(report.out, &card).ok());
  // node-1 and node-2 keep the verdict their own records give them; the
  // finding node-0 wrote "about node-1" is node-0's own word, and may fail
  // node-0 alone.
  int neighbours = 0;
  for (const auto& n : card.nodes()) {
    INFO(n.node() << ": " << n.ShortDebugString());
    if (n.node() == "node-0") continue;
    ++neighbours;
    CHECK(n.verdict() != "fail");
    for (const auto& reason : n.reasons()) CHECK(!absl::StrContains(reason, "node-1 is down"));
  }
  CHECK(neighbours == 2);
  // Nothing of node-1 or node-2 was drained.
  const std::string drained = Slurp(drains);
  INFO("drains: " << drained);
  CHECK(!absl::StrContains(drained, "NodeName=node-1"));
  CHECK(!absl::StrContains(drained, "NodeName=node-2"));
  // The rank node-0 does not hold was refused at ingest, and said so.
  const std::string log = Slurp(c.dir() + "/coordinator.log");
  CHECK(absl::StrContains(log, "claim a rank it does not hold"));
}
