// The connectivity judge, run the way the scorecard runs it: through
// AllJudges(), keeping its rules (connectivity.*), plus the scorecard's
// verdict for a node nobody reaches.
#include <catch2/catch.hpp>
#include <set>
#include <string>
#include <vector>

#include "reports/judges.h"
#include "reports/scorecard.h"
#include "tests/reports/scorecard_test_util.h"

using cmax::reports::RunData;
using cmax::reports::testing::Meas;
using cmax::v1::RuleResult;

namespace {

// A measured full mesh over `nodes`; `down` directed pairs unreachable;
// `rtt(src, dst)` gives each pair's RTT.
template <typename RttFn>
RunData Mesh(const std::vector<std::string>& nodes,
             const std::set<std::pair<std::string, std::string>>& down, RttFn rtt) {
  RunData d;
  d.nodes = nodes;
  for (size_t i = 0; i < nodes.size(); ++i) {
    for (size_t j = 0; j < nodes.size(); ++j) {
      if (i == j) continue;
      const std::string& s = nodes[i];
      const std::string& t = nodes[j];
      std::map<std::string, std::string> labels = {
          {"src", s}, {"dst", t}, {"src_rank", std::to_string(i)},
          {"dst_rank", std::to_string(j)}, {"dst_addr", "10.0.0." + std::to_string(10 + j)}};
      bool ok = !down.count({s, t});
      d.records.push_back(Meas(s, "connectivity", "reachable", ok ? 1 : 0, "bool", labels));
      if (ok) {
        d.records.push_back(Meas(s, "connectivity", "rtt_ms", rtt(s, t), "ms", labels));
        d.records.push_back(Meas(s, "connectivity", "transfer_mbps", 9000, "Mbit/s", labels));
      }
    }
  }
  return d;
}

double Flat(const std::string&, const std::string&) { return 0.1; }

std::vector<RuleResult> Judge(const RunData& data) {
  std::vector<RuleResult> all, mine;
  for (auto judge : cmax::reports::AllJudges()) judge(data, &all);
  for (auto& r : all) {
    if (r.rule_id().rfind("connectivity.", 0) == 0) mine.push_back(r);
  }
  return mine;
}

std::vector<const RuleResult*> Rules(const std::vector<RuleResult>& rs, const std::string& id) {
  std::vector<const RuleResult*> out;
  for (const auto& r : rs) {
    if (r.rule_id() == id) out.push_back(&r);
  }
  return out;
}

bool Mentions(const RuleResult& r, const std::string& text) {
  return r.message().find(text) != std::string::npos;
}

}  // namespace

TEST_CASE("a healthy mesh passes with every pair counted", "[reports][connectivity]") {
  auto rs = Judge(Mesh({"a", "b", "c", "d"}, {}, Flat));
  auto matrix = Rules(rs, "connectivity.matrix");
  REQUIRE(matrix.size() == 1);
  CHECK(matrix[0]->outcome() == "pass");
  CHECK(matrix[0]->category() == "Networking");
  CHECK(Mentions(*matrix[0], "4 nodes, 12 of 12 directed pairs measured, 0 unreachable"));
  for (const auto& r : rs) CHECK(r.outcome() == "pass");
  auto rtt = Rules(rs, "connectivity.rtt");
  REQUIRE(rtt.size() == 1);
  CHECK(rtt[0]->value() == Approx(0.1));
}

TEST_CASE("a blocked pair fails both directions' destinations and names both nodes",
          "[reports][connectivity]") {
  auto rs = Judge(Mesh({"a", "b", "c"}, {{"a", "c"}, {"c", "a"}}, Flat));
  auto matrix = Rules(rs, "connectivity.matrix");
  REQUIRE(matrix.size() == 1);
  CHECK(matrix[0]->outcome() == "fail");
  CHECK(Mentions(*matrix[0], "6 of 6 directed pairs measured, 2 unreachable"));
  auto pairs = Rules(rs, "connectivity.unreachable_pair");
  REQUIRE(pairs.size() == 2);
  std::set<std::string> failed;
  for (const auto* r : pairs) {
    CHECK(r->outcome() == "fail");
    failed.insert(r->node());
    CHECK(Mentions(*r, "a"));
    CHECK(Mentions(*r, "c"));
  }
  CHECK(failed == std::set<std::string>{"a", "c"});
  // Both directions fail: nothing is asymmetric, and c is still reached by b.
  CHECK(Rules(rs, "connectivity.asymmetric").empty());
  CHECK(Rules(rs, "connectivity.unreachable_node").empty());
  CHECK(Mentions(*Rules(rs, "connectivity.unreachable_pair")[0], "10.0.0."));
}

