#include "reports/judged_view.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/plural.h"
#include "common/suite_declaration.h"
#include "reports/judge_util.h"
#include "reports/record_set.h"

namespace cmax::reports {
namespace {

std::string AttemptText(int attempt, v1::TaskState state, int exit_code,
                        const std::string& message) {
  // Exit code 2 is "could not run": never called failed (README, "Exit codes").
  const bool could_not_run = state == v1::TASK_FAILED && exit_code == kCouldNotRunExit;
  std::string s = absl::StrCat("attempt ", attempt, " ",
                               could_not_run ? "could not run" : TaskStateName(state));
  // -1: the attempt ended without an exit code of its own (agent restarted).
  if (state == v1::TASK_FAILED && exit_code >= 0) {
    absl::StrAppend(&s, " (exit code ", exit_code, ")");
  }
  if (!message.empty()) absl::StrAppend(&s, ": ", message);
  return s;
}

}  // namespace

bool Evaluates(const v1::ExportedRecord& rec) {
  const v1::Record& r = rec.record();
  if (r.has_measurement()) return true;
  if (r.has_finding()) return !r.finding().not_measured();
  return false;
}

namespace {

// `move_from` is `data` when its records may be moved, null to copy them.
JudgedView MakeView(const RunData& data, RunData* move_from) {
  JudgedView view;
  view.data.run = data.run;
  view.data.plan = data.plan;
  view.data.tasks = data.tasks;
  view.data.inventories = data.inventories;
  view.data.nodes = data.nodes;

  std::map<std::string, const v1::TaskInfo*> tasks;
  for (const auto& t : data.tasks) {
    tasks[t.task_id()] = &t;
    if (t.earlier_attempts().empty()) continue;
    std::vector<std::string> steps;
    for (const auto& a : t.earlier_attempts()) {
      steps.push_back(AttemptText(a.attempt(), a.state(), a.exit_code(), a.message()));
    }
    steps.push_back(AttemptText(t.attempt(), t.state(), t.exit_code(), ""));
    const std::string line =
        absl::StrCat(EntryLabel(t.name(), t.suite()), ": ", absl::StrJoin(steps, ", "), " (only the last is judged)");
    for (const auto& n : SplitNodes(t.node())) view.history[n].push_back(line);
  }

  // (node, task) -> records left out, by reason.
  std::map<std::pair<std::string, std::string>, std::pair<int, int>> dropped;  // (earlier, late)
  // False when `rec` is left out of what is judged (counted in `dropped`).
  auto judged = [&](const v1::ExportedRecord& rec) {
    if (!SuiteIsGraded(rec.suite())) return false;  // never graded (selftest), nothing to tell
    auto it = tasks.find(rec.task_id());
    const bool earlier = it != tasks.end() && rec.attempt() != it->second->attempt();
    if (earlier || rec.late()) {
      auto& d = dropped[{RecordNode(rec), rec.task_id()}];
      (earlier ? d.first : d.second)++;
      return false;
    }
    return true;
  };
  view.data.records.reserve(data.records.size());
  for (size_t i = 0; i < data.records.size(); ++i) {
    const v1::ExportedRecord& rec = data.records[i];
    if (!judged(rec)) continue;
    if (move_from) {
      view.data.records.push_back(std::move(move_from->records[i]));
    } else {
      view.data.records.push_back(rec);
    }
  }
  if (move_from) {
    move_from->records.clear();
    move_from->records.shrink_to_fit();
  }
  // Records held compactly: the same filter, as marks on the set (moved
  // when it may be, else copied).
  if (data.record_set) {
    std::shared_ptr<RecordSet> set = move_from
                                         ? std::move(move_from->record_set)
                                         : std::make_shared<RecordSet>(*data.record_set);
    // judged() reads no label (RecordNode's "node" label only when the
    // record's node is empty, and such records are parsed whole).
    RecordFilter every;
    every.labels_if = NoLabels;
    set->ForEach(every, [&](size_t i, const v1::ExportedRecord& rec) {
      if (!judged(rec)) set->Drop(i);
    });
    view.data.record_set = std::move(set);
  }
  for (const auto& [key, counts] : dropped) {
    const auto& [node, task_id] = key;
    auto it = tasks.find(task_id);
    const std::string label = it != tasks.end() ? EntryLabel(it->second->name(), it->second->suite()) : task_id;
    if (counts.first > 0) {
      view.history[node].push_back(absl::StrCat(Counted(counts.first, "record", "records"), " of ", label,
                                                " from earlier attempts: in the export, not judged"));
    }
    if (counts.second > 0) {
      view.history[node].push_back(absl::StrCat(Counted(counts.second, "record", "records"), " of ", label,
                                                " arrived after the task ended (late): in the "
                                                "export, not judged"));
    }
  }
  return view;
}

}  // namespace

JudgedView MakeJudgedView(const RunData& data) { return MakeView(data, nullptr); }
JudgedView MakeJudgedView(RunData&& data) { return MakeView(data, &data); }

}  // namespace cmax::reports
