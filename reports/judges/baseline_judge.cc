// Baseline judge: the run's metrics against the plan's embedded baseline
// (baseline.h). The SuperBench convention
// (https://microsoft.github.io/superbenchmark, "Data Diagnosis"): a baseline
// file of per-metric values and a rule of allowed relative variance; a
// value beyond it is flagged.
//
// A regression is a warn, not a fail: the baseline is one earlier run, maybe
// under other conditions (driver, load, another rack), so a change against it
// is a lead to follow, not a defect by itself. Failures stay with the absolute
// rules (expectations, datasheet, the fleet fences).
//
// A baseline value the run lacks is not measured on its node (never a pass);
// a node of the run absent from the baseline is judged against the
// baseline's fleet medians.
#include <cmath>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "reports/baseline.h"
#include "reports/compare.h"
#include "reports/judge_util.h"
#include "reports/judges.h"
#include "reports/run_data.h"

namespace cmax::reports {
namespace {

constexpr size_t kListed = 5;

std::string CategoryOf(const RunData& data, const v1::CompareMetric& m) {
  std::string suite = m.entry();
  for (const auto& s : data.plan.suites()) {
    if ((s.name().empty() ? s.suite() : s.name()) == m.entry()) suite = s.suite();
  }
  v1::Measurement meas;
  meas.set_metric(m.metric());
  meas.set_suite(suite);
  return MeasurementCategory(meas, suite);
}

// How much worse `run` is than `base` (0.1 = 10% worse), negative when better.
double Worsening(double base, double run, const std::string& better) {
  if (base == 0) return 0;
  const double rel = (run - base) / std::fabs(base);
  return better == "higher" ? -rel : rel;
}

}  // namespace

void BaselineJudge(const RunData& data, std::vector<v1::RuleResult>* out) {
  if (!data.plan.has_baseline() || data.plan.baseline().values().empty()) return;
  const v1::BaselineFile& b = data.plan.baseline();
  const double tol =
      data.plan.baseline_tolerance() > 0 ? data.plan.baseline_tolerance() : kDefaultBaselineTolerance;
  std::map<std::string, v1::CompareMetric> run;
  for (auto& m : BuildMetricSummary(data)) run.emplace(MetricKey(m), std::move(m));
  std::map<std::string, v1::CompareMetric> fleet;
  for (const auto& v : b.fleet_medians()) {
    v1::CompareMetric m = AsCompareMetric(v);
    fleet.emplace(MetricKey(m), std::move(m));
  }
  const std::set<std::string> run_nodes(data.nodes.begin(), data.nodes.end());
  std::set<std::string> baseline_nodes;
  for (const auto& v : b.values()) baseline_nodes.insert(v.node());

  std::map<std::string, std::pair<int, int>> tally;  // category -> (within, regressed)
  auto judge = [&](const v1::CompareMetric& base, const v1::CompareMetric& now,
                   const std::string& against) {
    const std::string better = base.better().empty() ? MetricBetter(base.metric()) : base.better();
    if (better.empty()) return;
    const double worse = Worsening(base.value(), now.value(), better);
    const std::string category = CategoryOf(data, now);
    if (worse <= tol) {
      ++tally[category].first;
      return;
    }
    ++tally[category].second;
    v1::RuleResult r = MakeRule(
        "baseline.regression", category, "warn", now.node(), MetricLabel(now),
        absl::StrFormat("%s: %s against the baseline%s %s (%.1f%% worse; %s is better, "
                        "tolerance %s%%)",
                        MetricLabel(now), FormatValue(now.value(), now.unit()), against,
                        FormatValue(base.value(), base.unit()), worse * 100, better,
                        FormatNumber(tol * 100)));
    r.set_value(now.value());
    r.set_expected(base.value());
    r.set_unit(now.unit());
    r.add_evidence(absl::StrCat("baseline: run ", b.run_id(), " of plan ", b.plan(), ", saved ",
                                b.created()));
    r.set_action("compare the two runs (cmaxctl compare BASELINE_RUN THIS_RUN) and look at what "
                 "changed on this node: driver, firmware, clocks, neighbours, cabling");
    out->push_back(std::move(r));
  };

  // (node, category) -> metric labels
  std::map<std::pair<std::string, std::string>, std::vector<std::string>> missing;
  for (const auto& v : b.values()) {
    const v1::CompareMetric base = AsCompareMetric(v);
    auto it = run.find(MetricKey(base));
    if (it != run.end()) {
      judge(base, it->second, "");
    } else {
      missing[{v.node(), CategoryOf(data, base)}].push_back(MetricLabel(base));
    }
  }
  // Nodes of this run that the baseline does not have: the fleet medians.
  for (const auto& [key, now] : run) {
    if (now.node().empty() || baseline_nodes.count(now.node())) continue;
    v1::CompareMetric k = now;
    k.clear_node();
    k.clear_gpu();
    auto it = fleet.find(MetricKey(k));
    if (it != fleet.end()) judge(it->second, now, "'s fleet median");
  }

  std::set<std::string> absent_nodes;
  for (const auto& [where, labels] : missing) {
    const auto& [node, category] = where;
    if (!node.empty() && !run_nodes.count(node)) {
      absent_nodes.insert(node);
      continue;
    }
    std::vector<std::string> shown(labels.begin(),
                                   labels.begin() + std::min(labels.size(), kListed));
    std::string text = absl::StrJoin(shown, "; ");
    if (labels.size() > kListed) absl::StrAppend(&text, " (and ", labels.size() - kListed, " more)");
    v1::RuleResult r = MakeRule(
        "baseline.not_measured", category, "not_measured", node, "baseline",
        absl::StrCat(node.empty() ? "" : absl::StrCat(node, ": "), labels.size(),
                     " baseline value", labels.size() == 1 ? "" : "s",
                     " not measured in this run: ", text));
    r.set_action("run the plan entries the baseline was saved from on this node");
    out->push_back(std::move(r));
  }
  if (!absent_nodes.empty()) {
    out->push_back(MakeRule(
        "baseline.nodes_absent", "Reliability", "not_measured", "", "baseline",
        absl::StrCat("baseline nodes not selected in this run (not compared): ",
                     absl::StrJoin(absent_nodes, ", "))));
  }
  // A key figure per category whose compared values all stayed within the
  // tolerance (categories with regressions have their warnings instead).
  for (const auto& [category, counts] : tally) {
    if (counts.second > 0) continue;
    out->push_back(MakeRule("baseline.within", category, "pass", "", "baseline",
                            absl::StrCat(counts.first, " values within ", FormatNumber(tol * 100),
                                         "% of baseline run ", b.run_id())));
  }
}

}  // namespace cmax::reports
