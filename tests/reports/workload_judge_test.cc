// The workload judge on hand-made records: a replica whose loss departs,
// a straggler, the stall blamed on the rank that stopped, and the loss held
// to a baseline run's curve (reports/loss_curve.h).
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "generated/suite_judges.h"
#include "reports/baseline.h"
#include "reports/loss_curve.h"
#include "reports/run_data.h"
#include "reports/scorecard.h"
#include "tests/reports/scorecard_test_util.h"

using cmax::reports::RunData;
using cmax::v1::RuleResult;

namespace {

void Measure(RunData* d, const std::string& node, int rank, const std::string& metric,
             double value, int step = -1, const std::string& gpu = "") {
  cmax::v1::ExportedRecord er;
  er.set_task_id("t1");
  er.set_node(node);
  er.set_rank(rank);  // each rank writes its own spool (the coordinator checks the pair)
  er.set_suite("workload");
  // Per-step figures are Samples, the per-rank ones Measurements.
  auto* m = step >= 0 ? nullptr : er.mutable_record()->mutable_measurement();
  auto* sm = step >= 0 ? er.mutable_record()->mutable_sample() : nullptr;
  if (m != nullptr) {
    m->set_suite("workload");
    m->set_metric(metric);
    m->set_value(value);
  } else {
    sm->set_suite("workload");
    sm->set_metric(metric);
    sm->set_value(value);
  }
  auto& l = m != nullptr ? *m->mutable_labels() : *sm->mutable_labels();
  l["rank"] = absl::StrCat(rank);
  l["world_size"] = "3";
  if (step >= 0) {
    l["step"] = absl::StrCat(step);
    l["warmup"] = step < 2 ? "true" : "false";
  }
  if (!gpu.empty()) l["gpu"] = gpu;
  if (metric == "loss") {  // what workload.cc labels every record with
    l["model"] = "layers=1 width=64 heads=2 seq=32 batch=4 vocab=1024 seed=1234 lr=0.0003";
    l["device"] = gpu.empty() ? "cpu" : "NVIDIA H200";
    l["dtype"] = gpu.empty() ? "fp32" : "bf16";
    l["torch_version"] = "1.13.1";
  }
  d->records.push_back(er);
}

void Stall(RunData* d, const std::string& node, int rank, int last_step, bool in_comm,
           const std::string& state = "S") {
  cmax::v1::ExportedRecord er;
  er.set_task_id("t1");
  er.set_node(node);
  er.set_rank(rank);  // each rank writes its own spool (the coordinator checks the pair)
  er.set_suite("workload");
  auto* f = er.mutable_record()->mutable_finding();
  f->set_check_id("workload.no_step");
  f->set_severity(cmax::v1::SEVERITY_WARN);
  auto& l = *f->mutable_labels();
  l["rank"] = absl::StrCat(rank);
  l["world_size"] = "3";
  l["last_step"] = absl::StrCat(last_step);
  l["in_comm"] = in_comm ? "true" : "false";
  l["waited_s"] = "12.0";
  l["process_state"] = state;
  d->records.push_back(er);
}

std::vector<RuleResult> Judge(const RunData& d) {
  std::vector<RuleResult> out;
  cmax::reports::WorkloadJudge(d, &out);
  return out;
}

std::vector<RuleResult> With(const std::vector<RuleResult>& rs, const std::string& id) {
  std::vector<RuleResult> out;
  for (const auto& r : rs) {
    if (r.rule_id() == id) out.push_back(r);
  }
  return out;
}

}  // namespace

