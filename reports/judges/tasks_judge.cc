// Tasks judge: what the task outcomes say about the nodes (RULES.md, rule 2).
// Only a task's last attempt is judged (TaskInfo describes it). A lost,
// crashed or hung task fails Reliability on the nodes to blame: for a group
// task, the nodes whose rank failed or was lost (TaskInfo.blamed_nodes); the
// other nodes of the group were stopped and get "not measured" for the plan
// entry, not a fail. A suite that could not run (exit 2) or was cancelled
// leaves its category "not measured" on that node, with the suite's own
// reason; so does an entry the coordinator never started because the run has
// too few nodes for it ("not measured: needs 2 nodes, the run has 1").
// Completed tasks give nothing here: their records speak for them.
#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "reports/coverage.h"
#include "reports/judge_util.h"
#include "reports/judges.h"
#include "reports/run_data.h"

namespace cmax::reports {
namespace {

void AddTaskEvidence(const v1::TaskInfo& t, v1::RuleResult* r) {
  r->add_evidence(absl::StrCat("task ", t.task_id(), " attempt ", t.attempt(), ": ",
                               TaskStateName(t.state()), ", exit code ", t.exit_code()));
  if (!t.message().empty()) r->add_evidence(absl::StrCat("message: ", t.message()));
  if (!t.blamed_nodes().empty()) r->add_evidence(absl::StrCat("blamed: ", t.blamed_nodes()));
  if (!t.stderr_tail().empty()) r->add_evidence(absl::StrCat("stderr tail:\n", t.stderr_tail()));
}

// The first not-measured finding a task wrote on each node: the suite's own
// words for why it could not run ("no GPU driver: libcuda.so.1 not found").
// Copies: a record seen through ForEachRecord lives only during its call.
std::map<std::pair<std::string, std::string>, v1::Finding> NotMeasuredFindings(
    const RunData& data) {
  std::map<std::pair<std::string, std::string>, v1::Finding> out;
  ForEachRecord(data, {v1::Record::kFinding}, [&](const v1::ExportedRecord& rec) {
    if (!rec.record().has_finding() || !rec.record().finding().not_measured()) return;
    out.try_emplace({rec.task_id(), RecordNode(rec)}, rec.record().finding());
  });
  return out;
}

}  // namespace

void TasksJudge(const RunData& data, std::vector<v1::RuleResult>* out) {
  const auto not_measured = NotMeasuredFindings(data);
  for (const auto& t : data.tasks) {
    if (t.state() == v1::TASK_COMPLETED) continue;
    const std::string label = EntryLabel(t.name(), t.suite());
    const std::string message = StripVerdictPrefixes(t.message());
    const std::string suffix = message.empty() ? "" : absl::StrCat(": ", message);
    std::vector<std::string> nodes = SplitNodes(t.node());
    if (nodes.empty()) nodes.push_back("");
    for (const auto& node : nodes) {
      v1::RuleResult r;
      r.set_subject("node");
      r.set_node(node);
      if (TaskStoppedOn(t, node)) {
        r.set_rule_id("task.stopped");
        r.set_category(SuiteCategory(t.suite()));
        r.set_outcome("not_measured");
        r.set_message(absl::StrCat(label, " stopped", suffix));
      } else if (t.state() == v1::TASK_LOST) {
        r.set_rule_id("task.lost");
        r.set_category("Reliability");
        r.set_outcome("fail");
        r.set_message(absl::StrCat("agent lost during ", label));
        r.set_action("check that the node is up and its cmax-agent is running "
                     "(journalctl -u cmax-agent), then rerun the suite");
      } else if (t.state() == v1::TASK_TIMED_OUT) {
        r.set_rule_id("task.timed_out");
        r.set_category("Reliability");
        r.set_outcome("fail");
        r.set_message(absl::StrCat(label, " hung: killed at timeout"));
        r.set_action("look for a hung GPU or device (kernel log, Xid) on this node");
      } else if (t.state() == v1::TASK_FAILED && !TaskCouldNotRun(t)) {
        r.set_rule_id("task.crashed");
        r.set_category("Reliability");
        r.set_outcome("fail");
        r.set_message(absl::StrCat(label, " crashed (exit code ", t.exit_code(), ")", suffix));
        r.set_action("read the stderr tail; rerun the suite by hand with cmax-bench");
      } else if (TaskNotStarted(t)) {
        // The run had too few nodes for the entry: nothing was attempted.
        r.set_rule_id("task.not_started");
        r.set_category(SuiteCategory(t.suite()));
        r.set_outcome("not_measured");
        r.set_message(absl::StrCat(label, " not measured", suffix));
        r.set_action("run the plan on a cluster with the nodes the entry needs, or leave the "
                     "entry out");
      } else if (t.state() == v1::TASK_FAILED) {
        r.set_rule_id("task.could_not_run");
        r.set_category(SuiteCategory(t.suite()));
        r.set_outcome("not_measured");
        auto f = not_measured.find({t.task_id(), node});
        // The label names the suite: its own "rdma could not run: ..." would say it twice.
        const std::string why = WithoutSuitePrefix(
            f != not_measured.end() ? NotMeasuredReason(f->second) : message, t.suite());
        r.set_message(absl::StrCat(label, " could not run", why.empty() ? "" : ": ", why));
        if (f != not_measured.end() && !f->second.action().empty()) {
          r.set_action(f->second.action());
        }
      } else if (t.state() == v1::TASK_CANCELLED) {
        r.set_rule_id("task.cancelled");
        r.set_category(SuiteCategory(t.suite()));
        r.set_outcome("not_measured");
        r.set_message(absl::StrCat(label, " cancelled"));
      } else {  // pending, assigned, running when the run ended
        r.set_rule_id("task.unfinished");
        r.set_category(SuiteCategory(t.suite()));
        r.set_outcome("not_measured");
        r.set_message(absl::StrCat(label, " never finished (", TaskStateName(t.state()), ")"));
      }
      AddTaskEvidence(t, &r);
      out->push_back(std::move(r));
    }
  }
}

}  // namespace cmax::reports
