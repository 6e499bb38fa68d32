// Fleet judge: the same metric on comparable subjects (same group labels)
// across the fleet; the slow GPU, link or disk is named by Tukey fences
// (stats.h). Mild outlier -> warn, extreme -> fail; each group also gets a
// pass-level result with its spread (RULES.md, rule 4), or, with fewer
// than kMinPeers values, a not-measured one: no comparison was made. The metrics judged
// are in metric_table.cc. Records of different plan entries of one suite
// (the node's own burn-in and the fleet burn-in) form separate groups.
#include <cmath>
#include <cstdio>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "reports/judge_util.h"
#include "reports/judges.h"
#include "reports/metric_table.h"
#include "reports/run_data.h"
#include "reports/stats.h"

namespace cmax::reports {
namespace {

constexpr size_t kMinPeers = 4;  // FindOutliers' default: fewer names nobody

struct Group {
  std::vector<Keyed> items;
  std::string unit;
};

// "dtype=bf16 m=8192" from the group keys present on the measurement.
std::string GroupName(const FleetMetric& fm, const v1::Measurement& m) {
  std::vector<std::string> parts;
  for (const auto& key : fm.group_keys) {
    auto it = m.labels().find(key);
    if (it == m.labels().end()) continue;
    std::string value = it->second;
    if (key == "job" || key == "gpu") value = value == "all" ? "all" : "each";
    parts.push_back(absl::StrCat(key, "=", value));
  }
  return absl::StrJoin(parts, " ");
}

// False for the figure of one job or one GPU, true for a total ("all") and
// for a figure without job or GPU labels.
bool IsTotal(const v1::Measurement& m) {
  for (const char* key : {"job", "gpu"}) {
    auto it = m.labels().find(key);
    if (it != m.labels().end() && it->second != "all") return false;
  }
  return true;
}

// "15" for 15.2, "4.3" for 4.27: whole percents are enough above 10%.
std::string Percent(double pct) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), pct >= 10 ? "%.0f" : "%.1f", pct);
  return buf;
}

std::string Titled(const std::string& metric, const std::string& group) {
  return group.empty() ? metric : absl::StrCat(metric, " (", group, ")");
}

void JudgeGroup(const FleetMetric& fm, const std::string& group_name, const Group& g,
                std::vector<v1::RuleResult>* out) {
  std::vector<double> values;
  values.reserve(g.items.size());
  for (const auto& k : g.items) values.push_back(k.value);
  const FleetStats s = ComputeFleetStats(values);
  const std::string title = Titled(fm.metric, group_name);
  const std::string fence_text =
      fm.better == Better::kHigher
          ? absl::StrCat("fences: mild below ", FormatNumber(s.low_mild), ", extreme below ",
                         FormatNumber(s.low_extreme), " (Tukey 1.5x / 3x IQR)")
          : absl::StrCat("fences: mild above ", FormatNumber(s.high_mild), ", extreme above ",
                         FormatNumber(s.high_extreme), " (Tukey 1.5x / 3x IQR)");
  const std::string spread =
      absl::StrCat("fleet median ", FormatValue(s.median, g.unit), ", min ",
                   FormatNumber(s.min), ", max ", FormatNumber(s.max), ", n=", s.n);

  for (const Outlier& o : FindOutliers(g.items, fm.better, kMinPeers, fm.min_margin)) {
    const double pct = std::fabs(1.0 - o.relative_to_median) * 100.0;
    const char* side = o.item.value < s.median ? "below" : "above";
    v1::RuleResult r;
    r.set_rule_id(absl::StrCat("fleet.outlier.", fm.metric));
    r.set_category(fm.category);
    r.set_outcome(o.extreme ? "fail" : "warn");
    r.set_node(o.item.node);
    r.set_subject(o.item.subject);
    r.set_message(absl::StrCat(o.item.subject, ": ", title, " ", FormatValue(o.item.value, g.unit),
                               " is ", Percent(pct), "% ", side,
                               " the fleet median ", FormatValue(s.median, g.unit),
                               o.extreme ? " (extreme outlier)" : " (outlier)"));
    r.add_evidence(absl::StrCat("value ", FormatValue(o.item.value, g.unit)));
    r.add_evidence(spread);
    r.add_evidence(absl::StrCat("ratio to median ", FormatNumber(o.relative_to_median)));
    r.add_evidence(fence_text);
    r.set_value(o.item.value);
    r.set_expected(s.median);
    r.set_unit(g.unit);
    r.set_action("rerun on this node; if it stays slow, check clocks, power and thermal "
                 "throttling, PCIe/NVLink links and the firmware, then drain or replace it");
    out->push_back(std::move(r));
  }

  // The group's spread; with fewer values than an outlier needs peers, the
  // comparison was not made, and the result says so (not a pass).
  v1::RuleResult pass;
  pass.set_rule_id(absl::StrCat("fleet.spread.", fm.metric));
  pass.set_category(fm.category);
  pass.set_subject(title);
  pass.add_evidence(spread);
  pass.add_evidence(absl::StrCat("q1 ", FormatNumber(s.q1), ", q3 ", FormatNumber(s.q3)));
  if (s.n < kMinPeers) {
    pass.set_outcome("not_measured");
    pass.set_message(absl::StrCat(title, ": no fleet comparison: it needs ", kMinPeers,
                                  " values to name an outlier, the run has ", s.n,
                                  " (median ", FormatValue(s.median, g.unit), ")"));
    pass.add_evidence(absl::StrCat("too few values (", s.n, " < ", kMinPeers,
                                   ") to name outliers"));
  } else {
    pass.set_outcome("pass");
    pass.set_message(absl::StrCat(title, ": median ", FormatValue(s.median, g.unit), ", min ",
                                  FormatNumber(s.min), ", max ", FormatNumber(s.max), " over ",
                                  s.n, " values"));
    pass.add_evidence(fence_text);
  }
  pass.set_value(s.median);
  pass.set_unit(g.unit);
  out->push_back(std::move(pass));
}