TEST_CASE("workload judge: a replica whose loss departs fails, naming its node and rank",
          "[reports][workload]") {
  RunData d;
  for (int step = 0; step < 5; ++step) {
    const double loss = 7.0 - 0.01 * step;
    Measure(&d, "node-0", 0, "loss", loss, step);
    Measure(&d, "node-1", 1, "loss", loss, step);
    // Rank 2 departs by one ulp-sized step from step 3 on.
    Measure(&d, "node-2", 2, "loss", step >= 3 ? loss + 1e-6 : loss, step);
  }
  auto rs = Judge(d);
  auto dep = With(rs, "workload.loss_departs");
  REQUIRE(dep.size() == 1);
  CHECK(dep[0].outcome() == "fail");
  CHECK(dep[0].node() == "node-2");
  CHECK(dep[0].subject() == "node:node-2 rank:2");
  CHECK(dep[0].category() == "Reliability");
  CHECK(absl::StrContains(dep[0].message(), "at step 3"));
  CHECK(With(rs, "workload.loss_agrees").empty());

  // Identical losses: a pass, nobody named.
  RunData same;
  for (int step = 0; step < 5; ++step) {
    for (int r = 0; r < 3; ++r) Measure(&same, absl::StrCat("node-", r), r, "loss", 7.5, step);
  }
  auto ok = Judge(same);
  REQUIRE(With(ok, "workload.loss_agrees").size() == 1);
  CHECK(With(ok, "workload.loss_agrees")[0].outcome() == "pass");
  CHECK(With(ok, "workload.loss_departs").empty());
}

TEST_CASE("workload judge: on GPUs a last-bit difference is within the tolerance",
          "[reports][workload]") {
  RunData d;
  Measure(&d, "node-0", 0, "loss", 7.0, 0, "0");
  Measure(&d, "node-1", 1, "loss", 7.0 * (1 + 1e-7), 0, "0");
  Measure(&d, "node-2", 2, "loss", 7.0 * (1 + 1e-4), 0, "1");
  auto dep = With(Judge(d), "workload.loss_departs");
  REQUIRE(dep.size() == 1);
  CHECK(dep[0].subject() == "node:node-2 gpu:1 rank:2");
}

TEST_CASE("workload judge: a rank above 1.05x the job's median step time is a straggler",
          "[reports][workload]") {
  RunData d;
  Measure(&d, "node-0", 0, "step_time_median_s", 0.100);
  Measure(&d, "node-1", 1, "step_time_median_s", 0.104);  // within 1.05x
  Measure(&d, "node-2", 2, "step_time_median_s", 0.130);
  for (int r = 0; r < 3; ++r) Measure(&d, absl::StrCat("node-", r), r, "step_time_p99_p50", 1.2);
  auto rs = Judge(d);
  auto s = With(rs, "workload.straggler");
  REQUIRE(s.size() == 1);
  CHECK(s[0].outcome() == "warn");
  CHECK(s[0].node() == "node-2");
  CHECK(s[0].value() == Approx(0.130));
  CHECK(s[0].expected() == Approx(1.05 * 0.104));
  CHECK(With(rs, "workload.steady").empty());

  RunData even;
  for (int r = 0; r < 3; ++r) {
    Measure(&even, absl::StrCat("node-", r), r, "step_time_median_s", 0.1 + 0.001 * r);
  }
  auto ok = Judge(even);
  CHECK(With(ok, "workload.straggler").empty());
  REQUIRE(With(ok, "workload.steady").size() == 1);
}

TEST_CASE("workload judge: the straggler is the rank slow outside the all-reduce, not the ones "
          "that wait in it",
          "[reports][workload]") {
  RunData d;
  for (int step = 0; step < 8; ++step) {
    for (int r = 0; r < 3; ++r) {
      // Whole steps agree (every rank leaves the all-reduce together); rank
      // 1 computes 40% longer, the others wait for it. Its warm-up steps
      // are slower still and left out.
      const std::string node = absl::StrCat("node-", r);
      Measure(&d, node, r, "step_time_s", 0.140, step);
      const double compute = r == 1 ? (step < 2 ? 0.5 : 0.140) : 0.100;
      Measure(&d, node, r, "compute_s", compute, step);
    }
  }
  auto s = With(Judge(d), "workload.straggler");
  REQUIRE(s.size() == 1);
  CHECK(s[0].node() == "node-1");
  CHECK(s[0].value() == Approx(0.140));
  CHECK(s[0].expected() == Approx(1.05 * 0.100));
  CHECK(absl::StrContains(s[0].evidence(0), "6 steps after the warm-up"));
}

