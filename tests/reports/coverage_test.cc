// Issue 13 on the scorecard: measured means evaluated, coverage rules the
// tier, only the last attempt is judged, blame lands on the rank that
// failed, like is compared with like, and barrier starts are stated.
#include <catch2/catch.hpp>
#include <algorithm>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "reports/coverage.h"
#include "reports/judge_util.h"
#include "reports/scorecard.h"
#include "tests/reports/scorecard_test_util.h"

namespace cmax::reports {
namespace {

using testing::AnyReasonContains;
using testing::Category;
using testing::CleanHostcheckRun;
using testing::EvaluateEveryCategory;
using testing::Find;
using testing::Meas;
using testing::NodeOf;
using testing::Task;

// A plan entry and its task on every node of `d`; records of that task get
// the task's id and attempt (as the coordinator stores them).
int AddEntry(RunData* d, const std::string& suite, const std::string& name = "",
             v1::Scope scope = v1::SCOPE_NODE) {
  v1::SuiteSpec* s = d->plan.add_suites();
  s->set_suite(suite);
  s->set_name(name);
  s->set_scope(scope);
  return d->plan.suites_size() - 1;
}

v1::TaskInfo EntryTask(const RunData& d, int index, const std::string& nodes,
                       v1::TaskState state, int exit_code = 0, const std::string& message = "") {
  const v1::SuiteSpec& spec = d.plan.suites(index);
  v1::TaskInfo t = Task(nodes, spec.suite(), state, exit_code, message);
  t.set_task_id(absl::StrCat("run-1.", index, ".", nodes));
  t.set_name(spec.name().empty() ? spec.suite() : spec.name());
  t.set_suite_index(index);
  return t;
}

v1::ExportedRecord OfTask(v1::ExportedRecord rec, const v1::TaskInfo& t) {
  rec.set_task_id(t.task_id());
  rec.set_attempt(t.attempt());
  return rec;
}

v1::ExportedRecord NotMeasuredFinding(const std::string& node, const std::string& suite,
                                      const std::string& check_id, const std::string& category,
                                      const std::string& title, const std::string& why) {
  v1::ExportedRecord rec = Find(node, suite, check_id, v1::SEVERITY_INFO, category, "node", title,
                                why);
  rec.mutable_record()->mutable_finding()->set_not_measured(true);
  return rec;
}

TEST_CASE("not-measured findings and exit-2 tasks never grade a category", "[coverage]") {
  RunData d = CleanHostcheckRun();
  const int gemm = AddEntry(&d, "gemm");
  const int memory = AddEntry(&d, "memory");
  for (const auto& n : d.nodes) {
    for (int i : {gemm, memory}) {
      const std::string suite = d.plan.suites(i).suite();
      v1::TaskInfo t = EntryTask(d, i, n, v1::TASK_FAILED, 2, "could not run: exit 2");
      d.records.push_back(OfTask(NotMeasuredFinding(n, suite, "gpu.no_driver", "compute",
                                                    "not measured: no GPU driver",
                                                    "libcuda.so.1: cannot open shared object"),
                                 t));
      d.tasks.push_back(t);
    }
  }
  const v1::Scorecard card = BuildScorecard(d);
  const auto& compute = Category(card, "Compute");
  INFO(compute.summary());
  CHECK_FALSE(compute.measured());
  CHECK(compute.grade() == "not measured");
  CHECK(compute.nodes_evaluated() == 0);
  // One reason for the three nodes, without stacked verdict words; in the
  // coverage each entry, in the summary the two entries that fell short the
  // same way said once.
  CHECK(absl::StrContains(compute.coverage(), "evaluated on 0 of 3 nodes"));
  CHECK(absl::StrContains(
      compute.coverage(),
      "gemm on 0 of 3 (3 nodes (node-1, node-2, node-3): could not run: no GPU driver: "
      "libcuda.so.1: cannot open shared object)"));
  // The summary gives the cause; the coverage above has the detail.
  CHECK(compute.summary() ==
        "not measured: gemm, memory on 0 of 3: 3 nodes (node-1, node-2, node-3): could not "
        "run: no GPU driver");
  CHECK_FALSE(absl::StrContains(compute.summary(), "could not run: could not run"));
  CHECK_FALSE(absl::StrContains(compute.summary(), "not measured: not measured"));
  REQUIRE(compute.entries_size() == 2);
  CHECK(compute.entries(0).entry() == "gemm");
  CHECK(compute.entries(0).nodes_asked() == 3);
  CHECK(compute.entries(0).nodes_evaluated() == 0);

  CHECK(card.tier() == "not rated");
  // The headline groups by cause; the list has the counts, each entry once.
  CHECK(card.tier_reason() ==
        "not rated: Compute not measured: no GPU driver on 3 of 3 nodes; Networking, Storage, "
        "Security, Orchestration and Monitoring not in the plan");
  REQUIRE(card.missing_size() == 7);
  CHECK(card.missing(0) == "Compute evaluated on 0 of 3 nodes (needs 3)");
  CHECK(card.missing(1) ==
        "Compute: gemm, memory evaluated on 0 of 3 nodes (needs 3): 3 nodes (node-1, node-2, "
        "node-3): could not run: no GPU driver");
  CHECK(card.missing(2) == "Networking: the plan has no suite of this category");
  for (const auto& n : card.nodes()) {
    INFO(n.node());
    CHECK(n.verdict() == "warn");  // not measured is never a pass, never a fail
    CHECK(AnyReasonContains(n, "Compute not measured: gemm could not run: no GPU driver"));
    int said = 0;
    for (const auto& r : n.reasons()) said += absl::StrContains(r, "gemm could not run") ? 1 : 0;
    CHECK(said == 1);  // each reason once
  }
  // The findings are shown, marked, in the findings list.
  int shown = 0;
  for (const auto& f : card.findings()) shown += f.not_measured() ? 1 : 0;
  CHECK(shown == 6);
}

TEST_CASE("'Missing for a tier' reads at a glance: causes, not paragraphs, and at most 8 lines",
          "[coverage]") {
  // Ten entries, each short of its nodes for a cause of its own, with a
  // detail paragraph behind it, as a full plan on CPU-only nodes gives.
  RunData d = CleanHostcheckRun();
  const std::string paragraph =
      ": the CUDA runtime found no driver, and neither /proc/driver/nvidia/version nor "
      "libcuda.so.1 exist on this machine";
  for (int i = 0; i < 10; ++i) {
    const int e = AddEntry(&d, "gemm", absl::StrCat("gemm-", i));
    for (const auto& n : d.nodes) {
      const std::string why = i == 0 ? absl::StrCat("stopped: rank 1 on node-2 could not run: no "
                                                    "GPU driver", paragraph)
                                     : absl::StrCat("could not run: cause ", i, paragraph);
      d.tasks.push_back(EntryTask(d, e, n, v1::TASK_FAILED, 2, why));
    }
  }
  const v1::Scorecard card = BuildScorecard(d);
  std::vector<std::string> missing(card.missing().begin(), card.missing().end());
  INFO(absl::StrJoin(missing, "\n"));
  REQUIRE(missing.size() == kMissingLines);
  for (const auto& line : missing) CHECK_FALSE(absl::StrContains(line, "/proc/driver"));
  CHECK(missing.front() == "Compute evaluated on 0 of 3 nodes (needs 3)");
  CHECK(absl::StrContains(missing[1], "stopped with a rank of its group on another node"));
  CHECK(absl::StrContains(missing[2], "could not run: cause 1"));
  // gemm-6 to gemm-9, and the five categories without a suite in the plan.
  CHECK(missing.back() == "and 9 more (each category's coverage says which entries and why)");
  // The category's coverage keeps each reason whole.
  CHECK(absl::StrContains(Category(card, "Compute").coverage(), "/proc/driver/nvidia/version"));
}

TEST_CASE("an entry that needs more nodes than the run has is not measured, with the reason",
          "[coverage]") {
  // One node: hostcheck ran; the pairs entry and the connectivity gang were
  // ended by the coordinator before any attempt (Scheduler::CreateRun).
  RunData d = CleanHostcheckRun();
  d.nodes = {"node-1"};
  d.records.erase(std::remove_if(d.records.begin(), d.records.end(),
                                 [](const v1::ExportedRecord& r) { return r.node() != "node-1"; }),
                  d.records.end());
  d.tasks.resize(1);
  const std::string why = "not measured: needs 2 nodes, the run has 1";
  for (auto [suite, name, scope] : {std::tuple{"rdma", "rdma-pairs", v1::SCOPE_PAIRS},
                                    std::tuple{"connectivity", "", v1::SCOPE_GANG}}) {
    const int i = AddEntry(&d, suite, name, scope);
    v1::TaskInfo t = EntryTask(d, i, "node-1", v1::TASK_FAILED, 2, why);
    t.set_attempt(0);  // never assigned
    d.tasks.push_back(t);
  }
  const v1::Scorecard card = BuildScorecard(d);
  const auto& net = Category(card, "Networking");
  INFO(net.summary());
  CHECK_FALSE(net.measured());
  CHECK(net.grade() == "not measured");
  REQUIRE(net.entries_size() == 2);
  CHECK(net.entries(0).entry() == "rdma-pairs");
  CHECK(net.entries(0).nodes_evaluated() == 0);
  REQUIRE(net.entries(0).not_evaluated_size() == 1);
  CHECK(net.entries(0).not_evaluated(0) == "node-1: " + why);
  REQUIRE(net.entries(1).not_evaluated_size() == 1);
  CHECK(net.entries(1).not_evaluated(0) == "node-1: " + why);
  CHECK_FALSE(absl::StrContains(net.coverage(), "could not run"));
  CHECK_FALSE(absl::StrContains(net.coverage(), "completed without results"));
  int rules = 0;
  for (const auto& r : net.rules()) {
    if (r.rule_id() != "task.not_started") continue;
    ++rules;
    CHECK(r.outcome() == "not_measured");
    CHECK(absl::StrContains(r.message(), "not measured: needs 2 nodes, the run has 1"));
  }
  CHECK(rules == 2);
  const auto& node = NodeOf(card, "node-1");
  CHECK(node.verdict() == "warn");  // never a pass, never a fail
  CHECK(AnyReasonContains(node, "Networking not measured: rdma-pairs (rdma) " + why));
  CHECK(card.tier() == "not rated");
}

TEST_CASE("a plan of selftest alone is not rated", "[coverage]") {
  RunData d;
  d.run.set_run_id("run-1");
  d.plan.set_name("selftest-only");
  d.nodes = {"node-1", "node-2"};
  const int i = AddEntry(&d, "selftest");
  for (const auto& n : d.nodes) {
    v1::TaskInfo t = EntryTask(d, i, n, v1::TASK_COMPLETED);
    d.records.push_back(OfTask(Meas(n, "selftest", "selftest_records", 100, "count"), t));
    d.records.push_back(OfTask(Find(n, "selftest", "selftest.ok", v1::SEVERITY_INFO,
                                    "reliability", "node", "pipeline ok"),
                               t));
    d.tasks.push_back(t);
  }
  const v1::Scorecard card = BuildScorecard(d);
  for (const auto& c : card.categories()) {
    INFO(c.name());
    CHECK_FALSE(c.measured());
  }
  CHECK(card.tier() == "not rated");
  CHECK(card.findings().empty());
  CHECK(card.measurements().empty());
}

TEST_CASE("a tier needs every rated category on at least 90% of the nodes", "[coverage]") {
  auto run_with = [](int nodes, int evaluated) {
    RunData d;
    d.run.set_run_id("run-1");
    for (int i = 0; i < nodes; ++i) {
      const std::string n = absl::StrCat("node-", i);
      d.nodes.push_back(n);
      d.records.push_back(Find(n, "health", "health.xid", v1::SEVERITY_INFO, "reliability",
                               "node", "no Xid in the kernel log"));
      if (i >= evaluated) continue;
      d.records.push_back(Find(n, "gemm", "gemm.verified", v1::SEVERITY_INFO, "compute", "gpu:0",
                               "verified"));
      d.records.push_back(Find(n, "connectivity", "c.ok", v1::SEVERITY_INFO, "networking", "node",
                               "ok"));
      d.records.push_back(Find(n, "storage", "s.ok", v1::SEVERITY_INFO, "storage", "node", "ok"));
      d.records.push_back(Find(n, "audit", "a.ok", v1::SEVERITY_INFO, "security", "node", "ok"));
      d.records.push_back(
          Find(n, "orchestration", "o.ok", v1::SEVERITY_INFO, "orchestration", "node", "ok"));
      d.records.push_back(
          Find(n, "monitoring", "m.ok", v1::SEVERITY_INFO, "monitoring", "node", "ok"));
    }
    return BuildScorecard(d);
  };
  CHECK(NodesNeeded(3) == 3);
  CHECK(NodesNeeded(10) == 9);
  CHECK(NodesNeeded(64) == 58);
  CHECK(run_with(10, 9).tier() == "Platinum");
  const v1::Scorecard short_card = run_with(10, 8);
  CHECK(short_card.tier() == "not rated");
  // No plan entries to name a cause: the counts are the reason, said once
  // for the categories short the same way.
  CHECK(short_card.tier_reason() ==
        "not rated: Compute, Networking, Storage, Security, Orchestration and 1 more evaluated "
        "on 8 of 10 nodes (needs 9)");
}

TEST_CASE("a plan entry that evaluated too few of its nodes keeps the run from a tier",
          "[coverage]") {
  RunData d = CleanHostcheckRun();
  EvaluateEveryCategory(&d);  // every category evaluated on every node
  const int nccl = AddEntry(&d, "collective", "nccl-all-nodes", v1::SCOPE_GANG);
  v1::TaskInfo t = EntryTask(d, nccl, "node-1,node-2,node-3", v1::TASK_FAILED, 2,
                             "could not run: no CUDA device");
  d.tasks.push_back(t);
  const v1::Scorecard card = BuildScorecard(d);
  const auto& net = Category(card, "Networking");
  INFO(card.tier_reason());
  CHECK(net.measured());  // the connectivity findings
  CHECK(card.tier() == "not rated");
  // The category is covered (connectivity): the entry is what is missing.
  CHECK(card.tier_reason() ==
        "not rated: nccl-all-nodes not measured: no CUDA device on 3 of 3 nodes");
  REQUIRE(card.missing_size() == 1);
  CHECK(card.missing(0) ==
        "Networking: nccl-all-nodes evaluated on 0 of 3 nodes (needs 3): 3 nodes "
        "(node-1, node-2, node-3): could not run: no CUDA device");
}

TEST_CASE("only the last attempt of a task is judged, earlier ones are history",
          "[coverage]") {
  RunData d = CleanHostcheckRun();
  EvaluateEveryCategory(&d);
  const int gemm = AddEntry(&d, "gemm");
  v1::TaskInfo t = EntryTask(d, gemm, "node-2", v1::TASK_COMPLETED);
  t.set_attempt(2);
  v1::AttemptSummary* a = t.add_earlier_attempts();
  a->set_attempt(1);
  a->set_state(v1::TASK_LOST);
  a->set_message("agent on node-2 lost (no heartbeat)");
  d.tasks.push_back(t);
  // Attempt 1 wrote a failing finding before the agent was killed; attempt 2
  // ran clean.
  v1::ExportedRecord old = OfTask(Find("node-2", "gemm", "gemm.mismatch", v1::SEVERITY_FAIL,
                                       "compute", "gpu:0", "wrong elements"),
                                  t);
  old.set_attempt(1);
  d.records.push_back(old);
  d.records.push_back(OfTask(Find("node-2", "gemm", "gemm.verified", v1::SEVERITY_INFO, "compute",
                                  "gpu:0", "verified"),
                             t));
  // A record that arrived after its task ended is shown in history only.
  v1::ExportedRecord late = OfTask(Find("node-2", "gemm", "gemm.late", v1::SEVERITY_FAIL,
                                        "compute", "gpu:1", "late"),
                                   t);
  late.set_late(true);
  d.records.push_back(late);

  const v1::Scorecard card = BuildScorecard(d);
  INFO(card.tier_reason());
  const auto& n2 = NodeOf(card, "node-2");
  CHECK(n2.verdict() == "pass");
  CHECK(Category(card, "Compute").grade() == "A");
  REQUIRE(n2.history_size() >= 2);
  bool attempts = false, earlier = false, late_said = false;
  for (const auto& h : n2.history()) {
    attempts = attempts || absl::StrContains(h, "gemm: attempt 1 lost: agent on node-2 lost "
                                                "(no heartbeat), attempt 2 completed");
    earlier = earlier || absl::StrContains(h, "1 record of gemm from earlier attempts");
    late_said = late_said || absl::StrContains(h, "arrived after the task ended (late)");
  }
  CHECK(attempts);
  CHECK(earlier);
  CHECK(late_said);
  CHECK(card.tier() == "Platinum");
}

TEST_CASE("a gang whose rank crashed fails that node only, the others are not measured",
          "[coverage]") {
  RunData d = CleanHostcheckRun();
  EvaluateEveryCategory(&d);
  const int nccl = AddEntry(&d, "collective", "nccl-all-nodes", v1::SCOPE_GANG);
  v1::TaskInfo t = EntryTask(d, nccl, "node-1,node-2,node-3", v1::TASK_FAILED, 139,
                             "rank 1 on node-2 failed: killed by signal 11");
  t.set_blamed_nodes("node-2");
  d.tasks.push_back(t);
  const v1::Scorecard card = BuildScorecard(d);
  CHECK(NodeOf(card, "node-2").verdict() == "fail");
  CHECK(AnyReasonContains(NodeOf(card, "node-2"), "nccl-all-nodes (collective) crashed"));
  for (const char* n : {"node-1", "node-3"}) {
    INFO(n);
    const auto& v = NodeOf(card, n);
    for (const auto& r : v.reasons()) UNSCOPED_INFO(r);
    CHECK(v.verdict() == "warn");
    CHECK(AnyReasonContains(v, "Networking not measured: nccl-all-nodes (collective) stopped: "
                               "rank 1 on node-2 failed: killed by signal 11"));
    for (const auto& r : v.reasons()) CHECK_FALSE(absl::StartsWith(r, "Reliability fail"));
  }
  // Without a blamed node (an old coordinator) every node of the group fails.
  RunData legacy = CleanHostcheckRun();
  const int i = AddEntry(&legacy, "selftest", "", v1::SCOPE_GANG);
  legacy.tasks.push_back(EntryTask(legacy, i, "node-1,node-3", v1::TASK_LOST));
  const v1::Scorecard lc = BuildScorecard(legacy);
  CHECK(NodeOf(lc, "node-1").verdict() == "fail");
  CHECK(NodeOf(lc, "node-3").verdict() == "fail");
}

TEST_CASE("storage: per-job floors are not applied to node totals, the slow node's total is "
          "named",
          "[coverage]") {
  RunData d;
  d.run.set_run_id("run-1");
  d.nodes = {"n1", "n2", "n3", "n4"};
  (*d.plan.mutable_expect()->mutable_metrics())["storage_bandwidth_mbps.seq-read"] = 500;
  for (const auto& n : d.nodes) {
    const double per_job = n == "n3" ? 300 : 1000;
    for (int j = 0; j < 4; ++j) {
      d.records.push_back(Meas(n, "storage", "storage_bandwidth_mbps", per_job, "MB/s",
                               {{"pattern", "seq-read"}, {"op", "read"},
                                {"job", absl::StrCat(j)}}));
    }
    d.records.push_back(Meas(n, "storage", "storage_bandwidth_mbps", per_job * 4, "MB/s",
                             {{"pattern", "seq-read"}, {"op", "read"}, {"job", "all"}}));
  }
  const v1::Scorecard card = BuildScorecard(d);
  const auto& st = Category(card, "Storage");
  int floor_fails = 0, total_outlier = 0, mixed = 0;
  for (const auto& r : st.rules()) {
    if (absl::StartsWith(r.rule_id(), "expect.metrics") && r.outcome() == "fail") {
      ++floor_fails;
      CHECK(r.node() == "n3");
      CHECK(r.value() == 300);  // per job, never the 1200 MB/s total
    }
    if (absl::StartsWith(r.rule_id(), "fleet.outlier") && absl::StrContains(r.message(), "job=all")) {
      ++total_outlier;
      CHECK(r.node() == "n3");
      CHECK(absl::StrContains(r.message(), "1200 MB/s"));
    }
    if (absl::StartsWith(r.rule_id(), "fleet.spread") && absl::StrContains(r.message(), "max 4000") &&
        absl::StrContains(r.message(), "min 300")) {
      ++mixed;  // a group holding both per-job figures and totals
    }
  }
  CHECK(floor_fails == 4);
  CHECK(total_outlier == 1);
  CHECK(mixed == 0);
}

TEST_CASE("a GEMM floor applies to each GPU's best verified shape, unverified figures never "
          "meet it",
          "[coverage]") {
  RunData d = CleanHostcheckRun();
  (*d.plan.mutable_expect()->mutable_metrics())["gemm_tflops.bf16"] = 750;
  auto gemm = [](const std::string& node, const std::string& gpu, int m, double tflops,
                 const std::string& verified) {
    return Meas(node, "gemm", "gemm_tflops", tflops, "TFLOP/s",
                {{"gpu", gpu}, {"dtype", "bf16"}, {"m", absl::StrCat(m)},
                 {"n", absl::StrCat(m)}, {"k", absl::StrCat(m)}, {"verified", verified}});
  };
  for (const auto& n : d.nodes) {
    d.records.push_back(gemm(n, "0", 1024, 300, "true"));  // small shape: not held to the floor
    d.records.push_back(gemm(n, "0", 8192, n == "node-2" ? 700 : 790, "true"));
  }
  d.records.push_back(gemm("node-3", "1", 8192, 900, "false"));  // wrong result: not a figure
  const v1::Scorecard card = BuildScorecard(d);
  std::vector<v1::RuleResult> fails;
  for (const auto& r : Category(card, "Compute").rules()) {
    if (absl::StartsWith(r.rule_id(), "expect.metrics") && r.outcome() == "fail") fails.push_back(r);
  }
  REQUIRE(fails.size() == 1);
  CHECK(fails[0].node() == "node-2");
  CHECK(fails[0].value() == 700);
  // A key naming a shape applies to that shape.
  (*d.plan.mutable_expect()->mutable_metrics()).clear();
  (*d.plan.mutable_expect()->mutable_metrics())["gemm_tflops.bf16.1024x1024x1024"] = 250;
  const v1::Scorecard shaped = BuildScorecard(d);
  bool met = false;
  for (const auto& e : Category(shaped, "Compute").evidence()) {
    met = met || absl::StrContains(e, "3 of 3 measurements at or above");
  }
  CHECK(met);
}

TEST_CASE("a bare busbw_gbps floor applies to every collective run", "[coverage]") {
  RunData d;
  d.run.set_run_id("run-1");
  d.nodes = {"a"};
  (*d.plan.mutable_expect()->mutable_metrics())["busbw_gbps"] = 400;
  d.records.push_back(Meas("a", "collective", "busbw_gbps", 350, "GB/s",
                           {{"op", "all_reduce"}, {"dtype", "float"}, {"backend", "nccl"},
                            {"ranks", "8"}, {"size_bytes", "17179869184"}, {"placement",
                            "out_of_place"}, {"nodes", "a"}, {"group_size", "1"}}));
  const v1::Scorecard card = BuildScorecard(d);
  bool failed = false;
  for (const auto& r : Category(card, "Networking").rules()) {
    if (r.outcome() == "fail" && r.expected() == 400 && r.node() == "a") failed = true;
  }
  CHECK(failed);
}

TEST_CASE("per-GPU and all-GPU copies are compared only with their own kind", "[coverage]") {
  RunData d;
  d.run.set_run_id("run-1");
  d.nodes = {"n1", "n2", "n3", "n4"};
  for (const auto& n : d.nodes) {
    for (int g = 0; g < 2; ++g) {
      d.records.push_back(Meas(n, "memory", "memory_bandwidth_gbps", 55, "GB/s",
                               {{"test", "h2d"}, {"gpu", absl::StrCat(g)}, {"size_bytes", "1"}}));
    }
    d.records.push_back(Meas(n, "memory", "memory_bandwidth_gbps", 110, "GB/s",
                             {{"test", "h2d"}, {"gpu", "all"}, {"size_bytes", "1"}}));
  }
  const v1::Scorecard card = BuildScorecard(d);
  for (const auto& r : Category(card, "Compute").rules()) {
    CHECK_FALSE(absl::StartsWith(r.rule_id(), "fleet.outlier"));
  }
}

TEST_CASE("barrier entries state the measured start skew", "[coverage]") {
  RunData d = CleanHostcheckRun();
  const int i = AddEntry(&d, "burnin", "burnin-fleet", v1::SCOPE_BARRIER);
  v1::TaskInfo t = EntryTask(d, i, "node-1,node-2,node-3", v1::TASK_COMPLETED);
  d.tasks.push_back(t);
  const double lags[] = {0.002, 0.0155, 0.004};
  for (int k = 0; k < 2; ++k) {  // node-3 sent none
    v1::ExportedRecord rec;
    rec.set_node(d.nodes[k]);
    rec.set_suite("burnin");
    v1::Sample* s = rec.mutable_record()->mutable_sample();
    s->set_metric("cmax_task_start");
    s->set_value(lags[k]);
    s->set_unit("s");
    d.records.push_back(OfTask(rec, t));
  }
  const v1::Scorecard card = BuildScorecard(d);
  REQUIRE(card.barrier_starts_size() == 1);
  const auto& b = card.barrier_starts(0);
  CHECK(b.entry() == "burnin-fleet");
  CHECK(b.nodes() == 2);
  CHECK(b.skew_ms() == Approx(13.5));
  CHECK(b.max_lag_ms() == Approx(15.5));
  REQUIRE(b.missing_size() == 1);
  CHECK(b.missing(0) == "node-3");
}

TEST_CASE("reasons are grouped by node and stripped of repeated verdict words", "[coverage]") {
  CHECK(StripVerdictPrefixes("could not run: not measured: no GPU") == "no GPU");
  CHECK(StripVerdictPrefixes("Could not run: error: x") == "x");
  CHECK(StripVerdictPrefixes("no GPU") == "no GPU");
  CHECK(StripVerdictPrefixes("rank 1 on b could not run: not measured: no GPU") ==
        "rank 1 on b could not run: no GPU");
  const auto grouped = GroupReasons({{"a", "x"}, {"b", "y"}, {"c", "x"}, {"a", "x"}});
  REQUIRE(grouped.size() == 2);
  CHECK(grouped[0] == "2 nodes (a, c): x");
  CHECK(grouped[1] == "b: y");
}

}  // namespace
}  // namespace cmax::reports

