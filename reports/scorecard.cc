// The scorecard builder: runs the judges and aggregates their results into
// category grades, node verdicts and the tier (rules in RULES.md).
#include "reports/scorecard.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/record_io.h"
#include "google/protobuf/util/json_util.h"
#include "common/time_util.h"
#include "common/version.h"
#include "reports/grading.h"
#include "reports/judge_util.h"
#include "reports/judges.h"

namespace cmax::reports {
namespace {

constexpr size_t kMaxMeasurements = 2000;
constexpr size_t kMaxRulesPerCategory = 500;
constexpr size_t kSummaryMessages = 3;

// Higher is worse; used to order rules and reasons.
int OutcomeRank(const std::string& outcome) {
  if (outcome == "critical") return 4;
  if (outcome == "fail") return 3;
  if (outcome == "warn") return 2;
  if (outcome == "not_measured") return 1;
  return 0;
}

bool Fired(const std::string& outcome) { return OutcomeRank(outcome) >= 2; }

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

std::string Plural(size_t n, const std::string& one, const std::string& many) {
  return absl::StrCat(n, " ", n == 1 ? one : many);
}

struct CategoryWork {
  CategoryTally tally;
  std::vector<const v1::RuleResult*> rules;
  std::map<std::string, std::pair<int, int>> suites;  // suite -> (measurements, findings)
  bool simulated = false;
};

std::string Summary(const CategoryWork& w, bool measured) {
  std::vector<const v1::RuleResult*> fired, not_measured;
  for (const auto* r : w.rules) {
    if (Fired(r->outcome())) fired.push_back(r);
    if (r->outcome() == "not_measured") not_measured.push_back(r);
  }
  auto list = [](const std::vector<const v1::RuleResult*>& rs) {
    std::vector<std::string> msgs;
    for (size_t i = 0; i < rs.size() && i < kSummaryMessages; ++i) msgs.push_back(Described(*rs[i]));
    std::string text = absl::StrJoin(msgs, "; ");
    if (rs.size() > kSummaryMessages) {
      absl::StrAppend(&text, " (and ", rs.size() - kSummaryMessages, " more)");
    }
    return text;
  };
  if (!measured) {
    if (not_measured.empty()) return "not measured: no suite in this run reported results here";
    return absl::StrCat("not measured: ", list(not_measured));
  }
  const size_t n = w.tally.measured_nodes.size();
  std::string text = n == 0 ? std::string("fleet-wide results only")
                            : absl::StrCat(Plural(n, "node", "nodes"), " measured");
  if (fired.empty()) {
    absl::StrAppend(&text, "; no warnings or failures");
  } else {
    std::vector<std::string> counts;
    if (w.tally.critical > 0) counts.push_back(absl::StrCat(w.tally.critical, " critical"));
    if (w.tally.fail > 0) counts.push_back(Plural(w.tally.fail, "failure", "failures"));
    if (w.tally.warn > 0) counts.push_back(Plural(w.tally.warn, "warning", "warnings"));
    absl::StrAppend(&text, "; ", absl::StrJoin(counts, ", "), ": ", list(fired));
  }
  if (!not_measured.empty()) {
    absl::StrAppend(&text, "; ", not_measured.size(), " not measured: ", list(not_measured));
  }
  return text;
}

v1::CategoryGrade MakeCategory(const std::string& name, CategoryWork& w,
                               const std::string& measurements_note) {
  v1::CategoryGrade c;
  c.set_name(name);
  c.set_measured(IsMeasured(w.tally));
  c.set_grade(GradeFor(w.tally));
  c.set_simulated(w.simulated);
  std::stable_sort(w.rules.begin(), w.rules.end(), [](const auto* a, const auto* b) {
    return OutcomeRank(a->outcome()) > OutcomeRank(b->outcome());
  });
  c.set_summary(w.simulated ? absl::StrCat(kSimulatedBanner, ": ", Summary(w, c.measured()))
                            : Summary(w, c.measured()));
  for (const auto& [suite, counts] : w.suites) {
    std::vector<std::string> parts;
    if (counts.first > 0) parts.push_back(Plural(counts.first, "measurement", "measurements"));
    if (counts.second > 0) parts.push_back(Plural(counts.second, "finding", "findings"));
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

bool TaskLostOrFailed(const v1::TaskInfo& t) {
  return t.state() == v1::TASK_LOST || t.state() == v1::TASK_TIMED_OUT ||
         t.state() == v1::TASK_FAILED;
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

v1::Scorecard BuildScorecard(const RunData& data) {
  v1::Scorecard card;
  card.set_run_id(data.run.run_id());
  card.set_plan(!data.plan.name().empty() ? data.plan.name() : data.run.plan_name());
  card.set_started(FormatRfc3339(data.run.created_unix_ns()));
  card.set_finished(FormatRfc3339(data.run.finished_unix_ns()));
  card.set_state(data.run.state());
  card.set_cmax_version(kCmaxVersion);
  card.set_generated(FormatRfc3339(NowUnixNs()));

  std::vector<v1::RuleResult> results;
  for (Judge judge : AllJudges()) judge(data, &results);
  for (auto& r : results) Normalize(&r);

  std::map<std::string, CategoryWork> work;
  for (const auto& name : CategoryNames()) work[name];
  std::set<std::string> nodes_with_records;

  // Records: what each category was fed, simulated data, findings, and the
  // key measurements.
  size_t measurements_total = 0;
  for (const auto& rec : data.records) {
    const v1::Record& r = rec.record();
    const std::string node = RecordNode(rec);
    if (r.has_measurement()) {
      const v1::Measurement& m = r.measurement();
      CategoryWork& w = work[MeasurementCategory(m, rec.suite())];
      w.tally.has_records = true;
      if (!node.empty()) w.tally.measured_nodes.insert(node);
      w.suites[m.suite().empty() ? rec.suite() : m.suite()].first++;
      if (m.simulated()) {
        w.simulated = true;
        card.set_simulated(true);
      }
      if (!node.empty()) nodes_with_records.insert(node);
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
      w.tally.has_records = true;
      if (!node.empty()) w.tally.measured_nodes.insert(node);
      w.suites[f.suite().empty() ? rec.suite() : f.suite()].second++;
      if (f.simulated()) {
        w.simulated = true;
        card.set_simulated(true);
      }
      if (!node.empty()) nodes_with_records.insert(node);
      v1::Finding* kept = card.add_findings();
      *kept = f;
      if (kept->suite().empty()) kept->set_suite(rec.suite());
      if (!node.empty()) (*kept->mutable_labels())["node"] = node;
    }
  }
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

  for (const auto& name : CategoryNames()) {
    *card.add_categories() = MakeCategory(name, work[name], measurements_note);
  }

  TierDecision tier = TierFor({card.categories().begin(), card.categories().end()},
                              security_critical);
  card.set_tier(tier.tier);
  card.set_tier_reason(card.simulated() ? absl::StrCat(kSimulatedBanner, "; ", tier.reason)
                                        : tier.reason);

  // Nodes: the run's selection first, then any other node that shows up.
  std::vector<std::string> nodes = data.nodes;
  std::set<std::string> seen(nodes.begin(), nodes.end());
  std::set<std::string> extra;
  for (const auto& t : data.tasks) {
    for (const auto& n : SplitNodes(t.node())) extra.insert(n);
  }
  for (const auto& [n, rs] : by_node) extra.insert(n);
  for (const auto& n : nodes_with_records) extra.insert(n);
  for (const auto& n : extra) {
    if (seen.insert(n).second) nodes.push_back(n);
  }

  for (const auto& node : nodes) {
    v1::NodeVerdict* v = card.add_nodes();
    v->set_node(node);
    bool any_task_broken = false, has_data = nodes_with_records.count(node) > 0;
    for (const auto& t : data.tasks) {
      const auto ns = SplitNodes(t.node());
      if (std::find(ns.begin(), ns.end(), node) == ns.end()) continue;
      *v->add_tasks() = Summarize(t);
      if (TaskLostOrFailed(t)) any_task_broken = true;
      if (t.state() == v1::TASK_COMPLETED) has_data = true;
    }
    std::vector<const v1::RuleResult*> rs = by_node[node];
    std::stable_sort(rs.begin(), rs.end(), [](const auto* a, const auto* b) {
      return OutcomeRank(a->outcome()) > OutcomeRank(b->outcome());
    });
    int worst = 0;
    for (const auto* r : rs) worst = std::max(worst, OutcomeRank(r->outcome()));
    std::string verdict = worst >= 3 ? "fail" : worst == 2 ? "warn" : "pass";
    if (!has_data) {
      v->add_reasons("no results from this node");
      if (any_task_broken) {
        verdict = "fail";
      } else if (verdict == "pass") {
        verdict = "warn";  // not measured is never a pass
      }
    }
    v->set_verdict(verdict);
    for (const auto* r : rs) {
      if (r->outcome() == "pass") continue;
      const std::string label = r->outcome() == "not_measured" ? "not measured" : r->outcome();
      v->add_reasons(absl::StrCat(r->category(), " ", label, ": ", r->message()));
    }
    if (auto it = data.inventories.find(node); it != data.inventories.end()) {
      FillInventory(it->second, v);
    }
  }
  return card;
}

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
