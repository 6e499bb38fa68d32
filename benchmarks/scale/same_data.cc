#include "benchmarks/scale/same_data.h"

#include <algorithm>
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "benchmarks/scale/sim_node.h"
#include "reports/record_set.h"

namespace cmax::scale {

reports::RunData SameDataOn(int nodes, const v1::Plan& plan, bool compact, bool faulty) {
  reports::RunData d;
  d.run.set_run_id("r1");
  d.run.set_plan_name(plan.name());
  d.run.set_state("completed");
  d.run.set_created_unix_ns(1000000000);
  d.run.set_finished_unix_ns(2000000000);
  d.plan = plan;
  if (compact) d.record_set = std::make_shared<reports::RecordSet>();
  SimFaults faults;
  if (faulty) faults.slow_gpu = faults.flap_port = faults.sdc = 1;
  const SimNode node0 = MakeSimNode(0, "sim", faults);
  v1::ExportedRecord r;
  for (int i = 0; i < nodes; ++i) {
    const SimNode n = MakeSimNode(i, "sim", {});
    d.nodes.push_back(n.name);
    d.inventories[n.name] = SimInventory(node0);
    for (int s = 0; s < plan.suites_size(); ++s) {
      const std::string& suite = plan.suites(s).suite();
      v1::TaskInfo t;
      t.set_task_id(absl::StrCat("r1.", s, ".", n.name));
      t.set_run_id("r1");
      t.set_suite(suite);
      t.set_name(plan.suites(s).name());
      t.set_node(n.name);
      t.set_state(v1::TASK_COMPLETED);
      t.set_attempt(1);
      t.set_suite_index(s);
      const int64_t count = SimRecordCount(node0, suite);
      t.set_records(count);
      d.tasks.push_back(t);
      for (int64_t q = 0; q < count; ++q) {
        r.Clear();
        r.set_task_id(t.task_id());
        r.set_attempt(1);
        r.set_seq(q);
        r.set_node(n.name);
        r.set_suite(suite);
        *r.mutable_record() = SimRecordAt(node0, suite, q, 1500000000);
        if (compact) {
          d.record_set->Add(r);
        } else {
          d.records.push_back(r);
        }
      }
    }
  }
  return d;
}

namespace {

// A node rule with the node's own name taken out. Compared: the outcome and
// the figures. The message is not: it may quote the fleet ("disagrees with
// 7 peers" on one node, "with 79,999" on 10,000), which is the fleet's size,
// not a different finding.
struct RuleRow {
  std::string rule_id, subject, outcome, unit;
  double value = 0, expected = 0;
  std::string message;  // for the report of a difference
  auto Key() const { return std::tie(rule_id, subject, outcome, unit, value, expected); }
  bool operator<(const RuleRow& o) const { return Key() < o.Key(); }
  bool operator==(const RuleRow& o) const { return Key() == o.Key(); }
};

// node -> category -> its rules in the card, sorted.
using NodeRuleMap = std::map<std::string, std::map<std::string, std::vector<RuleRow>>>;

NodeRuleMap NodeRules(const v1::Scorecard& card) {
  NodeRuleMap out;
  for (const auto& c : card.categories()) {
    for (const auto& r : c.rules()) {
      if (r.node().empty()) continue;
      const auto anon = [&](const std::string& s) {
        return absl::StrReplaceAll(s, {{r.node(), "<node>"}});
      };
      out[r.node()][c.name()].push_back(RuleRow{r.rule_id(), anon(r.subject()), r.outcome(),
                                                r.unit(), r.value(), r.expected(),
                                                anon(r.message())});
    }
  }
  for (auto& [node, cats] : out) {
    for (auto& [name, rows] : cats) std::sort(rows.begin(), rows.end());
  }
  return out;
}

// A category whose rule list the card cut at its limit (scorecard.cc,
// kMaxRulesPerCategory): the nodes past it show none there, but their
// verdicts and reasons still carry them.
bool RulesCut(const v1::CategoryGrade& c) {
  for (const auto& e : c.evidence()) {
    if (absl::StrContains(e, "more rule results not shown")) return true;
  }
  return false;
}

// A node's reason with what may differ by fleet size alone taken out: the
// node's name, and the peer count of an SDC suspect ("disagrees with 7
// peers": the other GPUs of the fleet).
std::string Normalized(const std::string& reason, const std::string& node) {
  std::string s = absl::StrReplaceAll(reason, {{node, "<node>"}});
  const std::string mark = "disagrees with ";
  for (size_t at = s.find(mark); at != std::string::npos; at = s.find(mark, at + 1)) {
    size_t end = at + mark.size();
    while (end < s.size() && (absl::ascii_isdigit(s[end]) || s[end] == ',')) ++end;
    if (end > at + mark.size() && s.compare(end, 6, " peers") == 0) {
      s.replace(at + mark.size(), end - at - mark.size(), "N");
    }
  }
  return s;
}

// Whether two normalized reasons say the same. A reason's headline is cut
// at a fixed width ("…", reports/judge_util.h), and the node's name and the
// peer count change where it is cut: two cut headlines agree when one is a
// prefix of the other and what follows the cut (the rule id) is the same.
bool SameReason(const std::string& a, const std::string& b) {
  if (a == b) return true;
  const std::string cut = "…";
  const size_t at_a = a.find(cut), at_b = b.find(cut);
  if (at_a == std::string::npos || at_b == std::string::npos) return false;
  if (a.substr(at_a + cut.size()) != b.substr(at_b + cut.size())) return false;
  const size_t n = std::min(at_a, at_b);
  return n > 0 && a.compare(0, n, b, 0, n) == 0;
}

bool SameReasons(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!SameReason(a[i], b[i])) return false;
  }
  return true;
}

}  // namespace