// The plan entry a record came from ("burnin-fleet"), when the plan runs
// that suite more than once: a node's own burn-in and the fleet-wide one (or
// NCCL intra-node and all-nodes) measure different things and are compared
// only with their own kind. Empty when the suite appears once or the task is
// unknown.
std::map<std::string, std::string> EntryOfTask(const RunData& data) {
  std::map<std::string, int> per_suite;
  for (const auto& s : data.plan.suites()) ++per_suite[s.suite()];
  std::map<std::string, std::string> entry;
  for (const auto& t : data.tasks) {
    const v1::SuiteSpec* spec = PlanEntryOf(data, t);
    if (spec == nullptr || per_suite[spec->suite()] < 2) continue;
    entry[t.task_id()] =
        spec->name().empty() ? absl::StrCat(spec->suite(), "#", t.suite_index()) : spec->name();
  }
  return entry;
}

}  // namespace

void FleetJudge(const RunData& data, std::vector<v1::RuleResult>* out) {
  const std::map<std::string, std::string> entry_of_task = EntryOfTask(data);
  for (const FleetMetric& fm : FleetMetrics()) {
    std::map<std::string, Group> groups;  // ordered: stable output
    // Only the labels read below (GroupName, DescribeSubject, "verified")
    // are parsed (record_set.h; issue 18).
    RecordFilter filter{v1::Record::kMeasurement, {}, fm.metric};
    filter.label_keys = {"verified", "gpu", "uuid", "peer"};
    for (const auto& key : fm.group_keys) filter.label_keys.push_back(key);
    ForEachRecord(
        data, filter,
        [&](const v1::ExportedRecord& rec) {
          if (!rec.record().has_measurement()) return;
          const v1::Measurement& m = rec.record().measurement();
          if (m.metric() != fm.metric) return;
          // A wrong result is a failure of its own; its figure is not compared.
          if (LabelValue(m, "verified") == "false") return;
          if (fm.totals_only && !IsTotal(m)) return;
          std::string name = GroupName(fm, m);
          if (auto it = entry_of_task.find(rec.task_id()); it != entry_of_task.end()) {
            name = name.empty() ? absl::StrCat("plan entry ", it->second)
                                : absl::StrCat("plan entry ", it->second, " ", name);
          }
          Group& g = groups[name];
          const std::string node = RecordNode(rec);
          g.items.push_back({DescribeSubject(node, m), node, m.value()});
          if (g.unit.empty()) g.unit = m.unit();
        });
    for (const auto& [name, g] : groups) JudgeGroup(fm, name, g, out);
  }
}

}  // namespace cmax::reports
