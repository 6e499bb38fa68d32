// The collective judge: busbw at a run's largest size against the plan,
// one-node fleet outliers, and the pairs sweep naming the slow node or link.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "generated/suite_judges.h"
#include "reports/judges.h"
#include "reports/run_data.h"


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
    const int id = task++;
    Add(&d, absl::StrCat("p", id), {a, b}, slow ? 18.0 : 45.0 + task * 0.3);
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

namespace {

// One soak interval as rank 0 writes it (runner.h, RunCollectives).
void AddSoak(RunData* d, const std::string& task, std::vector<std::string> nodes, int interval,
             double busbw, int planned = 6, double interval_s = 2, double algbw = -1,
             const std::string& ranks = "") {
  for (const char* metric : {"busbw_gbps", "algbw_gbps"}) {
    Add(d, task, nodes, busbw, int64_t{1} << 30);
    auto* m = d->records.back().mutable_record()->mutable_measurement();
    m->set_metric(metric);
    if (std::string(metric) == "algbw_gbps") m->set_value(algbw >= 0 ? algbw : busbw / 1.75);
    auto& l = *m->mutable_labels();
    l["soak"] = "true";
    l["interval"] = absl::StrCat(interval);
    l["t_start_s"] = absl::StrCat(interval * interval_s);
    l["iterations"] = "100";
    l["intervals_planned"] = absl::StrCat(planned);
    l["interval_s"] = absl::StrCat(interval_s);
    if (!ranks.empty()) l["ranks"] = ranks;
  }
}

// A collective.soak_stall finding of a rank that was alive and waiting.
void AddStall(RunData* d, const std::string& task, int rank, const std::string& node,
              int64_t last_iteration, const std::string& rank_nodes, int ranks) {
  cmax::v1::ExportedRecord er;
  er.set_task_id(task);
  er.set_node(node);
  er.set_rank(rank);  // each rank writes its own spool (the coordinator checks the pair)
  er.set_suite("collective");
  auto* f = er.mutable_record()->mutable_finding();
  f->set_check_id("collective.soak_stall");
  f->set_severity(cmax::v1::SEVERITY_WARN);
  f->set_subject(absl::StrCat("node:", node, " rank:", rank));
  auto& l = *f->mutable_labels();
  l["op"] = "all_reduce";
  l["size_bytes"] = "1073741824";
  l["rank"] = absl::StrCat(rank);
  l["node"] = node;
  l["ranks"] = absl::StrCat(ranks);
  l["rank_nodes"] = rank_nodes;
  l["interval"] = "2";
  l["last_iteration"] = absl::StrCat(last_iteration);
  l["last_progress_s"] = "4.9";
  l["waited_s"] = "4.1";
  d->records.push_back(er);
}

}  // namespace

TEST_CASE("collective judge: a soak drop is named with its interval and time",
          "[reports][collective][soak]") {
  RunData d;
  // A plan floor for sweeps: soak figures never feed it (no pass, no fail).
  (*d.plan.mutable_expect()->mutable_metrics())["busbw_gbps.all_reduce"] = 460;
  const double figures[] = {400, 402, 398, 250, 401, 399};
  for (int i = 0; i < 6; ++i) AddSoak(&d, "s1", {"node-1"}, i, figures[i]);
  auto rs = Judge(d);
  CHECK(With(rs, "collective.busbw.all_reduce").empty());
  auto drops = With(rs, "collective.soak.drop", "fail");
  REQUIRE(drops.size() == 1);
  CHECK(drops[0].node() == "node-1");
  CHECK(absl::StrContains(drops[0].message(), "interval 3 at 6 s"));
  CHECK_FALSE(absl::StrContains(drops[0].message(), "interval 2"));
  CHECK(drops[0].value() == Approx(250));
  CHECK(drops[0].expected() == Approx(0.8 * 399.5));  // the median of the six
  CHECK(With(rs, "collective.soak.ended_early").empty());
  // The sweep floor has no sweep run: said so, as before.
  CHECK(With(rs, "collective.busbw.not_measured").size() == 1);
}

