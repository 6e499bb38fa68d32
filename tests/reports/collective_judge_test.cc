// The collective judge: busbw at a run's largest size against the plan,
// one-node fleet outliers, and the pairs sweep naming the slow node or link.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "reports/run_data.h"

namespace cmax::reports {
void CollectiveJudge(const RunData& data, std::vector<v1::RuleResult>* out);
void ExpectationsJudge(const RunData& data, std::vector<v1::RuleResult>* out);
}  // namespace cmax::reports

using cmax::reports::RunData;
using cmax::v1::RuleResult;

namespace {

// One size of one run, as rank 0 of the group writes it.
void Add(RunData* d, const std::string& task, std::vector<std::string> nodes, double busbw,
         int64_t size = int64_t{16} << 30, const std::string& op = "all_reduce",
         const std::string& placement = "out") {
  cmax::v1::ExportedRecord er;
  er.set_task_id(task);
  er.set_node(nodes[0]);
  er.set_suite("collective");
  auto* m = er.mutable_record()->mutable_measurement();
  m->set_suite("collective");
  m->set_metric("busbw_gbps");
  m->set_value(busbw);
  m->set_unit("GB/s");
  auto& l = *m->mutable_labels();
  l["op"] = op;
  l["dtype"] = "float";
  l["backend"] = "nccl";
  l["ranks"] = absl::StrCat(8 * nodes.size());
  l["nodes"] = absl::StrJoin(nodes, ",");
  l["group_size"] = absl::StrCat(nodes.size());
  l["size_bytes"] = absl::StrCat(size);
  l["placement"] = placement;
  d->records.push_back(er);
}

std::vector<RuleResult> Judge(const RunData& d) {
  std::vector<RuleResult> out;
  cmax::reports::CollectiveJudge(d, &out);
  return out;
}

std::vector<RuleResult> With(const std::vector<RuleResult>& rs, const std::string& id,
                             const std::string& outcome = "") {
  std::vector<RuleResult> out;
  for (const auto& r : rs) {
    if (r.rule_id() == id && (outcome.empty() || r.outcome() == outcome)) out.push_back(r);
  }
  return out;
}

}  // namespace

TEST_CASE("collective judge: busbw at the largest size against the plan", "[reports][collective]") {
  RunData d;
  (*d.plan.mutable_expect()->mutable_metrics())["busbw_gbps.all_reduce"] = 460;
  // Small sizes are latency-bound and never judged against the floor.
  Add(&d, "t1", {"node-1"}, 2.5, 8192);
  Add(&d, "t1", {"node-1"}, 410.0);
  Add(&d, "t1", {"node-1"}, 455.0, int64_t{16} << 30, "all_reduce", "in");
  Add(&d, "t2", {"node-2"}, 3.1, 8192);
  Add(&d, "t2", {"node-2"}, 478.0);
  auto rs = Judge(d);
  auto fails = With(rs, "collective.busbw.all_reduce", "fail");
  REQUIRE(fails.size() == 1);
  CHECK(fails[0].node() == "node-1");
  CHECK(fails[0].value() == Approx(410.0));  // out-of-place figure
  CHECK(fails[0].expected() == Approx(460.0));
  CHECK(fails[0].category() == "Networking");
  auto passes = With(rs, "collective.busbw.all_reduce", "pass");
  REQUIRE(passes.size() == 1);
  CHECK(passes[0].node() == "node-2");
  // The generic expectations judge leaves busbw floors alone (it would fail
  // every small size).
  std::vector<RuleResult> generic;
  cmax::reports::ExpectationsJudge(d, &generic);
  for (const auto& r : generic) CHECK_FALSE(absl::StrContains(r.rule_id(), "busbw"));
}

TEST_CASE("collective judge: a floor nobody measured is not measured", "[reports][collective]") {
  RunData d;
  (*d.plan.mutable_expect()->mutable_metrics())["busbw_gbps.alltoall"] = 300;
  Add(&d, "t1", {"node-1"}, 470.0);  // all_reduce only
  auto nm = With(Judge(d), "collective.busbw.not_measured");
  REQUIRE(nm.size() == 1);
  CHECK(nm[0].outcome() == "not_measured");
  CHECK(nm[0].subject() == "busbw_gbps.alltoall");
}