TEST_CASE("workload judge: a stall fails the rank that stopped, not the ones that waited",
          "[reports][workload]") {
  SECTION("the stopped rank had not reached the all-reduce") {
    RunData d;
    Stall(&d, "node-0", 0, 6, true);
    Stall(&d, "node-1", 1, 6, false);
    Stall(&d, "node-2", 2, 6, true);
    auto st = With(Judge(d), "workload.stall");
    REQUIRE(st.size() == 1);
    CHECK(st[0].outcome() == "fail");
    CHECK(st[0].node() == "node-1");
    CHECK(st[0].subject() == "node:node-1 rank:1");
    CHECK(absl::StrContains(st[0].message(), "never reached"));
  }
  SECTION("the rank that wrote nothing stopped first") {
    RunData d;
    Measure(&d, "node-2", 2, "loss", 7.0, 0);
    Stall(&d, "node-0", 0, 6, true);
    Stall(&d, "node-1", 1, 6, true);
    auto st = With(Judge(d), "workload.stall");
    REQUIRE(st.size() == 1);
    CHECK(st[0].node() == "node-2");
  }
  SECTION("the rank whose python was stopped, even inside the all-reduce") {
    RunData d;
    Stall(&d, "node-0", 0, 6, true);
    Stall(&d, "node-1", 1, 6, true);
    Stall(&d, "node-2", 2, 6, true, "T");
    auto st = With(Judge(d), "workload.stall");
    REQUIRE(st.size() == 1);
    CHECK(st[0].node() == "node-2");
    CHECK(absl::StrContains(st[0].message(), "stopped (process state T)"));
  }
  SECTION("every rank stalled in the all-reduce: the job hung together") {
    RunData d;
    for (int r = 0; r < 3; ++r) Stall(&d, absl::StrCat("node-", r), r, 4, true);
    auto st = With(Judge(d), "workload.stall");
    CHECK(st.size() == 3);
    for (const auto& r : st) CHECK(absl::StrContains(r.message(), "hung together"));
  }
}

namespace {

// A gemm task's host (cpu backend) GEMM figure on `node`.
void HostGemm(RunData* d, const std::string& node, const std::string& dtype, double tflops) {
  cmax::v1::ExportedRecord er;
  er.set_task_id("g-" + node);
  er.set_node(node);
  er.set_suite("gemm");
  auto* m = er.mutable_record()->mutable_measurement();
  m->set_suite("gemm");
  m->set_metric("gemm_tflops");
  m->set_unit("TFLOP/s");
  m->set_value(tflops);
  (*m->mutable_labels())["backend"] = "cpu";
  (*m->mutable_labels())["dtype"] = dtype;
  d->records.push_back(er);
}

}  // namespace

TEST_CASE("workload judge: CPU MFU only against the node's measured fp32 host GEMM",
          "[reports][workload]") {
  RunData d;
  Measure(&d, "node-0", 0, "model_tflops", 0.05);
  Measure(&d, "node-1", 1, "model_tflops", 0.04);
  auto gemm = [&](const std::string& node, const std::string& dtype, double tflops) {
    HostGemm(&d, node, dtype, tflops);
  };
  gemm("node-0", "fp32", 0.2);
  gemm("node-0", "fp32", 0.25);  // its best shape counts
  gemm("node-1", "fp64", 0.1);   // not the training's precision: no MFU for node-1
  auto mfu = With(Judge(d), "workload.cpu_mfu");
  // One fleet-wide pass (a key figure of the scorecard), each rank in its
  // evidence: node-1 has no fp32 host GEMM, so only node-0 is there.
  REQUIRE(mfu.size() == 1);
  CHECK(mfu[0].node().empty());
  CHECK(mfu[0].outcome() == "pass");
  CHECK(mfu[0].value() == Approx(0.2));
  CHECK(absl::StrContains(mfu[0].message(), "of 1 rank: 20% (node-0)"));
  REQUIRE(mfu[0].evidence_size() == 1);
  CHECK(absl::StrContains(mfu[0].evidence(0), "20% of this node's measured host GEMM (0.25"));
}