TEST_CASE("collective judge: a steady soak passes, the drop fraction can be set",
          "[reports][collective][soak]") {
  RunData d;
  const double figures[] = {100, 95, 88, 101, 99, 100};
  for (int i = 0; i < 6; ++i) AddSoak(&d, "s1", {"node-1", "node-2", "node-3"}, i, figures[i]);
  auto rs = Judge(d);
  REQUIRE(With(rs, "collective.soak.steady", "pass").size() == 1);
  CHECK(With(rs, "collective.soak.drop").empty());
  // 95% of the median: 88 is now a drop, named fleet-wide for a 3-node group.
  (*d.plan.mutable_expect()->mutable_metrics())["busbw_gbps.soak_min_fraction"] = 0.95;
  rs = Judge(d);
  auto drops = With(rs, "collective.soak.drop", "fail");
  REQUIRE(drops.size() == 1);
  CHECK(drops[0].node().empty());
  CHECK(absl::StrContains(drops[0].message(), "interval 2 at 4 s"));
  CHECK(With(rs, "collective.busbw.not_measured").empty());  // the fraction is no floor
}

TEST_CASE("collective judge: a one-rank soak is judged on algbw (its busbw is 0)",
          "[reports][collective][soak]") {
  RunData d;
  const double algbw[] = {90, 91, 40, 90};
  for (int i = 0; i < 4; ++i) AddSoak(&d, "s1", {"node-1"}, i, 0.0, 4, 10, algbw[i], "1");
  auto drops = With(Judge(d), "collective.soak.drop", "fail");
  REQUIRE(drops.size() == 1);
  CHECK(absl::StrContains(drops[0].message(), "algbw fell below 80%"));
  CHECK(absl::StrContains(drops[0].message(), "interval 2 at 20 s"));
}

TEST_CASE("collective judge: a soak that ended early without a stall says so",
          "[reports][collective][soak]") {
  RunData d;
  for (int i = 0; i < 3; ++i) AddSoak(&d, "s1", {"node-1"}, i, 100);
  auto rs = Judge(d);
  auto early = With(rs, "collective.soak.ended_early", "warn");
  REQUIRE(early.size() == 1);
  CHECK(absl::StrContains(early[0].message(), "3 of 6 intervals"));
}

TEST_CASE("collective judge: a stall blames the rank that stopped, not the waiting ones",
          "[reports][collective][soak]") {
  RunData d;
  for (int i = 0; i < 2; ++i) AddSoak(&d, "s1", {"node-0", "node-1", "node-2"}, i, 10);
  // Ranks 0 and 1 waited; rank 2 (SIGSTOPped, or hung) wrote nothing.
  AddStall(&d, "s1", 0, "node-0", 480, "node-0,node-1,node-2", 3);
  AddStall(&d, "s1", 1, "node-1", 480, "node-0,node-1,node-2", 3);
  auto rs = Judge(d);
  auto stalls = With(rs, "collective.soak.stall", "fail");
  REQUIRE(stalls.size() == 1);
  CHECK(stalls[0].node() == "node-2");
  CHECK(stalls[0].subject() == "node:node-2 rank:2");
  CHECK(absl::StrContains(stalls[0].message(), "stopped first"));
  CHECK(absl::StrContains(stalls[0].message(), "at most 480"));
  bool evidence_names_waiters = false;
  for (const auto& e : stalls[0].evidence()) {
    evidence_names_waiters |= absl::StrContains(e, "rank 0 (node-0) waited");
  }
  CHECK(evidence_names_waiters);
  // A stalled soak is not "ended early" too.
  CHECK(With(rs, "collective.soak.ended_early").empty());
}

TEST_CASE("collective judge: when every rank reports a stall, the least progress is blamed",
          "[reports][collective][soak]") {
  RunData d;
  AddStall(&d, "s1", 0, "node-0", 500, "node-0,node-1", 2);
  AddStall(&d, "s1", 1, "node-1", 480, "node-0,node-1", 2);
  auto rs = Judge(d);
  auto stalls = With(rs, "collective.soak.stall", "fail");
  REQUIRE(stalls.size() == 1);
  CHECK(stalls[0].node() == "node-1");
  CHECK(absl::StrContains(stalls[0].message(), "fewest iterations (480)"));

  RunData same;  // a hang of the whole group: every rank named
  AddStall(&same, "s2", 0, "node-0", 480, "node-0,node-1", 2);
  AddStall(&same, "s2", 1, "node-1", 480, "node-0,node-1", 2);
  auto all = With(Judge(same), "collective.soak.stall", "fail");
  CHECK(all.size() == 2);
  CHECK(absl::StrContains(all[0].message(), "hung together"));
}
