// reports/history.h: verdict mapping, incidents, time to repair, repeat
// offenders, trends, fleet band, failures per 1,000 GPU-hours by week.
#include "reports/history.h"

#include <catch2/catch.hpp>
#include <chrono>

namespace {

using cmax::v1::NodeRunSummary;
namespace r = cmax::reports;

constexpr int64_t kHour = 3600ll * 1000000000;
// 2026-11-30T00:00:00Z, a Monday.
constexpr int64_t kMonday = 1795996800ll * 1000000000;

NodeRunSummary Run(const std::string& run, const std::string& node, int64_t t,
                   const std::string& verdict, std::vector<std::string> reasons = {},
                   int gpus = 8, double tflops = -1) {
  NodeRunSummary s;
  s.set_run_id(run);
  s.set_node(node);
  s.set_finished_unix_ns(t);
  s.set_verdict(verdict);
  s.set_gpus(gpus);
  s.set_version(r::kSummaryVersion);
  s.set_report_dir("/data/reports/" + run);
  for (const auto& id : reasons) {
    auto* h = s.add_reasons();
    h->set_id(id);
    h->set_outcome("fail");
    h->set_text(id + " text");
  }
  if (tflops >= 0) {
    auto* f = s.add_figures();
    f->set_name("gemm_tflops_per_gpu");
    f->set_value(tflops);
    f->set_unit("TFLOP/s");
  }
  return s;
}

// A one-node scorecard as the scorecard builder leaves it, over two
// categories (Compute: hostcheck; Orchestration: the orchestration suite):
// the findings of the suites that ran on the node, a rule for each fired
// one, the node's grid row (not_measured where no finding of the category
// evaluated it) and its verdict (fail when a finding failed).
struct FindingSpec {
  std::string suite, check, category, outcome;  // outcome: pass, fail
};
cmax::v1::Scorecard Card(const std::string& run, const std::string& node,
                         const std::vector<FindingSpec>& findings) {
  cmax::v1::Scorecard card;
  card.set_run_id(run);
  const std::vector<std::string> categories = {"Compute", "Orchestration"};
  for (const auto& c : categories) card.add_categories()->set_name(c);
  auto* v = card.add_nodes();
  v->set_node(node);
  v->set_verdict("pass");
  auto* grid = card.add_node_grid();
  grid->set_node(node);
  for (const auto& c : categories) {
    std::string outcome = "not_measured";
    for (const auto& f : findings) {
      if (f.category != c) continue;
      if (outcome != "fail") outcome = f.outcome;
    }
    grid->add_outcomes(outcome);
  }
  for (const auto& f : findings) {
    auto* finding = card.add_findings();
    finding->set_check_id(f.check);
    finding->set_suite(f.suite);
    finding->set_category(f.category);
    (*finding->mutable_labels())["node"] = node;
    if (f.outcome == "pass") continue;
    v->set_verdict("fail");
    v->add_reasons(f.category + " FAIL: " + f.check);
    const int i = f.category == "Compute" ? 0 : 1;
    auto* rule = card.mutable_categories(i)->add_rules();
    rule->set_rule_id(f.check);
    rule->set_category(f.category);
    rule->set_outcome(f.outcome);
    rule->set_node(node);
    rule->set_message(f.check + " failed");
  }
  return card;
}

const FindingSpec kGpusOk = {"hostcheck", "hostcheck.gpu_count", "Compute", "pass"};
const FindingSpec kNoScheduler = {"orchestration", "orchestration.scheduler", "Orchestration",
                                  "fail"};
const FindingSpec kSlurmOk = {"orchestration", "orchestration.slurm.gres", "Orchestration",
                              "pass"};

void AddRun(std::vector<NodeRunSummary>* all, const cmax::v1::Scorecard& card, int64_t t) {
  for (auto& s : r::SummarizeRun(card, t, "/data/reports/" + card.run_id())) {
    all->push_back(std::move(s));
  }
}

}  // namespace