TEST_CASE("workload judge: CPU MFU of many ranks gives the median and the lowest first",
          "[reports][workload]") {
  RunData d;
  for (int r = 0; r < 12; ++r) {
    const std::string node = absl::StrCat("node-", r);
    Measure(&d, node, r, "model_tflops", 0.01 * (r + 1));  // node-0 lowest
    HostGemm(&d, node, "fp32", 0.2);
  }
  auto mfu = With(Judge(d), "workload.cpu_mfu");
  REQUIRE(mfu.size() == 1);
  CHECK(mfu[0].value() == Approx(0.325));  // (0.06 + 0.07) / 2 / 0.2
  INFO(mfu[0].message());
  CHECK(absl::StrContains(mfu[0].message(), "of 12 ranks: median 32.50%, lowest 5% (node-0)"));
  REQUIRE(mfu[0].evidence_size() == 11);  // the 10 lowest, then how many more
  CHECK(absl::StrContains(mfu[0].evidence(0), "(node-0)"));
  CHECK(mfu[0].evidence(10) == "and 2 more ranks");
}

// ---- The loss against a baseline run (Plan.baseline.loss_curves) ----

namespace {

// Three CPU ranks train 6 steps; `loss(rank, step)` says what each logged.
template <typename F>
RunData Training(F loss) {
  RunData d;
  for (int step = 0; step < 6; ++step) {
    for (int r = 0; r < 3; ++r) Measure(&d, absl::StrCat("node-", r), r, "loss", loss(r, step), step);
  }
  return d;
}

double Curve(int step) { return 6.93 - 0.05 * step; }

// The baseline `cmaxctl baseline save` writes of a run with these records.
cmax::v1::BaselineFile BaselineOf(RunData d) {
  d.run.set_run_id("run-ref");
  d.run.set_state("completed");
  d.plan.set_name("workload");
  d.plan.add_suites()->set_suite("workload");
  d.nodes = {"node-0", "node-1", "node-2"};
  return cmax::reports::MakeBaseline(cmax::reports::BuildScorecard(d));
}

}  // namespace

TEST_CASE("loss curves: the replicas' agreed loss per step, kept by a saved baseline",
          "[reports][workload][baseline]") {
  // Rank 1 departs at step 4: the curve keeps what the other two agree on.
  const auto b = BaselineOf(Training([](int r, int s) {
    return r == 1 && s >= 4 ? Curve(s) + 0.5 : Curve(s);
  }));
  REQUIRE(b.loss_curves_size() == 1);
  const auto& c = b.loss_curves(0);
  CHECK(c.task() == "t1");
  CHECK(c.model() == "layers=1 width=64 heads=2 seq=32 batch=4 vocab=1024 seed=1234 lr=0.0003");
  CHECK(c.device() == "cpu");
  CHECK(c.dtype() == "fp32");
  CHECK(c.torch_version() == "1.13.1");
  CHECK(c.replicas() == 3);
  REQUIRE(c.steps_size() == 6);
  REQUIRE(c.losses_size() == 6);
  for (int i = 0; i < 6; ++i) {
    CHECK(c.steps(i) == i);
    CHECK(c.losses(i) == Curve(i));
  }
  // A tie (two ranks, two values): the lower rank's value.
  auto agreed = cmax::reports::AgreedLosses({{0, {{0, 1.0}}}, {1, {{0, 2.0}}}});
  CHECK(agreed.at(0) == 1.0);
  agreed = cmax::reports::AgreedLosses({{0, {{0, 1.0}}}, {1, {{0, 2.0}}}, {2, {{0, 2.0}}}});
  CHECK(agreed.at(0) == 2.0);
}