namespace cmax::reports {
namespace {

TEST_CASE("a category graded by fleet-wide results alone says so", "[coverage]") {
  RunData d;
  d.run.set_run_id("run-1");
  d.nodes = {"a", "b"};
  for (const auto& n : d.nodes) {
    v1::Inventory inv;
    inv.set_kernel("6.1.0-28-amd64");
    d.inventories[n] = inv;
  }
  const v1::Scorecard card = BuildScorecard(d);
  const auto& life = testing::Category(card, "Lifecycle");
  REQUIRE(life.measured());  // the inventories agree: a fleet-wide pass
  CHECK(life.grade() == "A");
  CHECK(life.nodes_evaluated() == 0);
  // What it evaluated, in place of "evaluated on 0 of 2 nodes" next to an A:
  // two attributes compared (GPU count and kernel; these nodes have no GPU,
  // so model and driver are not compared).
  CHECK(life.fleet_rules() == 2);
  CHECK(life.fleet_rules_evaluated() == 2);
  CHECK(IsFleetOnly(life));
  CHECK(EvaluatedOnText(life) == "fleet rules: 2 of 2");
  CHECK(life.coverage() == "fleet rules: 2 of 2; the plan has no suite of this category");
  CHECK_FALSE(absl::StrContains(life.summary(), "0 of 2"));
  const std::string md = RenderMarkdown(card);
  CHECK(absl::StrContains(md, "| Lifecycle | **A** | fleet rules: 2 of 2 | no warnings or failures |"));
  CHECK_FALSE(absl::StrContains(md, "| Lifecycle | **A** | 0 of 2 nodes"));
  const std::string html = RenderHtml(card);
  CHECK(absl::StrContains(html, "<td class=\"k\">fleet rules: 2 of 2</td>"));
  CHECK(absl::StrContains(html, "A</span></h3><div>fleet rules: 2 of 2</div>"));  // its card
  // A category that evaluated nodes keeps its node count.
  CHECK(EvaluatedOnText(testing::Category(card, "Compute")) == "0 of 2 nodes");
}

TEST_CASE("a one-node fleet leaves Lifecycle not measured: nothing to compare",
          "[coverage]") {
  RunData d;
  d.run.set_run_id("run-1");
  d.nodes = {"solo"};
  v1::Inventory inv;
  inv.set_kernel("6.1.0-28-amd64");
  inv.set_gpu_count(8);
  d.inventories["solo"] = inv;
  const v1::Scorecard card = BuildScorecard(d);
  const auto& life = testing::Category(card, "Lifecycle");
  CHECK_FALSE(life.measured());
  CHECK(life.grade() == "not measured");  // never an A on nothing compared
  CHECK(life.fleet_rules() == 1);
  CHECK(life.fleet_rules_evaluated() == 0);
  CHECK(EvaluatedOnText(life) == "fleet rules: 0 of 1");
  CHECK(life.summary() ==
        "not measured: inventory uniformity needs two or more nodes to compare; only solo has "
        "an inventory");
  // Not measured is never a pass: the node's verdict is untouched by it.
  CHECK(NodeOf(card, "solo").verdict() != "pass");
}

TEST_CASE("counts in coverage texts say 1 node and 2 nodes", "[coverage]") {
  CategoryCoverage one;
  CHECK(CoverageText(one, 1) == "evaluated on 0 of 1 node; the plan has no suite of this category");
  one.evaluated = {"a"};
  CHECK(CoverageText(one, 2) == "evaluated on 1 of 2 nodes; the plan has no suite of this category");
  v1::CategoryGrade g;
  g.set_nodes_evaluated(1);
  g.set_nodes_selected(1);
  CHECK(EvaluatedOnText(g) == "1 of 1 node");
  g.set_nodes_selected(3);
  CHECK(EvaluatedOnText(g) == "1 of 3 nodes");
  g.set_fleet_rules(4);  // it evaluated a node: the node count stays
  CHECK(EvaluatedOnText(g) == "1 of 3 nodes");
  g.set_nodes_evaluated(0);
  CHECK(EvaluatedOnText(g) == "fleet rules: 0 of 4");
  g.add_entries()->set_entry("gemm");  // a plan entry: the tier needs the node count
  CHECK(EvaluatedOnText(g) == "0 of 3 nodes");
}

}  // namespace
}  // namespace cmax::reports