TEST_CASE(
    "history: an incident opens at the first reject and closes at the first later accept",
    "[history]") {
  std::vector<NodeRunSummary> all = {
      Run("r1", "a", 0 * kHour, "accept"),
      Run("r2", "a", 1 * kHour, "reject", {"expect.gpus_per_node"}),
      Run("r3", "a", 2 * kHour, "not measured"),  // neither opens nor closes
      Run("r4", "a", 3 * kHour, "reject", {"expect.gpus_per_node", "task.crashed"}),
      Run("r5", "a", 5 * kHour, "accept"),
      Run("r6", "a", 6 * kHour, "reject", {"xid"}),
      Run("r2", "b", 1 * kHour, "accept"),
  };
  auto inc = r::ComputeIncidents("a", all);
  REQUIRE(inc.size() == 2);
  CHECK(inc[0].opened_run() == "r2");
  CHECK(inc[0].closed_run() == "r5");
  CHECK(inc[0].repair_hours() == Approx(4.0));
  CHECK(inc[0].rejecting_runs() == 2);
  REQUIRE(inc[0].reasons_size() == 2);  // each id once
  CHECK(inc[0].reasons(1).id() == "task.crashed");
  CHECK(inc[0].artifacts_size() == 2);
  CHECK_FALSE(inc[0].reopened_within_7d());
  CHECK(inc[1].opened_run() == "r6");
  CHECK(inc[1].closed_run().empty());
  CHECK(inc[1].reopened_within_7d());  // 1 h after its repair
  CHECK(r::ComputeIncidents("b", all).empty());
  CHECK(r::ComputeIncidents("nobody", all).empty());
}

TEST_CASE(
    "history: not measured alone never closes an incident and order of input does not "
    "matter",
    "[history]") {
  std::vector<NodeRunSummary> all = {
      Run("r3", "a", 3 * kHour, "not measured"),
      Run("r1", "a", 1 * kHour, "reject", {"x"}),
      Run("r2", "a", 2 * kHour, "not measured"),
  };
  auto inc = r::ComputeIncidents("a", all);
  REQUIRE(inc.size() == 1);
  CHECK(inc[0].closed_run().empty());
  auto h = r::ComputeNodeHistory("a", all);
  CHECK(h.state() == "rejected");  // the latest run that measured it
  REQUIRE(h.runs_size() == 3);
  CHECK(h.runs(0).run_id() == "r1");
}

TEST_CASE(
    "history: time to repair median and p90, reopened within 7 days, nodes by state",
    "[history]") {
  std::vector<NodeRunSummary> all;
  // Five nodes, repairs of 1, 2, 3, 4 and 10 hours.
  const double repairs[] = {1, 2, 3, 4, 10};
  for (int i = 0; i < 5; ++i) {
    const std::string n = "n" + std::to_string(i);
    all.push_back(Run("r0", n, 0, "accept"));
    all.push_back(Run("f" + n, n, 10 * kHour, "reject", {"expect.gpus_per_node"}));
    all.push_back(Run("c" + n, n, (10 + repairs[i]) * kHour, "accept"));
  }
  // n0 fails again 2 days after its repair; n5 was never measured.
  all.push_back(Run("again", "n0", (11 + 48) * kHour, "reject", {"xid"}));
  all.push_back(Run("r0", "n5", 0, "not measured"));
  auto rel = r::ComputeReliability(all);
  CHECK(rel.measured());
  CHECK(rel.incidents() == 6);
  CHECK(rel.open_incidents() == 1);
  CHECK(rel.closed_incidents() == 5);
  CHECK(rel.repair_measured());
  CHECK(rel.median_repair_hours() == Approx(3.0));
  // Linear interpolation: position 0.9 * 4 = 3.6 between 4 and 10.
  CHECK(rel.p90_repair_hours() == Approx(4 + 0.6 * 6));
  CHECK(rel.reopened_within_7d() == 1);
  CHECK(rel.nodes_by_state().at("accepted") == 4);
  CHECK(rel.nodes_by_state().at("rejected") == 1);
  CHECK(rel.nodes_by_state().at("not measured") == 1);
  REQUIRE(rel.open_size() == 1);
  CHECK(rel.open(0).node() == "n0");
  REQUIRE(rel.top_reasons_size() == 2);
  CHECK(rel.top_reasons(0).id() == "expect.gpus_per_node");
  CHECK(rel.top_reasons(0).runs() == 5);
  CHECK(rel.summary().find("time to repair median 3.00 h, p90 7.60 h") !=
        std::string::npos);
  CHECK(rel.drain_time().rfind("not measured", 0) == 0);
}

