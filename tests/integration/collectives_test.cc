// Collectives across agents in network namespaces (issue 5): gloo gangs
// through the agents' rendezvous relay, and the pairs sweep.
//
// Gloo ranks listen on eth0 inside their namespace (GLOO_SOCKET_IFNAME, an
// allow-listed plan variable); the hub runs the coordinator.
#include <catch2/catch.hpp>
#include <set>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "google/protobuf/util/json_util.h"
#include "tests/integration/cluster.h"
#include "tests/integration/export_records.h"

using cmax::testing::Cluster;
using cmax::testing::kExitNotRated;
using cmax::testing::Export;
using cmax::testing::ClusterOptions;
using namespace std::chrono_literals;

namespace {

void GangEveryOpCorrect(const std::string& prefix, int agents) {
  Cluster c(prefix, {.agents = agents});
  auto started = c.Start();
  INFO(started.ToString());
  REQUIRE(started.ok());
  if (!c.using_netns()) WARN("network namespaces unavailable: agents ran on loopback");
  std::string plan = c.WritePlan("gang", R"(name: gang
suites:
  - suite: collective
    scope: gang
    ranks_per_node: 1
    timeout: 5m
    env: {GLOO_SOCKET_IFNAME: eth0}
    params: {backend: gloo, op: all, min-bytes: 1K, max-bytes: 1M, factor: 32, iters: 5,
             warmup: 1, check-iters: 1, dtype: float}
)");
  auto r = c.Ctl({"run", "--plan", plan}, 300s);
  INFO(r.out << r.err);
  CHECK(r.exit.code == kExitNotRated);
  std::set<std::string> ops;
  int busbw = 0;
  for (const auto& rec : Export(c, Cluster::RunIdFrom(r.out))) {
    if (rec.record().has_finding()) {
      CHECK(rec.record().finding().severity() < cmax::v1::SEVERITY_FAIL);
    }
    if (!rec.record().has_measurement()) continue;
    const auto& m = rec.record().measurement();
    if (m.metric() != "busbw_gbps") continue;
    ++busbw;
    ops.insert(m.labels().at("op"));
    CHECK(m.labels().at("wrong") == "0");
    CHECK(m.labels().at("ranks") == std::to_string(agents));
    CHECK(m.labels().at("group_size") == std::to_string(agents));
    for (int i = 0; i < agents; ++i) CHECK(absl::StrContains(m.labels().at("nodes"), c.node(i)));
  }
  CHECK(ops.size() == 6);
  CHECK(busbw == 3 * (4 * 2 + 2));  // 1K, 32K and 1M; in+out for 4 ops, out for 2
}

}  // namespace

TEST_CASE("gloo collectives across three agents, every op correct", "[integration][collective]") {
  GangEveryOpCorrect("co3", 3);
}

TEST_CASE("gloo collectives across four agents, every op correct", "[integration][collective]") {
  GangEveryOpCorrect("co4", 4);
}

TEST_CASE("the pairs sweep names the node whose link is slowed", "[integration][collective]") {
  Cluster c("cop", {.agents = 4});
  REQUIRE(c.Start().ok());
  if (!c.using_netns()) {
    FAIL("network namespaces unavailable: no link to slow down");
  }
  REQUIRE(c.Hosts({"slow", "2", "50mbit"}).ok());
  std::string plan = c.WritePlan("pairs", R"(name: pairs
suites:
  - suite: collective
    scope: pairs
    ranks_per_node: 1
    timeout: 5m
    env: {GLOO_SOCKET_IFNAME: eth0}
    params: {backend: gloo, op: all_reduce, min-bytes: 4M, max-bytes: 4M, iters: 3, warmup: 1}
)");
  auto r = c.Ctl({"run", "--plan", plan}, 600s);
  INFO(r.out << r.err);
  const std::string run_id = Cluster::RunIdFrom(r.out);
  auto card = c.Ctl({"report", run_id, "--format", "json"});
  REQUIRE(card.exit.code == 0);
  INFO(card.out);
  CHECK(absl::StrContains(card.out, "collective.pairs.slow_node"));
  // Four nodes meet every partner: three pairings each. Only node-2's are
  // all slow (a noisy single pairing may still be named as a link).
  CHECK(absl::StrContains(card.out, c.node(2) + ": all 3 pairings"));
  for (int i : {0, 1, 3}) CHECK_FALSE(absl::StrContains(card.out, c.node(i) + ": all 3 pairings"));
}