TEST_CASE("loss against a baseline: within the tolerance passes, a departing replica fails on "
          "its node",
          "[reports][workload][baseline]") {
  const auto baseline = BaselineOf(Training([](int, int s) { return Curve(s); }));
  SECTION("the same curve, up to rounding") {
    RunData d = Training([](int, int s) { return Curve(s) * (1 + 1e-6); });
    *d.plan.mutable_baseline() = baseline;
    auto rs = With(Judge(d), "workload.loss_baseline");
    REQUIRE(rs.size() == 1);
    CHECK(rs[0].outcome() == "pass");
    CHECK(rs[0].node().empty());
    CHECK(absl::StrContains(rs[0].message(), "at 6 steps on every one of 3 replicas"));
    CHECK(absl::StrContains(rs[0].message(), "relative 1e-5 (CPU, fp32)"));
  }
  SECTION("rank 2 departs by 5e-5 from step 3 on: it alone fails, named") {
    RunData d =
        Training([](int r, int s) { return r == 2 && s >= 3 ? Curve(s) * (1 + 5e-5) : Curve(s); });
    *d.plan.mutable_baseline() = baseline;
    auto rs = Judge(d);
    auto fails = With(rs, "workload.loss_baseline");
    REQUIRE(fails.size() == 1);
    CHECK(fails[0].outcome() == "fail");
    CHECK(fails[0].node() == "node-2");
    CHECK(fails[0].subject() == "node:node-2 rank:2");
    CHECK(fails[0].category() == "Reliability");
    CHECK(absl::StrContains(fails[0].message(), "departs from the baseline run run-ref's at step 3"));
    CHECK(fails[0].expected() == Curve(3));
    // The replicas disagree too: that rule names the same rank.
    REQUIRE(With(rs, "workload.loss_departs").size() == 1);
    CHECK(With(rs, "workload.loss_departs")[0].node() == "node-2");
  }
  SECTION("every replica departs alike on the same stack: each fails, with the hint") {
    RunData d = Training([](int, int s) { return s >= 2 ? Curve(s) + 0.01 : Curve(s); });
    *d.plan.mutable_baseline() = baseline;
    auto fails = With(Judge(d), "workload.loss_baseline");
    REQUIRE(fails.size() == 3);
    for (const auto& f : fails) {
      CHECK(f.outcome() == "fail");
      CHECK(absl::StrContains(f.message(), "every replica departs alike"));
    }
  }
  SECTION("another PyTorch: one fleet warn, no node blamed") {
    RunData d = Training([](int, int s) { return s >= 2 ? Curve(s) + 0.01 : Curve(s); });
    for (auto& rec : d.records) {
      (*rec.mutable_record()->mutable_sample()->mutable_labels())["torch_version"] = "2.5.1";
    }
    *d.plan.mutable_baseline() = baseline;
    auto rs = With(Judge(d), "workload.loss_baseline");
    REQUIRE(rs.size() == 1);
    CHECK(rs[0].outcome() == "warn");
    CHECK(rs[0].node().empty());
    CHECK(absl::StrContains(rs[0].message(), "torch 1.13.1"));
    CHECK(absl::StrContains(rs[0].message(), "torch 2.5.1"));
    CHECK(absl::StrContains(rs[0].message(), "no node is blamed"));
  }
  SECTION("no baseline: no such rule") {
    RunData d = Training([](int, int s) { return Curve(s); });
    CHECK(With(Judge(d), "workload.loss_baseline").empty());
  }
}

TEST_CASE("loss against a baseline: a baseline of another model is not measured on the card, "
          "never a pass",
          "[reports][workload][baseline]") {
  auto baseline = BaselineOf(Training([](int, int s) { return Curve(s); }));
  baseline.mutable_loss_curves(0)->set_model("layers=4 width=256 heads=4 seq=128 batch=8 "
                                             "vocab=1024 seed=1234 lr=0.0003");
  RunData d = Training([](int, int s) { return Curve(s); });
  d.run.set_run_id("run-2");
  d.run.set_state("completed");
  d.plan.set_name("workload");
  d.plan.add_suites()->set_suite("workload");
  d.nodes = {"node-0", "node-1", "node-2"};
  *d.plan.mutable_baseline() = baseline;
  const auto card = cmax::reports::BuildScorecard(d);
  const cmax::v1::RuleResult* rule = nullptr;
  for (const auto& cat : card.categories()) {
    for (const auto& r : cat.rules()) {
      if (r.rule_id() == "workload.loss_baseline") rule = &r;
    }
  }
  REQUIRE(rule != nullptr);
  CHECK(rule->outcome() == "not_measured");
  CHECK(absl::StrContains(rule->message(), "holds no loss curve of this job's model (layers=1"));
  CHECK(absl::StrContains(rule->message(), "it holds: layers=4 width=256"));
  CHECK(absl::StrContains(card.baseline(), "1 loss curve(s)"));
  // The run's own curve is on its card, for the next baseline.
  REQUIRE(card.loss_curves_size() == 1);
  CHECK(card.loss_curves(0).steps_size() == 6);
}