TEST_CASE("history: one run on its own is not measured", "[history]") {
  std::vector<NodeRunSummary> all = {Run("r1", "a", 0, "reject", {"x"}),
                                     Run("r1", "b", 0, "accept")};
  auto rel = r::ComputeReliability(all);
  CHECK_FALSE(rel.measured());
  CHECK(rel.summary().rfind("history: not measured", 0) == 0);
  CHECK_FALSE(rel.repair_measured());
  CHECK(r::ComputeReliability({}).summary().rfind("history: not measured", 0) == 0);
}

TEST_CASE("history: repeat offender is the same reason in k of the last n measured runs",
          "[history]") {
  std::vector<NodeRunSummary> all;
  // x in runs 0, 2, 4, 6 (of 0..6); y only in run 0.
  for (int i = 0; i < 7; ++i) {
    std::vector<std::string> reasons;
    if (i % 2 == 0) reasons.push_back("x");
    if (i == 0) reasons.push_back("y");
    all.push_back(Run("r" + std::to_string(i), "a", i * kHour,
                      reasons.empty() ? "accept" : "reject", reasons));
  }
  all.push_back(Run("r9", "a", 9 * kHour, "not measured", {"x"}));  // not counted
  r::HistoryOptions o;  // 3 of the last 5: runs 2..6 hold x in 2, 4, 6
  auto h = r::ComputeNodeHistory("a", all, o);
  REQUIRE(h.reasons_size() == 2);
  CHECK(h.reasons(0).id() == "x");
  CHECK(h.reasons(0).runs() == 4);
  CHECK(h.reasons(0).first_unix_ns() == 0);
  CHECK(h.reasons(0).last_unix_ns() == 6 * kHour);
  CHECK(h.reasons(0).repeat_offender());
  CHECK_FALSE(h.reasons(1).repeat_offender());
  o.repeat_k = 4;
  CHECK_FALSE(r::ComputeNodeHistory("a", all, o).reasons(0).repeat_offender());
}

TEST_CASE(
    "history: a figure's trend is the least-squares slope and the band is the fleet's "
    "p10-p90",
    "[history]") {
  std::vector<NodeRunSummary> all;
  const int64_t day = 24 * kHour;
  // Node a falls 10 TFLOP/s a day: 700, 690, 680.
  for (int i = 0; i < 3; ++i) {
    const std::string run = "r" + std::to_string(i);
    all.push_back(Run(run, "a", i * day, "accept", {}, 8, 700 - 10 * i));
    // Ten peers at 600..690 in each run.
    for (int p = 0; p < 10; ++p) {
      all.push_back(
          Run(run, "p" + std::to_string(p), i * day, "accept", {}, 8, 600 + 10 * p));
    }
  }
  auto h = r::ComputeNodeHistory("a", all);
  REQUIRE(h.figures_size() == 1);
  const auto& f = h.figures(0);
  CHECK(f.trend_measured());
  CHECK(f.slope_per_day() == Approx(-10.0));
  REQUIRE(f.node_values_size() == 3);
  // 11 values per run: 600..690 and a's; p10 at position 1.0.
  CHECK(f.fleet_p10(0) == Approx(610));
  CHECK(f.fleet_p90(0) == Approx(690));
  // Values seconds apart: no trend (a slope per day would extrapolate noise).
  std::vector<NodeRunSummary> quick = {Run("q0", "a", 0, "accept", {}, 8, 700),
                                       Run("q1", "a", 2000000000, "accept", {}, 8, 690)};
  CHECK_FALSE(r::ComputeNodeHistory("a", quick).figures(0).trend_measured());
  double slope = 0;
  CHECK(r::LeastSquaresSlopePerDay({0, 86400ll * 1000000000}, {1.0, 3.0}, &slope));
  CHECK(slope == Approx(2.0));
  CHECK_FALSE(r::LeastSquaresSlopePerDay({5}, {1.0}, &slope));
  CHECK_FALSE(r::LeastSquaresSlopePerDay({5, 5}, {1.0, 2.0}, &slope));
}