TEST_CASE("collective judge: one-node runs, the slow node among the fleet", "[reports][collective]") {
  RunData d;
  const double figures[] = {478, 481, 476, 480, 479, 300};
  for (int i = 0; i < 6; ++i) {
    Add(&d, absl::StrCat("t", i), {absl::StrCat("node-", i)}, figures[i]);
  }
  auto out = With(Judge(d), "collective.busbw.node_outlier");
  REQUIRE(out.size() == 1);
  CHECK(out[0].node() == "node-5");
  CHECK(out[0].outcome() == "fail");
}

TEST_CASE("collective judge: the pairs sweep names the slow node", "[reports][collective]") {
  // Six nodes in rounds of disjoint pairs, every node twice with different
  // partners; n3's NIC is slow, so both of its pairings are.
  RunData d;
  const std::vector<std::pair<std::string, std::string>> round1 = {{"n0", "n1"}, {"n2", "n3"},
                                                                   {"n4", "n5"}};
  const std::vector<std::pair<std::string, std::string>> round2 = {{"n1", "n2"}, {"n3", "n4"},
                                                                   {"n5", "n0"}};
  int task = 0;
  double healthy = 44.0;
  for (const auto& round : {round1, round2}) {
    for (const auto& [a, b] : round) {
      const bool slow = a == "n3" || b == "n3";
      Add(&d, absl::StrCat("p", task++), {a, b}, slow ? 21.0 : (healthy += 0.7));
      Add(&d, absl::StrCat("p", task - 1), {a, b}, 0.5, 4096);  // small size: ignored
    }
  }
  auto rs = Judge(d);
  auto slow = With(rs, "collective.pairs.slow_node");
  REQUIRE(slow.size() == 1);
  CHECK(slow[0].node() == "n3");
  CHECK(slow[0].outcome() == "fail");
  CHECK(slow[0].evidence_size() == 2);
  // Its partners are not blamed.
  for (const auto& r : rs) {
    if (r.outcome() == "fail" || r.outcome() == "warn") CHECK(r.node() == "n3");
  }
  CHECK(With(rs, "collective.pairs.spread", "pass").size() == 1);
}

TEST_CASE("collective judge: one slow pairing names the link", "[reports][collective]") {
  RunData d;
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {"n0", "n1"}, {"n2", "n3"}, {"n1", "n2"}, {"n3", "n0"}, {"n0", "n2"}, {"n1", "n3"}};
  int task = 0;
  for (const auto& [a, b] : pairs) {
    const bool slow = a == "n1" && b == "n2";
    Add(&d, absl::StrCat("p", task++), {a, b}, slow ? 18.0 : 45.0 + task * 0.3);
  }
  auto rs = Judge(d);
  CHECK(With(rs, "collective.pairs.slow_node").empty());
  auto link = With(rs, "collective.pairs.slow_link");
  REQUIRE(link.size() == 1);
  CHECK(link[0].subject() == "n1<->n2");
  CHECK(link[0].outcome() == "warn");
  CHECK(link[0].node().empty());
}

TEST_CASE("collective judge: an 8-GPU node without a plan floor meets its platform's figure",
          "[reports][collective]") {
  RunData d;
  d.inventories["h200-a"].set_gpu_model("NVIDIA H200");
  d.inventories["h200-b"].set_gpu_model("NVIDIA H200");
  d.inventories["other"].set_gpu_model("NVIDIA L40S");
  Add(&d, "t1", {"h200-a"}, 485);
  Add(&d, "t2", {"h200-b"}, 410);
  Add(&d, "t3", {"other"}, 100);  // no platform figure: not graded against one
  auto rs = With(Judge(d), "collective.busbw.all_reduce");
  REQUIRE(rs.size() == 2);
  for (const auto& r : rs) {
    INFO(r.message());
    CHECK(r.expected() == 480);
    CHECK_THAT(r.message(), Catch::Contains("platform default for 8xH200"));
    CHECK(r.outcome() == (r.node() == "h200-a" ? "pass" : "fail"));
  }
}
