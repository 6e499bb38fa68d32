// A record speaks for the node that sent it (issue 45 item 2): records sent
// by node-a that claim node-b's rank, a src of another node, or blame on
// node-b as a peer go through the whole scorecard (BuildScorecard) and
// leave node-b's verdict as node-b's own records make it; node-a's verdict
// is what its own records say.
#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "reports/scorecard.h"
#include "tests/reports/scorecard_test_util.h"

using cmax::reports::RunData;
using cmax::reports::testing::Meas;
using cmax::reports::testing::NodeOf;
using cmax::v1::ExportedRecord;
using cmax::v1::Scorecard;

namespace {

// A completed group task over `nodes` (plan entry 0 runs `suite`).
RunData GroupRun(const std::string& suite, const std::string& task,
                 const std::vector<std::string>& nodes) {
  RunData d;
  d.run.set_run_id("run-1");
  d.run.set_state("completed");
  d.plan.add_suites()->set_suite(suite);
  d.nodes = nodes;
  cmax::v1::TaskInfo t;
  t.set_task_id(task);
  t.set_run_id("run-1");
  t.set_suite(suite);
  t.set_name(suite);
  t.set_node(absl::StrJoin(nodes, ","));
  t.set_state(cmax::v1::TASK_COMPLETED);
  t.set_attempt(1);
  d.tasks.push_back(t);
  return d;
}

// A workload loss Sample as rank `wire_rank`'s spool on `node` carries it,
// labelled rank `label_rank`.
ExportedRecord Loss(const std::string& node, int wire_rank, int label_rank, int step,
                    double loss) {
  ExportedRecord er;
  er.set_task_id("w1");
  er.set_attempt(1);
  er.set_node(node);
  er.set_rank(wire_rank);
  er.set_suite("workload");
  auto* s = er.mutable_record()->mutable_sample();
  s->set_suite("workload");
  s->set_metric("loss");
  s->set_value(loss);
  auto& l = *s->mutable_labels();
  l["rank"] = absl::StrCat(label_rank);
  l["world_size"] = "3";
  l["step"] = absl::StrCat(step);
  l["warmup"] = step < 2 ? "true" : "false";
  l["model"] = "layers=1 width=64 heads=2 seq=32 batch=4 vocab=1024 seed=1234 lr=0.0003";
  l["device"] = "cpu";
  l["dtype"] = "fp32";
  return er;
}

// Every rule the scorecard shows, over its categories.
std::vector<cmax::v1::RuleResult> Rules(const Scorecard& card) {
  std::vector<cmax::v1::RuleResult> out;
  for (const auto& c : card.categories())
    out.insert(out.end(), c.rules().begin(), c.rules().end());
  return out;
}

std::string Dump(const Scorecard& card) {
  std::string s;
  for (const auto& n : card.nodes()) {
    absl::StrAppend(&s, n.node(), " ", n.verdict(), ": ",
                    absl::StrJoin(n.reasons(), " | "), "\n");
  }
  return s;
}

// node-b's verdict and reasons, unchanged by what node-a sent.
void CheckUnchanged(const Scorecard& clean, const Scorecard& forged,
                    const std::string& node) {
  INFO("clean:\n" << Dump(clean) << "forged:\n" << Dump(forged));
  const auto& before = NodeOf(clean, node);
  const auto& after = NodeOf(forged, node);
  REQUIRE(after.node() == node);
  CHECK(after.verdict() == before.verdict());
  CHECK(absl::StrJoin(after.reasons(), "\n") == absl::StrJoin(before.reasons(), "\n"));
  CHECK(after.verdict() != "fail");
}

ExportedRecord Reach(const std::string& sender, const std::string& src,
                     const std::string& dst, bool ok) {
  ExportedRecord r = Meas(sender, "connectivity", "reachable", ok ? 1 : 0, "bool",
                          {{"src", src}, {"dst", dst}, {"dst_addr", "10.0.0.9"}});
  r.set_task_id("c1");
  return r;
}

RunData Mesh(const std::vector<std::string>& nodes) {
  RunData d = GroupRun("connectivity", "c1", nodes);
  for (const auto& s : nodes) {
    for (const auto& t : nodes) {
      if (s != t) d.records.push_back(Reach(s, s, t, true));
    }
  }
  return d;
}

}  // namespace