TEST_CASE(
    "history: failures per 1,000 GPU-hours by week use GPUs times hours between "
    "evaluations",
    "[history]") {
  CHECK(r::WeekStart(0) == "1969-12-29");  // 1970-01-01 was a Thursday
  const int64_t monday = kMonday;
  CHECK(r::WeekStart(monday) == "2026-11-30");
  CHECK(r::WeekStart(monday + 7 * 24 * kHour - 1) == "2026-11-30");
  CHECK(r::WeekStart(monday - 1) == "2026-11-23");
  const int64_t day = 24 * kHour;
  // Two 8-GPU nodes evaluated at 0 and 50 h, a again 8 days after the start.
  std::vector<NodeRunSummary> all = {
      Run("r0", "a", monday, "accept"),
      Run("r0", "b", monday, "accept"),
      Run("r1", "a", monday + 50 * kHour, "reject", {"x"}),
      Run("r1", "b", monday + 50 * kHour, "accept"),
      Run("r2", "a", monday + 8 * day, "accept", {}, 4),
  };
  auto rel = r::ComputeReliability(all);
  REQUIRE(rel.weeks_size() == 2);
  // Week 1: 2 x 8 GPUs x 50 h = 800 GPU-hours, 1 failure.
  CHECK(rel.weeks(0).gpu_hours() == Approx(800));
  CHECK(rel.weeks(0).failures() == 1);
  CHECK(rel.weeks(0).per_1000_gpu_hours() == Approx(1.25));
  // Week 2: a's 8 GPUs (those of the earlier evaluation) x 142 h, no failure.
  CHECK(rel.weeks(1).gpu_hours() == Approx(8 * 142.0));
  CHECK(rel.weeks(1).failures() == 0);
  CHECK(rel.weeks(1).per_1000_gpu_hours() == 0);
  CHECK(rel.weeks(0).week() == r::WeekStart(monday));
}

