// Tasks judge: what the task outcomes say about the nodes (RULES.md, rule 2).
// A lost, crashed or hung task fails Reliability on each of its nodes; a
// suite that could not run (exit 2) or was cancelled leaves its category
// "not measured" on that node. Completed tasks give nothing here: their
// records speak for them.
#include "absl/strings/str_cat.h"
#include "common/suite_catalog.h"
#include "reports/judge_util.h"
#include "reports/run_data.h"

namespace cmax::reports {
namespace {

constexpr int kCouldNotRunExit = 2;  // benchmarks/suite.h

std::string TaskLabel(const v1::TaskInfo& t) {
  if (t.name().empty() || t.name() == t.suite()) return t.suite();
  return absl::StrCat(t.name(), " (", t.suite(), ")");
}

void AddTaskEvidence(const v1::TaskInfo& t, v1::RuleResult* r) {
  r->add_evidence(absl::StrCat("task ", t.task_id(), " attempt ", t.attempt(), ": ",
                               TaskStateName(t.state()), ", exit code ", t.exit_code()));
  if (!t.message().empty()) r->add_evidence(absl::StrCat("message: ", t.message()));
  if (!t.stderr_tail().empty()) r->add_evidence(absl::StrCat("stderr tail:\n", t.stderr_tail()));
}

}  // namespace

void TasksJudge(const RunData& data, std::vector<v1::RuleResult>* out) {
  for (const auto& t : data.tasks) {
    v1::RuleResult r;
    r.set_subject("node");
    const std::string label = TaskLabel(t);
    switch (t.state()) {
      case v1::TASK_COMPLETED:
        continue;
      case v1::TASK_LOST:
        r.set_rule_id("task.lost");
        r.set_category("Reliability");
        r.set_outcome("fail");
        r.set_message(absl::StrCat("agent lost during ", label));
        r.set_action("check that the node is up and its cmax-agent is running "
                     "(journalctl -u cmax-agent), then rerun the suite");
        break;
      case v1::TASK_TIMED_OUT:
        r.set_rule_id("task.timed_out");
        r.set_category("Reliability");
        r.set_outcome("fail");
        r.set_message(absl::StrCat(label, " hung: killed at timeout"));
        r.set_action("look for a hung GPU or device (kernel log, Xid) on this node");
        break;
      case v1::TASK_FAILED:
        if (t.exit_code() == kCouldNotRunExit) {
          r.set_rule_id("task.could_not_run");
          r.set_category(SuiteCategory(t.suite()));
          r.set_outcome("not_measured");
          r.set_message(absl::StrCat(label, " could not run",
                                     t.message().empty() ? "" : ": ", t.message()));
        } else {
          r.set_rule_id("task.crashed");
          r.set_category("Reliability");
          r.set_outcome("fail");
          r.set_message(absl::StrCat(label, " crashed (exit code ", t.exit_code(), ")",
                                     t.message().empty() ? "" : ": ", t.message()));
          r.set_action("read the stderr tail; rerun the suite by hand with cmax-bench");
        }
        break;
      case v1::TASK_CANCELLED:
        r.set_rule_id("task.cancelled");
        r.set_category(SuiteCategory(t.suite()));
        r.set_outcome("not_measured");
        r.set_message(absl::StrCat(label, " cancelled"));
        break;
      default:  // pending, assigned, running when the run ended
        r.set_rule_id("task.unfinished");
        r.set_category(SuiteCategory(t.suite()));
        r.set_outcome("not_measured");
        r.set_message(absl::StrCat(label, " never finished (", TaskStateName(t.state()), ")"));
        break;
    }
    AddTaskEvidence(t, &r);
    std::vector<std::string> nodes = SplitNodes(t.node());
    if (nodes.empty()) nodes.push_back("");
    for (const auto& node : nodes) {
      v1::RuleResult copy = r;
      copy.set_node(node);
      out->push_back(std::move(copy));
    }
  }
}

}  // namespace cmax::reports