TEST_CASE("loss samples node-a labels with node-b's rank change no verdict of node-b",
          "[reports][forged]") {
  RunData clean = GroupRun("workload", "w1", {"node-a", "node-b", "node-c"});
  for (int step = 0; step < 5; ++step) {
    for (int rank = 0; rank < 3; ++rank) {
      const std::string node = std::string("node-") + static_cast<char>('a' + rank);
      clean.records.push_back(Loss(node, rank, rank, step, 7.0 - 0.01 * step));
    }
  }
  RunData forged = clean;
  // A root process on node-a writes rank 1's loss, departing, into its own
  // rank's spool (wire rank 0): the reviewer's records, as an older
  // coordinator stored them. (A wire rank of another node's is refused at
  // ingest: tests/coordinator/rank_claims_test.cc.)
  for (int step = 0; step < 5; ++step) {
    forged.records.push_back(Loss("node-a", 0, 1, step, 9.0 + step));
  }
  const Scorecard a = cmax::reports::BuildScorecard(clean);
  const Scorecard b = cmax::reports::BuildScorecard(forged);
  CheckUnchanged(a, b, "node-b");
  CHECK(NodeOf(b, "node-a").verdict() == NodeOf(a, "node-a").verdict());
  for (const auto& r : Rules(b)) {
    INFO(r.rule_id() << " " << r.node() << ": " << r.message());
    CHECK(r.rule_id() != "workload.loss_departs");
  }
}

TEST_CASE("a connectivity record from node-a about node-c -> node-b blames neither",
          "[reports][forged]") {
  const RunData clean = Mesh({"node-a", "node-b", "node-c"});
  RunData forged = clean;
  // The reviewer's record: sent by node-a, labelled src=node-c (and a node
  // that is not in the run at all).
  forged.records.push_back(Reach("node-a", "node-c", "node-b", false));
  forged.records.push_back(Reach("node-a", "node-x", "node-b", false));
  forged.records.push_back(Reach("node-a", "node-a", "node-x", false));
  const Scorecard a = cmax::reports::BuildScorecard(clean);
  const Scorecard b = cmax::reports::BuildScorecard(forged);
  CheckUnchanged(a, b, "node-b");
  CheckUnchanged(a, b, "node-c");
  CheckUnchanged(a, b, "node-a");  // its forgeries are ignored, not counted
}

TEST_CASE(
    "node-a's own word that node-b is unreachable is a pair result, not node-b's failure",
    "[reports][forged]") {
  for (const std::vector<std::string>& nodes :
       {std::vector<std::string>{"node-a", "node-b"},
        std::vector<std::string>{"node-a", "node-b", "node-c"}}) {
    const RunData clean = Mesh(nodes);
    RunData forged = clean;
    forged.records.push_back(Reach("node-a", "node-a", "node-b", false));
    const Scorecard a = cmax::reports::BuildScorecard(clean);
    const Scorecard b = cmax::reports::BuildScorecard(forged);
    CheckUnchanged(a, b, "node-b");
    bool pair = false;
    for (const auto& r : Rules(b)) {
      INFO(r.rule_id() << " " << r.node() << ": " << r.message());
      CHECK(r.node() != "node-b");
      if (r.rule_id() != "connectivity.unreachable_pair") continue;
      pair = true;
      CHECK(r.node().empty());
      CHECK(r.outcome() == "fail");
      CHECK_THAT(r.message(),
                 Catch::Contains("node-a -> node-b unreachable, as measured by "
                                 "node-a"));
    }
    CHECK(pair);
    // node-a's own records say it cannot reach a node that reaches it.
    CHECK(NodeOf(b, "node-a").verdict() == "warn");
  }
}