TEST_CASE("history: SummarizeRun maps scorecard verdicts, reasons and figures",
          "[history]") {
  cmax::v1::Scorecard card;
  card.set_run_id("run-1");
  card.set_plan("quick");
  auto* rel = card.add_categories();
  rel->set_name("Reliability");
  auto* rule = rel->add_rules();
  rule->set_rule_id("expect.gpus_per_node");
  rule->set_outcome("fail");
  rule->set_node("bad");
  rule->set_category("Reliability");
  rule->set_message("found 7");
  auto* nm = rel->add_rules();
  nm->set_rule_id("gemm");
  nm->set_outcome("not_measured");
  nm->set_node("partial");
  auto add_node = [&](const std::string& n, const std::string& verdict,
                      std::vector<std::string> reasons) {
    auto* v = card.add_nodes();
    v->set_node(n);
    v->set_verdict(verdict);
    for (auto& r : reasons) v->add_reasons(r);
    (*v->mutable_inventory())["gpu_count"] = "8";
  };
  add_node("good", "pass", {});
  add_node("bad", "fail", {"Reliability FAIL: found 7"});
  add_node("partial", "warn", {"gemm not measured"});
  add_node("silent", "warn", {"no results from this node"});
  add_node("crashed", "fail", {"no results from this node"});
  add_node("ungraded", "pass", {});  // only ungraded suites ran there
  auto* grid = card.add_node_grid();
  grid->set_node("ungraded");
  grid->add_outcomes("not_measured");
  auto* good_grid = card.add_node_grid();
  good_grid->set_node("good");
  good_grid->add_outcomes("pass");
  for (double v : {700.0, 710.0, 720.0}) {
    auto* m = card.add_metric_summary();
    m->set_node("good");
    m->set_metric("gemm_tflops");
    m->set_unit("TFLOP/s");
    (*m->mutable_labels())["dtype"] = "bf16";
    m->set_value(v);
  }
  auto* fp8 = card.add_metric_summary();
  fp8->set_node("good");
  fp8->set_metric("gemm_tflops");
  (*fp8->mutable_labels())["dtype"] = "fp8";
  fp8->set_value(1500);
  auto s = r::SummarizeRun(card, 42, "/d/run-1");
  REQUIRE(s.size() == 6);
  CHECK(s[0].verdict() == "accept");
  CHECK_FALSE(s[0].partial());
  CHECK(s[0].gpus() == 8);
  CHECK(s[0].finished_unix_ns() == 42);
  REQUIRE(s[0].figures_size() == 1);
  CHECK(s[0].figures(0).name() == "gemm_tflops_per_gpu");
  CHECK(s[0].figures(0).value() == Approx(710));  // bf16 only
  CHECK(s[1].verdict() == "reject");
  REQUIRE(s[1].reasons_size() == 1);
  CHECK(s[1].reasons(0).id() == "expect.gpus_per_node");
  CHECK(s[2].verdict() == "accept");
  CHECK(s[2].partial());
  CHECK(s[3].verdict() == "not measured");
  CHECK(s[4].verdict() == "reject");
  REQUIRE(s[4].reasons_size() == 1);
  CHECK(s[4].reasons(0).id() == "verdict");
  CHECK(s[5].verdict() == "not measured");
}

TEST_CASE(
    "history: the summary goes into the Reliability evidence without changing its grade",
    "[history]") {
  cmax::v1::Scorecard card;
  auto* c = card.add_categories();
  c->set_name("Reliability");
  c->set_grade("B");
  auto* other = card.add_categories();
  other->set_name("Compute");
  r::AddHistoryToScorecard(r::ComputeReliability({}), &card);
  REQUIRE(c->evidence_size() == 1);
  CHECK(c->evidence(0).rfind("history: not measured", 0) == 0);
  CHECK(c->grade() == "B");
  CHECK(other->evidence_size() == 0);
  CHECK_FALSE(card.history().measured());
}

TEST_CASE("history: text renderings name incidents and states", "[history]") {
  std::vector<NodeRunSummary> all = {Run("r1", "a", 0, "reject", {"x"}),
                                     Run("r2", "a", 2 * kHour, "accept")};
  auto text = r::RenderNodeHistoryText(r::ComputeNodeHistory("a", all));
  CHECK(text.find("node a: accepted, 2 runs, 1 incidents") != std::string::npos);
  CHECK(text.find("time to repair 2.00 h") != std::string::npos);
  CHECK(r::RenderNodeHistoryText(r::ComputeNodeHistory("zz", all)).find("unknown") !=
        std::string::npos);
  auto fleet = r::RenderReliabilityText(r::ComputeReliability(all));
  CHECK(fleet.find("1 accepted") != std::string::npos);
  CHECK(fleet.find("time from failure to drain: not measured") != std::string::npos);
}