namespace cmax::reports {
namespace {

TEST_CASE("FP8 with and without fast accumulation are compared only with their own mode",
          "[coverage]") {
  RunData d;
  d.run.set_run_id("run-1");
  d.nodes = {"n1", "n2", "n3", "n4"};
  for (const auto& n : d.nodes) {
    for (const char* fast : {"true", "false"}) {
      const double tflops = std::string(fast) == "true" ? 1500 : 900;
      d.records.push_back(testing::Meas(n, "gemm", "gemm_tflops", tflops, "TFLOP/s",
                                        {{"gpu", "0"}, {"dtype", "fp8"}, {"m", "8192"},
                                         {"n", "8192"}, {"k", "8192"}, {"verified", "true"},
                                         {"fp8_fast_accum", fast}}));
    }
  }
  const v1::Scorecard card = BuildScorecard(d);
  int spreads = 0;
  for (const auto& r : testing::Category(card, "Compute").rules()) {
    CHECK_FALSE(absl::StartsWith(r.rule_id(), "fleet.outlier"));  // nobody is slow in its mode
  }
  for (const auto& e : testing::Category(card, "Compute").evidence()) {
    spreads += absl::StrContains(e, "gemm_tflops (dtype=fp8") ? 1 : 0;
  }
  CHECK(spreads == 2);  // one group per mode
}

}  // namespace
}  // namespace cmax::reports