TEST_CASE("when node-b's own records agree, the unreachable pair fails node-b",
          "[reports][forged]") {
  RunData d = Mesh({"node-a", "node-b", "node-c"});
  d.records.push_back(Reach("node-a", "node-a", "node-b", false));
  d.records.push_back(Reach("node-b", "node-b", "node-a", false));
  const Scorecard card = cmax::reports::BuildScorecard(d);
  INFO(Dump(card));
  CHECK(NodeOf(card, "node-b").verdict() == "fail");
  CHECK(NodeOf(card, "node-a").verdict() == "fail");
  CHECK(NodeOf(card, "node-c").verdict() != "fail");
}

TEST_CASE("node-a's slow RDMA figures towards node-b fail node-a, not node-b",
          "[reports][forged]") {
  // Three nodes, each pair measured once by its client; node-a is the client
  // towards node-b and node-c and reports both links at half rate.
  RunData clean = GroupRun("rdma", "r-ab", {"node-a", "node-b", "node-c"});
  auto bw = [](const std::string& sender, const std::string& src, const std::string& dst,
               double gbps, const std::string& task) {
    ExportedRecord r = Meas(sender, "rdma", "rdma_write_bw_gbps", gbps, "Gb/s",
                            {{"src", src},
                             {"dst", dst},
                             {"hca", "mlx5_0"},
                             {"port", "1"},
                             {"peer_hca", "mlx5_0"},
                             {"peer_port", "1"},
                             {"rail", "0"},
                             {"size_bytes", "65536"},
                             {"port_rate_gbps", "400"},
                             {"peer_port_rate_gbps", "400"}});
    r.set_task_id(task);
    return r;
  };
  clean.records.push_back(bw("node-a", "node-a", "node-b", 391, "r-ab"));
  clean.records.push_back(bw("node-a", "node-a", "node-c", 391, "r-ab"));
  clean.records.push_back(bw("node-c", "node-c", "node-b", 391, "r-ab"));
  RunData forged = clean;
  forged.records.clear();
  forged.records.push_back(bw("node-a", "node-a", "node-b", 150, "r-ab"));
  forged.records.push_back(bw("node-a", "node-a", "node-c", 150, "r-ab"));
  forged.records.push_back(bw("node-c", "node-c", "node-b", 391, "r-ab"));
  // And node-a speaking as node-c: ignored.
  forged.records.push_back(bw("node-a", "node-c", "node-b", 10, "r-ab"));
  const Scorecard a = cmax::reports::BuildScorecard(clean);
  const Scorecard b = cmax::reports::BuildScorecard(forged);
  CheckUnchanged(a, b, "node-b");
  CheckUnchanged(a, b, "node-c");
  CHECK(NodeOf(b, "node-a").verdict() == "fail");
}

TEST_CASE("a collective figure node-a labels with other nodes is not theirs",
          "[reports][forged]") {
  RunData clean = GroupRun("collective", "p1", {"node-a", "node-b"});
  (*clean.plan.mutable_expect()->mutable_metrics())["busbw_gbps"] = 40;
  auto busbw = [](const std::string& sender, const std::string& nodes, double value) {
    ExportedRecord r = Meas(sender, "collective", "busbw_gbps", value, "GB/s",
                            {{"op", "all_reduce"},
                             {"dtype", "float"},
                             {"backend", "nccl"},
                             {"ranks", "2"},
                             {"nodes", nodes},
                             {"size_bytes", "1073741824"},
                             {"placement", "out"}});
    r.set_task_id("p1");
    return r;
  };
  clean.records.push_back(busbw("node-a", "node-a,node-b", 45));
  RunData forged = clean;
  // A slow pair figure (node-a measured it: its own word) and a figure for
  // a group node-a is not in (counted as node-a's own, never node-b's).
  forged.records.clear();
  forged.records.push_back(busbw("node-a", "node-a,node-b", 10));
  forged.records.push_back(busbw("node-a", "node-b", 1));
  const Scorecard a = cmax::reports::BuildScorecard(clean);
  const Scorecard b = cmax::reports::BuildScorecard(forged);
  CheckUnchanged(a, b, "node-b");
  CHECK(NodeOf(b, "node-a").verdict() == "fail");
}