TEST_CASE(
    "history: 1,000 nodes over 20 daily runs give every incident and its repair time",
    "[history]") {
  std::vector<NodeRunSummary> all;
  const int64_t day = 24 * kHour;
  // Node i is rejected at run 5 and accepted again 1 + i % 10 days later.
  for (int i = 0; i < 1000; ++i) {
    const std::string node = "n" + std::to_string(i);
    const int back = 6 + i % 10;
    for (int run = 0; run < 20; ++run) {
      const bool rejected = run >= 5 && run < back;
      all.push_back(
          Run("r" + std::to_string(run), node, kMonday + run * day,
              rejected ? "reject" : "accept",
              rejected ? std::vector<std::string>{"x"} : std::vector<std::string>{}, 8,
              700 - (rejected ? 100 : 0)));
    }
  }
  const auto start = std::chrono::steady_clock::now();
  auto rel = r::ComputeReliability(all);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  INFO("ComputeReliability over " << all.size() << " summaries: " << seconds << " s");
  CHECK(rel.incidents() == 1000);
  CHECK(rel.open_incidents() == 0);
  // Repairs of 24, 48, ... 240 h, 100 nodes each: median between the 500th
  // and 501st (120 and 144 h), p90 at 899.1 (216 h and 240 h).
  CHECK(rel.median_repair_hours() == Approx(132));
  CHECK(rel.p90_repair_hours() == Approx(218.4));
  CHECK(rel.nodes_by_state().at("accepted") == 1000);
  // Weeks: 2026-11-30 holds runs 1-6 (the first adds no GPU-hours), and
  // every node's one failure (run 5).
  REQUIRE(rel.weeks_size() >= 3);
  CHECK(rel.weeks(0).failures() == 1000);
  CHECK(rel.weeks(0).gpu_hours() == Approx(1000 * 8 * 6 * 24.0));
  auto h = r::ComputeNodeHistory("n7", all);
  REQUIRE(h.incidents_size() == 1);
  CHECK(h.incidents(0).repair_hours() == Approx(8 * 24));
  CHECK(h.reasons(0).repeat_offender() == false);  // x in runs 5-12, none in the last 5
}

TEST_CASE(
    "history: a run that did not measure what failed leaves the incident open and one "
    "that measures it again and passes closes it",
    "[history]") {
  // The field report: a full run rejects local-0 (orchestration: no
  // scheduler); a quick run 6 minutes later runs hostcheck only.
  std::vector<NodeRunSummary> all;
  AddRun(&all, Card("full-1", "local-0", {kGpusOk, kNoScheduler}), 0);
  AddRun(&all, Card("quick-1", "local-0", {kGpusOk}), kHour / 10);
  REQUIRE(all[0].reasons_size() == 1);
  CHECK(all[0].reasons(0).suite() == "orchestration");
  CHECK(all[1].verdict() == "accept");
  CHECK(std::vector<std::string>(all[1].measured_suites().begin(),
                                 all[1].measured_suites().end()) ==
        std::vector<std::string>{"hostcheck"});

  auto text = r::RenderNodeHistoryText(r::ComputeNodeHistory("local-0", all));
  INFO(text);
  CHECK(text.find("incident opened 1970-01-01T00:00:00Z (run full-1), OPEN (waiting for a "
                  "run that measures again and passes: orchestration.scheduler (suite "
                  "orchestration))") != std::string::npos);
  CHECK(text.find("time to repair") == std::string::npos);
  auto fleet = r::ComputeReliability(all);
  CHECK(fleet.summary().find("1 incidents, 1 open; time to repair not measured") !=
        std::string::npos);
  CHECK(r::RenderReliabilityText(fleet).find("open incident: local-0 since") !=
        std::string::npos);

  // The next full run fails the same check: the same incident, still open,
  // not one that "failed again within 7 days of a repair".
  AddRun(&all, Card("full-2", "local-0", {kGpusOk, kNoScheduler}), 24 * kHour);
  auto inc = r::ComputeIncidents("local-0", all);
  REQUIRE(inc.size() == 1);
  CHECK(inc[0].rejecting_runs() == 2);
  CHECK_FALSE(inc[0].reopened_within_7d());
  CHECK(r::ComputeReliability(all).summary().find(
            "0 failed again within 7 days of a repair") != std::string::npos);

  // Slurm is set up; a full run measures orchestration again and passes it:
  // time to repair is to this run, 50 h after the first rejection.
  AddRun(&all, Card("full-3", "local-0", {kGpusOk, kSlurmOk}), 50 * kHour);
  text = r::RenderNodeHistoryText(r::ComputeNodeHistory("local-0", all));
  CHECK(text.find("(run full-1), closed 1970-01-03T02:00:00Z (run full-3), time to repair "
                  "50.00 h\n") != std::string::npos);
  fleet = r::ComputeReliability(all);
  CHECK(fleet.summary().find("1 incidents, 0 open; time to repair median 50.00 h") !=
        std::string::npos);
}