Agreement CompareOneToMany(const v1::Scorecard& one, const v1::Scorecard& many) {
  Agreement a;
  const auto note = [&a](std::string what) {
    if (a.first_difference.empty()) a.first_difference = std::move(what);
  };
  a.tier_same = one.tier() == many.tier();
  if (!a.tier_same) note(absl::StrCat("tier ", one.tier(), " vs ", many.tier()));
  for (int c = 0; c < one.categories_size() && c < many.categories_size(); ++c) {
    const auto& x = one.categories(c);
    const auto& y = many.categories(c);
    if (x.grade() == y.grade()) continue;
    ++a.grades_differing;
    bool fleet_only = y.rules_size() > 0;
    for (const auto& r : y.rules()) fleet_only = fleet_only && r.node().empty();
    if (x.grade() == "not measured" && fleet_only) {
      ++a.grades_differing_allowed;
    } else {
      note(absl::StrCat(x.name(), " graded ", x.grade(), " on one node, ", y.grade(), " on ",
                        many.nodes_size()));
    }
  }
  if (one.categories_size() != many.categories_size()) {
    ++a.grades_differing;
    note("the cards have different categories");
  }
  const NodeRuleMap one_rules = NodeRules(one);
  const NodeRuleMap many_rules = NodeRules(many);
  const std::map<std::string, std::vector<RuleRow>> none;
  const auto& reference = one_rules.empty() ? none : one_rules.begin()->second;
  if (one.nodes_size() != 1) note("the 1-node card does not have one node");
  std::map<std::string, bool> cut;
  for (const auto& c : many.categories()) cut[c.name()] = RulesCut(c);
  const std::vector<RuleRow> no_rows;
  for (const auto& n : many.nodes()) {
    auto it = many_rules.find(n.node());
    const auto& mine = it == many_rules.end() ? none : it->second;
    for (const auto& c : many.categories()) {
      auto r = reference.find(c.name());
      auto m = mine.find(c.name());
      const auto& want = r == reference.end() ? no_rows : r->second;
      const auto& have = m == mine.end() ? no_rows : m->second;
      a.node_rules_compared += static_cast<int>(have.size());
      if (cut[c.name()]) {
        // Only what is shown, each one as the one node has it.
        a.node_rules_not_shown += static_cast<int>(want.size()) - static_cast<int>(have.size());
        if (!std::includes(want.begin(), want.end(), have.begin(), have.end())) {
          ++a.node_rules_differing;
          note(absl::StrCat(n.node(), ": a ", c.name(), " rule the one node does not have"));
        }
        continue;
      }
      if (have.size() != want.size()) {
        ++a.nodes_missing_rules;
        note(absl::StrCat(n.node(), ": ", have.size(), " ", c.name(), " node rules, one node has ",
                          want.size()));
      }
      for (size_t i = 0; i < have.size() && i < want.size(); ++i) {
        if (have[i] == want[i]) continue;
        ++a.node_rules_differing;
        note(absl::StrCat(n.node(), ": rule ", have[i].rule_id, " (", have[i].subject, ") ",
                          have[i].outcome, ": ", have[i].message));
      }
    }
    if (one.nodes_size() == 1) {
      const auto& v = one.nodes(0);
      std::vector<std::string> theirs, ours;
      for (const auto& s : n.reasons()) theirs.push_back(Normalized(s, n.node()));
      for (const auto& s : v.reasons()) ours.push_back(Normalized(s, v.node()));
      if (n.verdict() != v.verdict() || !SameReasons(theirs, ours)) {
        ++a.verdicts_differing;
        std::string why;
        for (size_t i = 0; i < std::max(theirs.size(), ours.size()); ++i) {
          const std::string a_reason = i < theirs.size() ? theirs[i] : "(none)";
          const std::string b_reason = i < ours.size() ? ours[i] : "(none)";
          if (SameReason(a_reason, b_reason)) continue;
          why = absl::StrCat("; reason ", i + 1, ": '", a_reason, "' vs '", b_reason, "'");
          break;
        }
        note(absl::StrCat(n.node(), ": ", n.verdict(), " vs one node's ", v.verdict(), why));
      }
    }
  }
  return a;
}

}  // namespace cmax::scale