namespace cmax::reports {
namespace {

TEST_CASE("a gang one rank of which could not run: the others were stopped, said once",
          "[coverage]") {
  RunData d = CleanHostcheckRun();
  v1::SuiteSpec* s = d.plan.add_suites();
  s->set_suite("collective");
  s->set_name("nccl-all-nodes");
  s->set_scope(v1::SCOPE_GANG);
  v1::TaskInfo t = Task("node-1,node-2,node-3", "collective", v1::TASK_FAILED, 2,
                        "rank 1 on node-2 could not run: no NCCL");
  t.set_name("nccl-all-nodes");
  t.set_suite_index(d.plan.suites_size() - 1);
  t.set_blamed_nodes("node-2");
  d.tasks.push_back(t);
  const v1::Scorecard card = BuildScorecard(d);
  for (const char* n : {"node-1", "node-3"}) {
    INFO(n);
    const auto& v = NodeOf(card, n);
    int said = 0;
    for (const auto& r : v.reasons()) {
      said += absl::StrContains(r, "nccl-all-nodes (collective) stopped: rank 1 on node-2 could "
                                   "not run: no NCCL") ? 1 : 0;
      CHECK_FALSE(absl::StrContains(r, "could not run: rank 1"));
    }
    CHECK(said == 1);
    CHECK(v.verdict() == "warn");
  }
  CHECK(AnyReasonContains(NodeOf(card, "node-2"), "nccl-all-nodes (collective) could not run"));
  CHECK(NodeOf(card, "node-2").verdict() == "warn");  // could not run is never a fail
}

}  // namespace
}  // namespace cmax::reports

