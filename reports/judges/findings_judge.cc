// Findings judge: every Finding a suite wrote becomes a rule result in its
// category, its outcome taken from its severity (RULES.md, rule 1); a finding
// marked not_measured (the check could not run) is not measured, whatever its
// severity says.
#include <set>

#include "absl/strings/str_cat.h"
#include "common/severity.h"
#include "reports/judge_util.h"
#include "reports/judges.h"
#include "reports/run_data.h"

namespace cmax::reports {
namespace {

// A finding's severity as a rule outcome: warn, fail and critical keep their
// name; info, and unspecified (a fact without a verdict), pass.
std::string OutcomeFor(v1::Severity s) {
  const bool verdict =
      s == v1::SEVERITY_WARN || s == v1::SEVERITY_FAIL || s == v1::SEVERITY_CRITICAL;
  return verdict ? SeverityName(s) : "pass";
}

}  // namespace

void FindingsJudge(const RunData& data, std::vector<v1::RuleResult>* out) {
  // Tasks that could not run (exit 2): the tasks judge gives their one
  // not-measured result, in the suite's own words (its first not-measured
  // finding); repeating each such finding would list one reason many times.
  std::set<std::string> could_not_run;
  for (const auto& t : data.tasks) {
    if (TaskCouldNotRun(t)) could_not_run.insert(t.task_id());
  }
  ForEachRecord(data, {v1::Record::kFinding}, [&](const v1::ExportedRecord& rec) {
    if (!rec.record().has_finding()) return;
    const v1::Finding& f = rec.record().finding();
    if (f.not_measured() && could_not_run.count(rec.task_id())) return;
    v1::RuleResult r;
    r.set_rule_id(f.check_id().empty() ? std::string("finding") : f.check_id());
    r.set_category(FindingCategory(f));
    r.set_outcome(f.not_measured() ? "not_measured" : OutcomeFor(f.severity()));
    r.set_node(RecordNode(rec));
    r.set_subject(f.subject());
    std::string message = f.title();
    if (!f.detail().empty()) {
      message = message.empty() ? f.detail() : absl::StrCat(message, ": ", f.detail());
    }
    if (message.empty()) message = r.rule_id();
    r.set_message(message);
    // The title alone where a glance is all there is room for (a CVE's
    // detail is a paragraph); the message keeps both.
    if (!f.title().empty() && !f.detail().empty()) r.set_title(f.title());
    for (const auto& e : f.evidence()) r.add_evidence(e);
    for (const auto& l : f.links()) r.add_links(l);
    r.set_action(f.action());
    out->push_back(std::move(r));
  });
}

}  // namespace cmax::reports
