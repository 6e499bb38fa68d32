// The scorecard builder: runs the judges and aggregates their results into
// category grades, node verdicts and the tier (rules in RULES.md).
#include "reports/scorecard.h"

#include <algorithm>
#include <array>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/plural.h"
#include "common/record_io.h"
#include "google/protobuf/util/json_util.h"
#include "common/time_util.h"
#include "common/version.h"
#include "reports/charts.h"
#include "reports/baseline.h"
#include "reports/compare.h"
#include "reports/cost.h"
#include "reports/coverage.h"
#include "reports/grading.h"
#include "reports/judged_view.h"
#include "reports/judge_util.h"
#include "reports/judges.h"
#include "reports/loss_curve.h"
#include "reports/outcome_order.h"

namespace cmax::reports {
namespace {

constexpr size_t kMaxMeasurements = 2000;
constexpr size_t kMaxRulesPerCategory = 500;
constexpr size_t kSummaryMessages = 3;

// Rules and reasons are ordered by OutcomeBadness (outcome_order.h), worst
// first.
bool Fired(const std::string& outcome) { return OutcomeFired(outcome); }

// Judges are trusted to follow the contract, but a wrong category or outcome
// must never turn into a silent pass.
void Normalize(v1::RuleResult* r) {
  std::string c = CanonicalCategory(r->category());
  if (c.empty()) {
    r->add_evidence(absl::StrCat("judge gave unknown category '", r->category(), "'"));
    c = "Reliability";
  }
  r->set_category(c);
  static const std::set<std::string> outcomes = {"pass", "warn", "fail", "critical",
                                                 "not_measured"};
  if (outcomes.count(r->outcome()) == 0) {
    r->add_evidence(absl::StrCat("judge gave unknown outcome '", r->outcome(), "'"));
    r->set_outcome("not_measured");
  }
}

// "node-2: agent lost during hostcheck" unless the message names the node.
std::string Described(const v1::RuleResult& r) {
  if (r.node().empty() || absl::StartsWith(r.message(), r.node())) return r.message();
  return absl::StrCat(r.node(), ": ", r.message());
}

struct CategoryWork {
  CategoryTally tally;
  std::vector<const v1::RuleResult*> rules;
  // suite -> (measurements, findings with an outcome, not-measured findings)
  std::map<std::string, std::array<int, 3>> suites;
  bool simulated = false;
};

// What a glance shows of a rule result: its headline (judge_util.h) and,
// for one that fired, its rule id to look up ("... (audit.runc_cve)").
std::string Glance(const v1::RuleResult& r) {
  if (!Fired(r.outcome())) return Headline(r);
  return absl::StrCat(Headline(r), " (", r.rule_id(), ")");
}

// The headlines of `rs`, identical ones grouped by node ("3 nodes (a, b,
// c): ..."), each group one reason.
std::vector<std::string> GroupedMessages(const std::vector<const v1::RuleResult*>& rs) {
  std::vector<std::pair<std::string, std::string>> node_reason;
  for (const auto* r : rs) {
    const auto nodes = SplitNodes(r->node());
    const std::string text = Glance(*r);
    const bool names_node = !r->node().empty() && absl::StartsWith(text, r->node());
    if (nodes.empty() || names_node) {
      node_reason.push_back({"", text});
    } else {
      for (const auto& n : nodes) node_reason.push_back({n, text});
    }
  }
  return GroupReasons(node_reason);
}

// The summary cell of the category tables (HTML, Markdown): read at a
// glance on a 1,000-node card, so at most kSummaryMessages reasons and a
// count of the rest, which the category's own section (its coverage and
// rules) and the findings table give in full. Failures and warnings first,
// then what was not measured (not-measured results, plan entries that
// evaluated nothing on some nodes):
//   "1 failure: node-2: agent lost during hostcheck"
//   "no warnings or failures; not measured: gemm on 2 of 3: node-3: ..."
//   "not measured: gemm, memory on 0 of 3: 3 nodes (a, b, c): could not run: ...;
//    and 4 more in the Compute section"
std::string Summary(const std::string& name, const CategoryWork& w, bool measured,
                    const CategoryCoverage& cov, int selected) {
  std::vector<const v1::RuleResult*> fired, not_measured;
  for (const auto* r : w.rules) {
    if (Fired(r->outcome())) fired.push_back(r);
    // A task that could not run (task.*) is its plan entry's gap below,
    // said there once; without plan entries it is said here.
    if (r->outcome() == "not_measured" &&
        (cov.entries.empty() || !absl::StartsWith(r->rule_id(), "task."))) {
      not_measured.push_back(r);
    }
  }
  const std::vector<std::string> fired_reasons = GroupedMessages(fired);
  std::vector<std::string> missing_reasons = EntryGaps(cov);
  for (auto& m : GroupedMessages(not_measured)) missing_reasons.push_back(std::move(m));

  size_t budget = kSummaryMessages;
  auto take = [&budget](const std::vector<std::string>& from) {
    const size_t n = std::min(budget, from.size());
    budget -= n;
    return absl::StrJoin(from.begin(), from.begin() + n, "; ");
  };
  std::string text;
  if (!measured) {
    text = "not measured: ";
    if (!missing_reasons.empty()) {
      absl::StrAppend(&text, take(missing_reasons));
    } else if (cov.entries.empty()) {
      absl::StrAppend(&text, "no suite in this run evaluated anything here");
    } else {
      absl::StrAppend(&text, CoverageText(cov, selected));  // its entries ran elsewhere
    }
  } else {
    if (fired.empty()) {
      text = "no warnings or failures";
    } else {
      std::vector<std::string> counts;
      if (w.tally.critical > 0) counts.push_back(absl::StrCat(w.tally.critical, " critical"));
      if (w.tally.fail > 0) counts.push_back(Counted(w.tally.fail, "failure", "failures"));
      if (w.tally.warn > 0) counts.push_back(Counted(w.tally.warn, "warning", "warnings"));
      text = absl::StrCat(absl::StrJoin(counts, ", "), ": ", take(fired_reasons));
    }
    if (budget > 0 && !missing_reasons.empty()) {
      absl::StrAppend(&text, "; not measured: ", take(missing_reasons));
    }
  }
  const size_t total = (measured ? fired_reasons.size() : 0) + missing_reasons.size();
  if (total > kSummaryMessages) {
    absl::StrAppend(&text, "; and ", total - kSummaryMessages, " more in the ", name,
                    " section");
  }
  return text;
}

v1::CategoryGrade MakeCategory(const std::string& name, CategoryWork& w,
                               const CategoryCoverage& cov, int selected,
                               const std::string& measurements_note) {
  v1::CategoryGrade c;
  c.set_name(name);
  c.set_measured(IsMeasured(w.tally));
  c.set_grade(GradeFor(w.tally));
  c.set_simulated(w.simulated);
  // A category graded by fleet-wide results alone (inventory uniformity)
  // says "fleet rules: 1 of 1" here and in its "Evaluated on" cell.
  c.set_coverage(CoverageText(cov, selected));
  c.set_nodes_evaluated(static_cast<int>(cov.evaluated.size()));
  c.set_nodes_selected(selected);
  c.set_fleet_rules(cov.fleet_rules);
  c.set_fleet_rules_evaluated(cov.fleet_rules_evaluated);
  for (const auto& e : cov.entries) *c.add_entries() = e;
  std::stable_sort(w.rules.begin(), w.rules.end(), [](const auto* a, const auto* b) {
    return OutcomeBadness(a->outcome()) > OutcomeBadness(b->outcome());
  });
  const std::string summary = Summary(name, w, c.measured(), cov, selected);
  c.set_summary(w.simulated ? absl::StrCat(kSimulatedBanner, ": ", summary) : summary);
  for (const auto& [suite, counts] : w.suites) {
    std::vector<std::string> parts;
    if (counts[0] > 0) parts.push_back(Counted(counts[0], "measurement", "measurements"));
    if (counts[1] > 0) parts.push_back(Counted(counts[1], "finding", "findings"));
    if (counts[2] > 0) parts.push_back(absl::StrCat(counts[2], " not measured"));
    c.add_evidence(absl::StrCat(suite, ": ", absl::StrJoin(parts, ", ")));
  }
  // Shown rules: everything that fired, what was not measured, and the
  // fleet-wide passes (key figures). Per-node passes stay out.
  size_t shown = 0, dropped = 0;
  for (const auto* r : w.rules) {
    const bool key_pass = r->outcome() == "pass" && r->node().empty();
    if (!Fired(r->outcome()) && r->outcome() != "not_measured" && !key_pass) continue;
    if (key_pass) c.add_evidence(r->message());
    if (shown >= kMaxRulesPerCategory) {
      ++dropped;
      continue;
    }
    *c.add_rules() = *r;
    ++shown;
  }
  if (dropped > 0) {
    c.add_evidence(absl::StrCat(dropped, " more rule results not shown (limit ",
                                kMaxRulesPerCategory, "); cmaxctl export has every record"));
  }
  if (!measurements_note.empty() && w.tally.has_records) c.add_evidence(measurements_note);
  return c;
}

void FillInventory(const v1::Inventory& inv, v1::NodeVerdict* v) {
  auto& m = *v->mutable_inventory();
  if (!inv.hostname().empty()) m["hostname"] = inv.hostname();
  m["gpu_count"] = absl::StrCat(inv.gpu_count());
  if (!inv.gpu_model().empty()) m["gpu_model"] = inv.gpu_model();
  if (inv.cpu_cores() > 0) m["cpu_cores"] = absl::StrCat(inv.cpu_cores());
  if (inv.memory_gib() > 0) m["memory_gib"] = FormatNumber(inv.memory_gib());
  if (!inv.kernel().empty()) m["kernel"] = inv.kernel();
  if (!inv.driver_version().empty()) m["driver_version"] = inv.driver_version();
  for (const auto& [k, val] : inv.facts()) m[k] = val;
}

v1::TaskSummary Summarize(const v1::TaskInfo& t) {
  v1::TaskSummary s;
  s.set_task_id(t.task_id());
  s.set_suite(t.suite());
  s.set_name(t.name());
  s.set_state(TaskStateName(t.state()));
  s.set_exit_code(t.exit_code());
  s.set_message(t.message());
  s.set_stderr_tail(t.stderr_tail());
  s.set_records(t.records());
  s.set_attempt(t.attempt());
  return s;
}

// Barrier-scope plan entries: the agents' cmax_task_start samples (lag of
// the real start behind the instant they were given, node clock) of each
// entry's last attempt.
std::vector<v1::BarrierStart> BarrierStarts(const RunData& data) {
  std::vector<v1::BarrierStart> out;
  std::map<std::string, const v1::TaskInfo*> tasks;
  for (const auto& t : data.tasks) tasks[t.task_id()] = &t;
  std::map<int, std::map<std::string, double>> lag_s;  // entry -> node -> lag
  ForEachRecord(data, {v1::Record::kSample, {}, "cmax_task_start"},
                [&](const v1::ExportedRecord& rec) {
                  if (!rec.record().has_sample() ||
                      rec.record().sample().metric() != "cmax_task_start") {
                    return;
                  }
                  auto it = tasks.find(rec.task_id());
                  if (it == tasks.end() || it->second->attempt() != rec.attempt()) return;
                  lag_s[it->second->suite_index()].try_emplace(
                      rec.node(), rec.record().sample().value());
                });
  for (int i = 0; i < data.plan.suites_size(); ++i) {
    const v1::SuiteSpec& spec = data.plan.suites(i);
    if (spec.scope() != v1::SCOPE_BARRIER) continue;
    v1::BarrierStart b;
    b.set_entry(spec.name().empty() ? spec.suite() : spec.name());
    const auto& lags = lag_s[i];
    std::set<std::string> nodes;
    for (const auto& t : data.tasks) {
      if (t.suite_index() != i) continue;
      for (const auto& n : SplitNodes(t.node())) nodes.insert(n);
    }
    double lo = 0, hi = 0;
    bool first = true;
    for (const auto& [node, lag] : lags) {
      lo = first ? lag : std::min(lo, lag);
      hi = first ? lag : std::max(hi, lag);
      first = false;
    }
    for (const auto& n : nodes) {
      if (!lags.count(n)) b.add_missing(n);
    }
    b.set_nodes(static_cast<int>(lags.size()));
    b.set_min_lag_ms(lo * 1e3);
    b.set_max_lag_ms(hi * 1e3);
    b.set_skew_ms((hi - lo) * 1e3);
    out.push_back(std::move(b));
  }
  return out;
}

// Run-level findings for what happened to tasks (lost, crashed, hung), so
// the findings list shows them with an action next to the suites' findings.
v1::Finding TaskFinding(const v1::RuleResult& r) {
  v1::Finding f;
  f.set_check_id(r.rule_id());
  f.set_severity(v1::SEVERITY_FAIL);
  f.set_category("reliability");
  f.set_subject(r.subject());
  f.set_title(r.message());
  for (const auto& e : r.evidence()) f.add_evidence(e);
  f.set_action(r.action());
  f.set_suite("cmax");
  (*f.mutable_labels())["node"] = r.node();
  (*f.mutable_labels())["source"] = "scorecard";
  return f;
}

}  // namespace

namespace {

// `owned` is `input` when its records may be moved into the judged view (the
// rvalue overload), null to copy them. Either way the card is the same.
v1::Scorecard Build(const RunData& input, RunData* owned) {
  v1::Scorecard card;
  card.set_run_id(input.run.run_id());
  card.set_plan(!input.plan.name().empty() ? input.plan.name() : input.run.plan_name());
  card.set_started(FormatRfc3339(input.run.created_unix_ns()));
  card.set_finished(FormatRfc3339(input.run.finished_unix_ns()));
  card.set_state(input.run.state());
  card.set_cmax_version(kCmaxVersion);
  card.set_generated(FormatRfc3339(NowUnixNs()));

  // Judged: each task's last attempt, no late records, no selftest records.
  std::vector<v1::BarrierStart> barrier_starts = BarrierStarts(input);
  const JudgedView view = owned ? MakeJudgedView(std::move(*owned)) : MakeJudgedView(input);
  const RunData& data = view.data;

  std::vector<v1::RuleResult> results;
  for (Judge judge : AllJudges()) judge(data, &results);
  for (auto& r : results) Normalize(&r);

  std::map<std::string, CategoryWork> work;
  for (const auto& name : CategoryNames()) work[name];

  // Records: what each category was fed, simulated data, findings, and the
  // key measurements. Only records that evaluated something feed a category.
  size_t measurements_total = 0;
  // Nodes a record evaluated (used with the node verdicts below; gathered
  // here to save a second pass over every record).
  std::set<std::string> evaluated_by_records;
  // Labels are read only of the findings and of the measurements the card
  // keeps (the first kMaxMeasurements): the rest is not parsed.
  RecordFilter every;
  every.labels_if = [&](const v1::ExportedRecord& rec) {
    const v1::Record& r = rec.record();
    return r.has_finding() ||
           (r.has_measurement() &&
            static_cast<size_t>(card.measurements_size()) < kMaxMeasurements);
  };
  ForEachRecord(data, every, [&](const v1::ExportedRecord& rec) {
    const v1::Record& r = rec.record();
    const std::string node = RecordNode(rec);
    if (!node.empty() && Evaluates(rec)) evaluated_by_records.insert(node);
    if (r.has_measurement()) {
      const v1::Measurement& m = r.measurement();
      CategoryWork& w = work[MeasurementCategory(m, rec.suite())];
      w.tally.has_records = true;
      if (!node.empty()) w.tally.measured_nodes.insert(node);
      w.suites[m.suite().empty() ? rec.suite() : m.suite()][0]++;
      if (m.simulated()) {
        w.simulated = true;
        card.set_simulated(true);
      }
      ++measurements_total;
      if (static_cast<size_t>(card.measurements_size()) < kMaxMeasurements) {
        v1::Measurement* kept = card.add_measurements();
        *kept = m;
        if (kept->suite().empty()) kept->set_suite(rec.suite());
        if (!node.empty()) (*kept->mutable_labels())["node"] = node;
      }
    } else if (r.has_finding()) {
      const v1::Finding& f = r.finding();
      CategoryWork& w = work[FindingCategory(f)];
      const std::string suite = f.suite().empty() ? rec.suite() : f.suite();
      if (f.not_measured()) {
        w.suites[suite][2]++;
      } else {
        w.tally.has_records = true;
        if (!node.empty()) w.tally.measured_nodes.insert(node);
        w.suites[suite][1]++;
      }
      if (f.simulated()) {
        w.simulated = true;
        card.set_simulated(true);
      }
      v1::Finding* kept = card.add_findings();
      *kept = f;
      if (kept->suite().empty()) kept->set_suite(rec.suite());
      if (!node.empty()) (*kept->mutable_labels())["node"] = node;
    }
  });
  std::string measurements_note;
  if (measurements_total > kMaxMeasurements) {
    measurements_note = absl::StrCat("the scorecard keeps the first ", kMaxMeasurements, " of ",
                                     measurements_total,
                                     " measurements; cmaxctl export has them all");
  }

  // Rule results: tallies per category, reasons per node.
  std::map<std::string, std::vector<const v1::RuleResult*>> by_node;
  std::vector<std::string> security_critical;
  for (const auto& r : results) {
    CategoryWork& w = work[r.category()];
    w.rules.push_back(&r);
    const std::vector<std::string> nodes = SplitNodes(r.node());
    const std::string& o = r.outcome();
    if (o == "critical") ++w.tally.critical;
    if (o == "fail") ++w.tally.fail;
    if (o == "warn") ++w.tally.warn;
    if (o == "pass") ++w.tally.pass;
    if (o == "not_measured") ++w.tally.not_measured;
    if (o != "not_measured") {
      for (const auto& n : nodes) w.tally.measured_nodes.insert(n);
    }
    if (o == "fail") {
      if (nodes.empty()) w.tally.fleet_wide_fail = true;
      for (const auto& n : nodes) w.tally.failing_nodes.insert(n);
    }
    if (o == "critical" && r.category() == "Security") security_critical.push_back(Described(r));
    for (const auto& n : nodes) by_node[n].push_back(&r);
    if (absl::StartsWith(r.rule_id(), "task.") && Fired(o)) *card.add_findings() = TaskFinding(r);
  }

  const Coverage coverage = ComputeCoverage(data, results);
  for (const auto& name : CategoryNames()) {
    *card.add_categories() = MakeCategory(name, work[name], coverage.categories.at(name),
                                          coverage.selected, measurements_note);
  }

  // The tier needs the rated categories evaluated (coverage.h); otherwise
  // the run is not rated.
  TierDecision tier = TierFor({card.categories().begin(), card.categories().end()},
                              security_critical);
  const std::vector<std::string> missing = MissingForTier(coverage);
  if (!missing.empty()) {
    // The reason is one sentence that groups the gaps by cause; `missing`
    // lists each gap once with its detail. No tier of the measured part is
    // shown beside "not rated": readers took it for a rating.
    for (const auto& m : missing) card.add_missing(m);
    tier.tier = kNotRated;
    tier.reason = absl::StrCat("not rated: ", NotRatedHeadline(coverage));
  }
  card.set_tier(tier.tier);
  card.set_tier_reason(card.simulated() ? absl::StrCat(kSimulatedBanner, "; ", tier.reason)
                                        : tier.reason);
  for (auto& b : barrier_starts) *card.add_barrier_starts() = std::move(b);

  // Nodes: the run's selection first, then any other node that shows up.
  // A node has data when a record evaluated it or one of its tasks completed.
  std::set<std::string> nodes_with_data;
  for (const auto& t : data.tasks) {
    if (t.state() != v1::TASK_COMPLETED) continue;
    for (const auto& n : SplitNodes(t.node())) nodes_with_data.insert(n);
  }
  std::vector<std::string> nodes = data.nodes;
  std::set<std::string> seen(nodes.begin(), nodes.end());
  std::set<std::string> extra;
  for (const auto& t : data.tasks) {
    for (const auto& n : SplitNodes(t.node())) extra.insert(n);
  }
  for (const auto& [n, rs] : by_node) extra.insert(n);
  for (const auto& n : evaluated_by_records) {
    extra.insert(n);
    nodes_with_data.insert(n);
  }
  for (const auto& n : extra) {
    if (seen.insert(n).second) nodes.push_back(n);
  }

  // Each node's tasks in the run's order, indexed once (looking through
  // every task for every node was nodes x tasks).
  std::map<std::string, std::vector<const v1::TaskInfo*>> tasks_of_node;
  for (const auto& t : data.tasks) {
    for (const auto& n : SplitNodes(t.node())) {
      auto& list = tasks_of_node[n];
      if (list.empty() || list.back() != &t) list.push_back(&t);
    }
  }
  for (const auto& node : nodes) {
    v1::NodeVerdict* v = card.add_nodes();
    v->set_node(node);
    bool any_task_broken = false;
    for (const v1::TaskInfo* tp : tasks_of_node[node]) {
      const v1::TaskInfo& t = *tp;
      *v->add_tasks() = Summarize(t);
      if (TaskBroke(t) && TaskBlames(t, node)) any_task_broken = true;
    }
    std::vector<const v1::RuleResult*> rs = by_node[node];
    std::stable_sort(rs.begin(), rs.end(), [](const auto* a, const auto* b) {
      return OutcomeBadness(a->outcome()) > OutcomeBadness(b->outcome());
    });
    int worst = 0;
    for (const auto* r : rs) worst = std::max(worst, OutcomeBadness(r->outcome()));
    std::string verdict = VerdictForBadness(worst);
    std::vector<std::string> reasons;
    auto add_reason = [&](std::string text) {
      if (std::find(reasons.begin(), reasons.end(), text) == reasons.end()) {
        reasons.push_back(std::move(text));
      }
    };
    // One reason a rule (category, outcome, rule id), most severe first: its
    // first headline and how many more of it ("and 3 more audit.runc_cve");
    // ten CVE findings are one line here, each in full in the findings table.
    std::vector<std::pair<const v1::RuleResult*, int>> rules;  // first of each, how many
    const auto gaps = coverage.not_evaluated_on_node.find(node);
    const bool has_gaps = gaps != coverage.not_evaluated_on_node.end();
    for (const auto* r : rs) {
      if (r->outcome() == "pass") continue;
      // A task that could not run is its plan entry's gap below, said once.
      if (has_gaps && r->outcome() == "not_measured" && absl::StartsWith(r->rule_id(), "task.")) {
        continue;
      }
      auto same = std::find_if(rules.begin(), rules.end(), [&](const auto& e) {
        return e.first->rule_id() == r->rule_id() && e.first->outcome() == r->outcome() &&
               e.first->category() == r->category();
      });
      if (same != rules.end() && Fired(r->outcome())) {
        ++same->second;
      } else {
        rules.push_back({r, 1});
      }
    }
    for (const auto& [r, n] : rules) {
      std::string text = absl::StrCat(r->category(), " ", OutcomeLabel(r->outcome()), ": ",
                                       Headline(*r));
      if (Fired(r->outcome())) {
        absl::StrAppend(&text, " (", r->rule_id(),
                        n > 1 ? absl::StrCat(", and ", n - 1, " more like it") : "", ")");
      }
      add_reason(std::move(text));
    }
    const bool has_data = nodes_with_data.count(node) > 0;
    if (!has_data) {
      add_reason("no results from this node");
      if (any_task_broken) verdict = "fail";
    }
    bool any_not_measured = !has_data;
    for (const auto* r : rs) any_not_measured = any_not_measured || r->outcome() == "not_measured";
    if (has_gaps) {
      any_not_measured = true;
      for (const auto& line : gaps->second) add_reason(line);  // the same words are said once
    }
    // Not measured is never a pass: a node with anything not measured (a
    // plan entry that evaluated nothing there, a check that could not run)
    // is at best "warn", with what and why in its reasons.
    if (verdict == "pass" && any_not_measured) verdict = "warn";
    v->set_verdict(verdict);
    for (auto& r : reasons) v->add_reasons(std::move(r));
    if (auto it = view.history.find(node); it != view.history.end()) {
      for (const auto& h : it->second) v->add_history(h);
    }
    if (auto it = data.inventories.find(node); it != data.inventories.end()) {
      FillInventory(it->second, v);
    }
  }
  BuildCharts(data, &card);
  // For compare, baseline and rank (compare.h, cost.h): every metric key,
  // the baseline judged against, and the cost figures.
  size_t summary_dropped = 0;
  for (auto& m : BuildMetricSummary(data, &summary_dropped)) {
    *card.add_metric_summary() = std::move(m);
  }
  if (summary_dropped > 0) {
    card.set_metric_summary_note(absl::StrCat("metric_summary keeps ", kMaxSummaryKeys,
                                              " keys; ", summary_dropped, " more left out"));
  }
  card.set_baseline(DescribeBaseline(input.plan));
  for (auto& curve : LossCurvesOf(data)) *card.add_loss_curves() = std::move(curve);
  *card.mutable_cost() = ComputeCost(card, input.plan.price_per_gpu_hour(), "plan");
  return card;
}

}  // namespace

v1::Scorecard BuildScorecard(const RunData& input) { return Build(input, nullptr); }
v1::Scorecard BuildScorecard(RunData&& input) { return Build(input, &input); }

std::string RenderJson(const v1::Scorecard& card) {
  // Like MessageToJsonLine(card, true), but fields at their default value
  // are printed too: a reader must see "measured": false and "rules": [].
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(card, &out, options).ok()) {
    return MessageToJsonLine(card, true);
  }
  return out;
}

}  // namespace cmax::reports