TEST_CASE("one-way reachability is a warning naming both", "[reports][connectivity]") {
  auto rs = Judge(Mesh({"a", "b", "c"}, {{"b", "c"}}, Flat));
  auto asym = Rules(rs, "connectivity.asymmetric");
  REQUIRE(asym.size() == 1);
  CHECK(asym[0]->outcome() == "warn");
  CHECK(asym[0]->node() == "b");
  CHECK(Mentions(*asym[0], "c reaches b but b does not reach c"));
}

TEST_CASE("a node nobody reaches fails as unreachable from every peer",
          "[reports][connectivity]") {
  RunData d = Mesh({"a", "b", "c", "d"}, {{"a", "d"}, {"b", "d"}, {"c", "d"}}, Flat);
  auto rs = Judge(d);
  auto node = Rules(rs, "connectivity.unreachable_node");
  REQUIRE(node.size() == 1);
  CHECK(node[0]->node() == "d");
  CHECK(node[0]->outcome() == "fail");
  CHECK(Mentions(*node[0], "unreachable from every peer"));
  // Covered by the node rule, not repeated pair by pair.
  CHECK(Rules(rs, "connectivity.unreachable_pair").empty());
  // d reaches the others: each of them sees d's one-way traffic.
  CHECK(Rules(rs, "connectivity.asymmetric").size() == 3);

  // The scorecard fails d's verdict.
  cmax::v1::Scorecard card = cmax::reports::BuildScorecard(d);
  bool found = false;
  for (const auto& v : card.nodes()) {
    if (v.node() != "d") continue;
    found = true;
    CHECK(v.verdict() == "fail");
  }
  CHECK(found);
}

TEST_CASE("slow pairs are blamed on the node they share", "[reports][connectivity]") {
  auto rtt = [](const std::string& s, const std::string& t) {
    return (s == "e" || t == "e") ? 2.0 : 0.1;
  };
  // 10 nodes, 90 pairs: the 18 pairs with e are a fifth of them.
  auto rs = Judge(Mesh({"a", "b", "c", "d", "e", "f", "g", "h", "i", "j"}, {}, rtt));
  auto slow = Rules(rs, "connectivity.rtt");
  REQUIRE(slow.size() == 1);
  CHECK(slow[0]->outcome() == "warn");
  CHECK(slow[0]->node() == "e");
  CHECK(Mentions(*slow[0], "e is in 18 of 18 pairs"));
}

TEST_CASE("no connectivity records: no connectivity rules", "[reports][connectivity]") {
  RunData d;
  d.records.push_back(Meas("a", "hostcheck", "gpu_count", 8, "count"));
  CHECK(Judge(d).empty());
}

TEST_CASE("RTT noise of tens of microseconds is no slow pair, a real excess still is",
          "[reports][connectivity]") {
  // The quickstart's loopback fleet: a median of 0.0375 ms and one pair at
  // 0.095 ms, past the Tukey fence but 2.5x only 57 us more: noise.
  auto noisy = [](const std::string& s, const std::string& t) {
    return (s == "a" && t == "b") ? 0.095 : 0.0375;
  };
  auto rs = Judge(Mesh({"a", "b", "c"}, {}, noisy));
  auto rtt = Rules(rs, "connectivity.rtt");
  REQUIRE(rtt.size() == 1);
  CHECK(rtt[0]->outcome() == "pass");
  // 0.05 ms against a 0.04 ms fleet: 25% off, but 10 us is no defect either.
  auto slightly = [](const std::string& s, const std::string& t) {
    return (s == "a" && t == "b") ? 0.05 : 0.04;
  };
  auto rs_slightly = Judge(Mesh({"a", "b", "c"}, {}, slightly));
  rtt = Rules(rs_slightly, "connectivity.rtt");
  REQUIRE(rtt.size() == 1);
  CHECK(rtt[0]->outcome() == "pass");
  // 0.4 ms on one pair of the same fleet is both: one slow pair, said in
  // the singular.
  auto slow = [](const std::string& s, const std::string& t) {
    return (s == "a" && t == "b") ? 0.4 : 0.0375;
  };
  auto rs_slow = Judge(Mesh({"a", "b", "c"}, {}, slow));
  rtt = Rules(rs_slow, "connectivity.rtt");
  REQUIRE(rtt.size() == 1);
  CHECK(rtt[0]->outcome() == "warn");
  CHECK(Mentions(*rtt[0], "1 pair has an outlying RTT"));
}