TEST_CASE(
    "history: an incident closes when its last failing reason is measured again and passes",
    "[history]") {
  // r1 fails a suite's check and a rule without a suite (judged from
  // measurements: matched by its category).
  auto with = [](NodeRunSummary s, std::vector<std::string> suites,
                 std::vector<std::string> categories) {
    for (auto& x : suites) s.add_measured_suites(x);
    for (auto& x : categories) s.add_measured_categories(x);
    return s;
  };
  NodeRunSummary r1 = with(Run("r1", "a", 0, "reject", {"orchestration.scheduler",
                                                         "expect.gpus_per_node"}),
                           {"orchestration", "hostcheck"}, {"Orchestration", "Compute"});
  r1.mutable_reasons(0)->set_suite("orchestration");
  r1.mutable_reasons(1)->set_category("Compute");
  // r2 measures Compute again and passes it, fails something new in it.
  NodeRunSummary r2 = with(Run("r2", "a", 1 * kHour, "reject", {"xid"}), {"health"}, {"Compute"});
  r2.mutable_reasons(0)->set_suite("health");
  // r3 measures everything but orchestration; r4 orchestration too.
  NodeRunSummary r3 =
      with(Run("r3", "a", 2 * kHour, "accept"), {"health", "hostcheck"}, {"Compute"});
  NodeRunSummary r4 = with(Run("r4", "a", 3 * kHour, "accept"),
                           {"health", "orchestration"}, {"Compute", "Orchestration"});
  std::vector<NodeRunSummary> all = {r1, r2};
  auto inc = r::ComputeIncidents("a", all);
  REQUIRE(inc.size() == 1);
  CHECK(std::vector<std::string>(inc[0].unresolved().begin(), inc[0].unresolved().end()) ==
        std::vector<std::string>{"orchestration.scheduler", "xid"});
  all.push_back(r3);
  inc = r::ComputeIncidents("a", all);
  REQUIRE(inc.size() == 1);
  CHECK(inc[0].closed_run().empty());
  CHECK(std::vector<std::string>(inc[0].unresolved().begin(), inc[0].unresolved().end()) ==
        std::vector<std::string>{"orchestration.scheduler"});
  all.push_back(r4);
  inc = r::ComputeIncidents("a", all);
  REQUIRE(inc.size() == 1);
  CHECK(inc[0].closed_run() == "r4");
  CHECK(inc[0].repair_hours() == Approx(3.0));
  CHECK(inc[0].unresolved_size() == 0);
}

TEST_CASE("history: a summary that does not say what it measured closes nothing",
          "[history]") {
  // Version 0: stored before summaries listed what they measured, its
  // scorecard gone since. It still opens an incident.
  NodeRunSummary old_accept = Run("r2", "a", 1 * kHour, "accept");
  old_accept.set_version(0);
  NodeRunSummary old_reject = Run("r3", "a", 2 * kHour, "reject", {"x"});
  old_reject.set_version(0);
  std::vector<NodeRunSummary> all = {Run("r1", "a", 0, "reject", {"x"}), old_accept};
  auto inc = r::ComputeIncidents("a", all);
  REQUIRE(inc.size() == 1);
  CHECK(inc[0].closed_run().empty());
  all.push_back(old_reject);
  all.push_back(Run("r4", "a", 4 * kHour, "accept"));
  inc = r::ComputeIncidents("a", all);
  REQUIRE(inc.size() == 1);
  CHECK(inc[0].rejecting_runs() == 2);
  CHECK(inc[0].closed_run() == "r4");
  CHECK(inc[0].repair_hours() == Approx(4.0));
  NodeRunSummary b = old_reject;
  b.set_node("b");
  REQUIRE(r::ComputeIncidents("b", {b}).size() == 1);
}
