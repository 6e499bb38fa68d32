// The rdma judge, run the way the scorecard runs it (through AllJudges(),
// keeping its rdma.* rules): a slow rail named with both ends and blamed on
// the link, a NIC slow with every partner blamed alone, a clean fleet's pass,
// and the scorecard's node verdicts.
#include <catch2/catch.hpp>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "reports/judges.h"
#include "reports/scorecard.h"
#include "tests/reports/scorecard_test_util.h"

using cmax::reports::RunData;
using cmax::reports::testing::Meas;
using cmax::v1::RuleResult;

namespace {

// Value of rail `rail` between client `a` and server `b`.
using BwFn = std::function<double(const std::string& a, const std::string& b, int rail)>;

// Every pair of `nodes` (the rounds of scope pairs over four nodes cover all
// six), 8 rails of 400 Gb/s NDR each, write and read bandwidth at 64 KiB,
// recorded by the pair's client (the second node).
RunData Pairs(const std::vector<std::string>& nodes, const BwFn& bw) {
  RunData d;
  d.nodes = nodes;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (size_t j = i + 1; j < nodes.size(); ++j) {
      const std::string& server = nodes[i];
      const std::string& client = nodes[j];
      for (int rail = 0; rail < 8; ++rail) {
        std::map<std::string, std::string> l = {{"src", client},
                                                {"dst", server},
                                                {"hca", absl::StrCat("mlx5_", rail)},
                                                {"port", "1"},
                                                {"peer_hca", absl::StrCat("mlx5_", rail)},
                                                {"peer_port", "1"},
                                                {"rail", absl::StrCat(rail)},
                                                {"size_bytes", "65536"},
                                                {"gpu", absl::StrCat(rail)},
                                                {"link_layer", "InfiniBand"},
                                                {"port_rate_gbps", "400"},
                                                {"peer_port_rate_gbps", "400"},
                                                {"min_rate_fraction", "0.9"}};
        auto rec = Meas(client, "rdma", "rdma_write_bw_gbps", bw(client, server, rail),
                        "Gb/s", l);
        rec.set_task_id(absl::StrCat("rdma.", server, ".", client));
        d.records.push_back(rec);
        rec = Meas(client, "rdma", "rdma_read_bw_gbps", bw(client, server, rail) - 2,
                   "Gb/s", l);
        rec.set_task_id(absl::StrCat("rdma.", server, ".", client));
        d.records.push_back(rec);
      }
    }
  }
  return d;
}

std::vector<RuleResult> RdmaRules(const RunData& data) {
  std::vector<RuleResult> all, mine;
  for (auto judge : cmax::reports::AllJudges()) judge(data, &all);
  for (const auto& r : all) {
    if (r.rule_id().rfind("rdma.", 0) == 0) mine.push_back(r);
  }
  return mine;
}

std::vector<const RuleResult*> WithId(const std::vector<RuleResult>& rules,
                                      const std::string& id) {
  std::vector<const RuleResult*> out;
  for (const auto& r : rules) {
    if (r.rule_id() == id) out.push_back(&r);
  }
  return out;
}

std::string Dump(const std::vector<RuleResult>& rules) {
  std::string s;
  for (const auto& r : rules) {
    absl::StrAppend(&s, r.rule_id(), " ", r.outcome(), " node=", r.node(), " ",
                    r.subject(), ": ", r.message(), "\n");
    for (const auto& e : r.evidence()) absl::StrAppend(&s, "    ", e, "\n");
  }
  return s;
}

const std::vector<std::string> kNodes = {"node-1", "node-2", "node-3", "node-4"};

}  // namespace

TEST_CASE("rdma judge: a healthy fleet passes against the port rate and the fleet",
          "[rdma]") {
  auto rules =
      RdmaRules(Pairs(kNodes, [](auto&, auto&, int rail) { return 391.0 + rail * 0.1; }));
  INFO(Dump(rules));
  CHECK(WithId(rules, "rdma.slow_nic").empty());
  CHECK(WithId(rules, "rdma.slow_link").empty());
  auto pass = WithId(rules, "rdma.bandwidth");
  REQUIRE(pass.size() == 2);  // write and read
  for (const RuleResult* r : pass) {
    CHECK(r->outcome() == "pass");
    CHECK(r->category() == "Networking");
    CHECK_THAT(r->message(), Catch::Contains("over 48 links"));
  }
}

TEST_CASE("rdma judge: one slow rail between two nodes is the link, named with both ends",
          "[rdma]") {
  // Rail 3 between node-2 and node-3 gives 180 Gb/s (below 0.9 x 400); both
  // NICs are fine with their other partners.
  RunData d = Pairs(kNodes, [](const std::string& a, const std::string& b, int rail) {
    const bool bad = rail == 3 && ((a == "node-3" && b == "node-2") ||
                                   (a == "node-2" && b == "node-3"));
    return bad ? 180.0 : 391.0;
  });
  auto rules = RdmaRules(d);
  INFO(Dump(rules));
  CHECK(WithId(rules, "rdma.slow_nic").empty());
  auto links = WithId(rules, "rdma.slow_link");
  // One on the node that measured it (node-3, the client), one pair result
  // on no node for node-2, which only node-3's records speak of.
  REQUIRE(links.size() == 2);
  std::set<std::string> nodes;
  for (const RuleResult* r : links) {
    nodes.insert(r->node());
    CHECK(r->outcome() == "fail");
    CHECK(r->subject() == "link:node-2:mlx5_3/1 <-> node-3:mlx5_3/1");
    CHECK_THAT(r->message(), Catch::Contains("node-2:mlx5_3/1 <-> node-3:mlx5_3/1") &&
                                 Catch::Contains("slow with this partner only"));
    const std::string ev = absl::StrJoin(r->evidence(), "\n");
    CHECK_THAT(
        ev, Catch::Contains("rdma_write_bw_gbps rail 3 65536 B: 180 Gb/s < floor 360"));
    CHECK_THAT(ev, Catch::Contains("fleet outlier"));
  }
  CHECK(nodes == std::set<std::string>{"", "node-3"});
  // Only the slow metric's pass is withheld: both metrics are slow here.
  CHECK(WithId(rules, "rdma.bandwidth").empty());

  // node-3's own measurement fails node-3; node-2 is named, not failed.
  cmax::v1::Scorecard card = cmax::reports::BuildScorecard(d);
  for (const auto& n : card.nodes()) {
    INFO(n.node() << " " << n.verdict());
    CHECK((n.verdict() == "fail") == (n.node() == "node-3"));
  }
}