namespace cmax::reports {
namespace {

// full.yaml's shape on one node whose agent has no cmax-bench-cuda: hostcheck,
// storage and audit ran; every GPU entry could not run, each with the agent's
// words (agent/assignment_validation.cc) naming its own suite.
RunData OneNodeWithoutCuda() {
  RunData d;
  d.run.set_run_id("run-1");
  d.plan.set_name("full");
  d.nodes = {"solo"};
  auto add = [&](const std::string& suite, const std::string& name) {
    v1::SuiteSpec* s = d.plan.add_suites();
    s->set_suite(suite);
    s->set_name(name);
    return d.plan.suites_size() - 1;
  };
  const int hostcheck = add("hostcheck", "");
  v1::TaskInfo h = EntryTask(d, hostcheck, "solo", v1::TASK_COMPLETED);
  d.tasks.push_back(h);
  d.records.push_back(OfTask(Find("solo", "hostcheck", "hostcheck.swap", v1::SEVERITY_INFO,
                                  "reliability", "node", "swap is disabled"),
                             h));
  const int storage = add("storage", "");
  v1::TaskInfo st = EntryTask(d, storage, "solo", v1::TASK_COMPLETED);
  d.tasks.push_back(st);
  d.records.push_back(OfTask(Find("solo", "storage", "storage.verify", v1::SEVERITY_INFO,
                                  "storage", "path:/data", "written data read back intact"),
                             st));
  const int audit = add("audit", "");
  v1::TaskInfo a = EntryTask(d, audit, "solo", v1::TASK_COMPLETED);
  d.tasks.push_back(a);
  d.records.push_back(OfTask(Find("solo", "audit", "audit.runc", v1::SEVERITY_INFO, "security",
                                  "node", "runc 1.1.14 is not affected"),
                             a));
  for (const auto& [suite, name] : std::vector<std::pair<std::string, std::string>>{
           {"gemm", "gemm"},
           {"memory", "memory"},
           {"burnin", "burnin"},
           {"collective", "nccl-intra-node"},
           {"collective", "nccl-alltoall"}}) {
    const int i = add(suite, name);
    d.tasks.push_back(EntryTask(
        d, i, "solo", v1::TASK_FAILED, 2,
        "could not run: cmax-bench-cuda is missing: /usr/lib/cmax/cmax-bench-cuda is not an "
        "executable file"));
  }
  return d;
}

size_t Occurrences(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST_CASE("the not-rated headline is one sentence that says each cause once", "[coverage]") {
  const v1::Scorecard card = BuildScorecard(OneNodeWithoutCuda());
  INFO(card.tier_reason());
  CHECK(card.tier() == "not rated");
  // Compute and Networking as a whole; burnin, an entry of Reliability
  // (which hostcheck covered), by name; the cause once.
  CHECK(card.tier_reason() ==
        "not rated: Compute, Networking and burnin not measured: cmax-bench-cuda is missing on "
        "1 of 1 node; Orchestration and Monitoring not in the plan");
  CHECK(card.tier_reason().size() < 200);
  CHECK(Occurrences(card.tier_reason(), "cmax-bench-cuda") == 1);
  CHECK_FALSE(absl::StrContains(card.tier_reason(), ". "));  // one sentence
  CHECK_FALSE(absl::StrContains(card.tier_reason(), " 1 nodes"));
  // The list: each gap once, entries that fell short the same way in one
  // line (burnin is Reliability's, covered by hostcheck on the node).
  std::vector<std::string> missing(card.missing().begin(), card.missing().end());
  INFO(absl::StrJoin(missing, "\n"));
  CHECK(missing ==
        std::vector<std::string>{
            "Compute evaluated on 0 of 1 node (needs 1)",
            "Compute: gemm, memory evaluated on 0 of 1 node (needs 1): solo: could not run: "
            "cmax-bench-cuda is missing",
            "Networking evaluated on 0 of 1 node (needs 1)",
            "Networking: nccl-intra-node, nccl-alltoall evaluated on 0 of 1 node (needs 1): "
            "solo: could not run: cmax-bench-cuda is missing",
            "Reliability: burnin evaluated on 0 of 1 node (needs 1): solo: could not run: "
            "cmax-bench-cuda is missing",
            "Orchestration: the plan has no suite of this category",
            "Monitoring: the plan has no suite of this category"});
  // The headline is said once in each rendering: HTML's tier box (no "Why"
  // row repeating it), Markdown's "Why" row.
  const std::string html = RenderHtml(card);
  CHECK(Occurrences(html, "Compute, Networking and burnin not measured") == 1);
  CHECK_FALSE(absl::StrContains(html, "<th>Why</th>"));
  const std::string md = RenderMarkdown(card);
  CHECK(Occurrences(md, "Compute, Networking and burnin not measured") == 1);
  CHECK(absl::StrContains(md, "| Why | not rated: Compute, Networking and burnin not measured: "));
}

TEST_CASE("the headline names entries of a covered category, groups causes, caps the count",
          "[coverage]") {
  Coverage cov;
  cov.selected = 3;
  for (const auto& name : CategoryNames()) cov.categories[name];
  // Compute: nothing on c; gemm crashed there (the cause), memory fine.
  CategoryCoverage& compute = cov.categories["Compute"];
  compute.evaluated = {"a", "b"};
  v1::EntryCoverage gemm;
  gemm.set_entry("gemm");
  gemm.set_nodes_asked(3);
  gemm.set_nodes_evaluated(2);
  gemm.add_not_evaluated("c: crashed (exit code 139): Segmentation fault");
  compute.entries.push_back(gemm);
  compute.entry_why.push_back({{"c", "crashed (exit code 139): Segmentation fault"}});
  // Networking covered by connectivity; an NCCL entry short on every node.
  CategoryCoverage& net = cov.categories["Networking"];
  net.evaluated = {"a", "b", "c"};
  v1::EntryCoverage nccl;
  nccl.set_entry("nccl-all-nodes");
  nccl.set_nodes_asked(3);
  nccl.set_nodes_evaluated(0);
  nccl.add_not_evaluated("3 nodes (a, b, c): could not run: no GPU driver: libcuda.so.1");
  net.entries.push_back(nccl);
  net.entry_why.push_back({{"a", "could not run: no GPU driver: libcuda.so.1"},
                           {"b", "could not run: no GPU driver: libcuda.so.1"},
                           {"c", "could not run: no GPU driver: libcuda.so.1"}});
  // Reliability fine; Storage and Security not in the plan.
  cov.categories["Reliability"].evaluated = {"a", "b", "c"};
  cov.categories["Reliability"].entries.emplace_back();
  cov.categories["Reliability"].entry_why.emplace_back();
  CHECK(NotRatedHeadline(cov) ==
        "Compute not measured: crashed (exit code 139) on 1 of 3 nodes; nccl-all-nodes not "
        "measured: no GPU driver on 3 of 3 nodes; Storage, Security, Orchestration and "
        "Monitoring not in the plan");
  // More causes than kHeadlineCauses: the rest is a count.
  cov.categories["Reliability"].evaluated = {"a"};
  cov.categories["Reliability"].entry_why[0] = {{"b", "agent lost: no heartbeat"},
                                                {"c", "hung: killed at timeout"}};
  const std::string capped = NotRatedHeadline(cov);
  CHECK(capped ==
        "Compute not measured: crashed (exit code 139) on 1 of 3 nodes; nccl-all-nodes not "
        "measured: no GPU driver on 3 of 3 nodes; Reliability not measured: agent lost on 1 of "
        "3 nodes; and 2 more causes");
  CHECK(ShortCause("could not run: no GPU driver: libcuda.so.1: cannot open") == "no GPU driver");
  CHECK(ShortCause("could not run") == "could not run");
  CHECK(ShortCause("not measured: not measured: no CUDA device") == "no CUDA device");
  CHECK(ShortCause("completed without results") == "completed without results");
  // A colon inside parentheses belongs to the cause.
  CHECK(ShortCause("not measured: bare metal (managed: false): no scheduler asked") ==
        "bare metal (managed: false)");
  CHECK(ShortCause("stopped: rank 1 on b could not run: x") ==
        "stopped with a rank of its group on another node");
}

TEST_CASE("a category's summary holds three reasons and a count, the section the rest",
          "[coverage]") {
  // Eight nodes, each failing its own way: eight distinct reasons.
  RunData d;
  d.run.set_run_id("run-1");
  for (int i = 0; i < 8; ++i) {
    const std::string n = absl::StrCat("node-", i);
    d.nodes.push_back(n);
    d.records.push_back(Find(n, "health", absl::StrCat("health.x", i), v1::SEVERITY_FAIL,
                             "reliability", "node", absl::StrCat("fault number ", i)));
  }
  const v1::Scorecard card = BuildScorecard(d);
  const auto& rel = Category(card, "Reliability");
  INFO(rel.summary());
  CHECK(absl::StartsWith(rel.summary(), "8 failures: "));
  int named = 0;
  for (int i = 0; i < 8; ++i) named += absl::StrContains(rel.summary(), absl::StrCat("fault number ", i));
  CHECK(named == 3);
  CHECK(absl::EndsWith(rel.summary(), "; and 5 more in the Reliability section"));
  CHECK(rel.summary().size() < 400);
  // Every reason is in the category's own section and in the findings.
  const std::string md = RenderMarkdown(card);
  const std::string html = RenderHtml(card);
  for (int i = 0; i < 8; ++i) {
    INFO(i);
    const std::string reason = absl::StrCat("fault number ", i);
    CHECK(absl::StrContains(md.substr(md.find("### Reliability")), reason));
    CHECK(absl::StrContains(html.substr(html.find("id=\"rules\"")), reason));
  }
  // The summary cell is the summary alone: the coverage is in the section.
  CHECK(absl::StrContains(md, "| Reliability | **D** | 8 of 8 nodes | 8 failures: "));
  CHECK(absl::StrContains(md, "### Reliability: D\n\nCoverage: evaluated on 8 of 8 nodes"));
  CHECK(absl::StrContains(html, "<p class=\"cov\">Coverage: evaluated on 8 of 8 nodes"));
  CHECK_FALSE(absl::StrContains(html, "<small>"));
}

}  // namespace
}  // namespace cmax::reports