TEST_CASE("rdma judge: a NIC slow with every partner is blamed alone", "[rdma]") {
  // node-4's mlx5_5 is at half rate with all three partners.
  RunData d = Pairs(kNodes, [](const std::string& a, const std::string& b, int rail) {
    return rail == 5 && (a == "node-4" || b == "node-4") ? 195.0 : 391.0;
  });
  auto rules = RdmaRules(d);
  INFO(Dump(rules));
  auto nics = WithId(rules, "rdma.slow_nic");
  REQUIRE(nics.size() == 1);
  CHECK(nics[0]->node() == "node-4");
  CHECK(nics[0]->subject() == "port:node-4:mlx5_5/1");
  CHECK(nics[0]->outcome() == "fail");
  CHECK_THAT(nics[0]->message(),
             Catch::Contains("slow with every partner (3 of 3 links)"));
  // Its three links are in the evidence, each with both ends.
  const std::string ev = absl::StrJoin(nics[0]->evidence(), "\n");
  for (const char* peer : {"node-1", "node-2", "node-3"}) {
    CHECK_THAT(ev, Catch::Contains(absl::StrCat(peer, ":mlx5_5/1 <-> node-4:mlx5_5/1")));
  }
  // The partners are not blamed: no slow_link for those links.
  CHECK(WithId(rules, "rdma.slow_link").empty());
  cmax::v1::Scorecard card = cmax::reports::BuildScorecard(d);
  for (const auto& n : card.nodes()) {
    INFO(n.node() << " " << n.verdict());
    CHECK((n.verdict() == "fail") == (n.node() == "node-4"));
  }
}

TEST_CASE("rdma judge: with one pair only, NIC and cable cannot be told apart",
          "[rdma]") {
  RunData d = Pairs({"node-1", "node-2"},
                    [](auto&, auto&, int rail) { return rail == 0 ? 100.0 : 391.0; });
  auto rules = RdmaRules(d);
  INFO(Dump(rules));
  CHECK(WithId(rules, "rdma.slow_nic").empty());
  auto links = WithId(rules, "rdma.slow_link");
  REQUIRE(links.size() == 2);
  CHECK_THAT(links[0]->message(),
             Catch::Contains("node-1:mlx5_0/1 <-> node-2:mlx5_0/1") &&
                 Catch::Contains("cannot be told apart"));
}

TEST_CASE("rdma judge: only the task's latest attempt counts", "[rdma]") {
  RunData d = Pairs({"node-1", "node-2"}, [](auto&, auto&, int) { return 391.0; });
  // A first attempt that was slow on rail 2 is superseded by attempt 2.
  for (auto& rec : d.records) rec.set_attempt(2);
  auto old = d.records.front();
  old.set_attempt(1);
  old.mutable_record()->mutable_measurement()->set_value(50);
  d.records.push_back(old);
  auto rules = RdmaRules(d);
  INFO(Dump(rules));
  CHECK(WithId(rules, "rdma.slow_link").empty());
  CHECK(WithId(rules, "rdma.bandwidth").size() == 2);
}

TEST_CASE("rdma judge: a failed run is weighed like a slow one, both ends named",
          "[rdma]") {
  RunData d = Pairs(kNodes, [](auto&, auto&, int) { return 391.0; });
  // node-4's client run of ib_write_lat on rail 2 against node-1 failed.
  auto f = cmax::reports::testing::Find("node-4", "rdma", "rdma.run_failed",
                                        cmax::v1::SEVERITY_FAIL, "networking",
                                        "link:node-4:mlx5_2/1 <-> node-1:mlx5_2/1",
                                        "ib_write_lat failed on rail 2", "exit 1");
  f.set_task_id("rdma.node-1.node-4");
  auto& labels = *f.mutable_record()->mutable_finding()->mutable_labels();
  labels["src"] = "node-4";
  labels["dst"] = "node-1";
  labels["hca"] = "mlx5_2";
  labels["port"] = "1";
  labels["peer_hca"] = "mlx5_2";
  labels["peer_port"] = "1";
  labels["test"] = "write_lat";
  d.records.push_back(f);
  auto rules = RdmaRules(d);
  INFO(Dump(rules));
  CHECK(WithId(rules, "rdma.slow_nic").empty());
  auto links = WithId(rules, "rdma.slow_link");
  REQUIRE(links.size() == 2);
  for (const RuleResult* r : links) {
    CHECK(r->subject() == "link:node-1:mlx5_2/1 <-> node-4:mlx5_2/1");
    CHECK(r->outcome() == "fail");
    CHECK_THAT(absl::StrJoin(r->evidence(), "\n"),
               Catch::Contains("failed: ib_write_lat failed on rail 2"));
  }
  // The bandwidth metrics were fine everywhere: their passes stay.
  CHECK(WithId(rules, "rdma.bandwidth").size() == 2);
}
