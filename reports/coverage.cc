#include "reports/coverage.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/suite_declaration.h"
#include "reports/judge_util.h"
#include "reports/judged_view.h"

namespace cmax::reports {
namespace {

bool IsGroupTask(const v1::TaskInfo& t) { return SplitNodes(t.node()).size() > 1; }

std::string RecordCategory(const v1::ExportedRecord& rec) {
  const v1::Record& r = rec.record();
  if (r.has_measurement()) return MeasurementCategory(r.measurement(), rec.suite());
  return FindingCategory(r.finding());
}

// The nodes a record evaluated: its own, and for a completed group task
// every node of the group.
std::vector<std::string> EvaluatedNodes(const v1::ExportedRecord& rec, const v1::TaskInfo* task) {
  std::vector<std::string> nodes;
  const std::string own = RecordNode(rec);
  if (!own.empty()) nodes.push_back(own);
  if (task != nullptr && task->state() == v1::TASK_COMPLETED && IsGroupTask(*task)) {
    for (const auto& n : SplitNodes(task->node())) {
      if (n != own) nodes.push_back(n);
    }
  }
  return nodes;
}

std::string LastLine(const std::string& text) {
  std::vector<absl::string_view> lines =
      absl::StrSplit(text, absl::ByChar('\n'), absl::SkipWhitespace());
  return lines.empty() ? std::string() : std::string(absl::StripAsciiWhitespace(lines.back()));
}

// Why `node` got nothing evaluated from task `t`; `not_measured` is the first
// not-measured finding the task wrote on that node, if any.
std::string WhyNotEvaluated(const v1::TaskInfo& t, const std::string& node,
                            const std::string& not_measured) {
  const std::string message = StripVerdictPrefixes(t.message());
  auto with = [](const std::string& head, const std::string& tail) {
    return tail.empty() ? head : absl::StrCat(head, ": ", tail);
  };
  if (TaskStoppedOn(t, node)) return with("stopped", message);
  switch (t.state()) {
    case v1::TASK_COMPLETED:
      return not_measured.empty() ? std::string("completed without results")
                                  : with("not measured", not_measured);
    case v1::TASK_FAILED:
      // Never attempted (too few nodes for the entry): not measured, in the
      // coordinator's words.
      if (TaskNotStarted(t)) return with("not measured", message);
      if (TaskCouldNotRun(t)) {
        std::string why = !not_measured.empty() ? not_measured
                          : !message.empty()    ? message
                                                : StripVerdictPrefixes(LastLine(t.stderr_tail()));
        return with("could not run", why);
      }
      return with(absl::StrCat("crashed (exit code ", t.exit_code(), ")"), message);
    case v1::TASK_LOST:
      return with("agent lost", message);
    case v1::TASK_TIMED_OUT:
      return "hung: killed at timeout";
    case v1::TASK_CANCELLED:
      return "cancelled";
    default:
      return absl::StrCat("never finished (", TaskStateName(t.state()), ")");
  }
}

}  // namespace

std::string NotMeasuredReason(const v1::Finding& f) {
  const std::string title = StripVerdictPrefixes(f.title());
  const std::string detail = StripVerdictPrefixes(f.detail());
  if (title.empty()) return detail;
  if (detail.empty() || absl::StrContains(title, detail)) return title;
  return absl::StrCat(title, ": ", detail);
}

const std::vector<std::string>& RatedCategories() {
  static const std::vector<std::string> names = {"Compute", "Networking", "Storage",
                                                 "Reliability", "Security"};
  return names;
}

int NodesNeeded(int n) {
  return static_cast<int>(std::ceil(kRatedShare * static_cast<double>(n) - 1e-9));
}

std::string StripVerdictPrefixes(std::string reason) {
  static const char* const kPrefixes[] = {"could not run:", "not measured:", "error:"};
  // Inside the text too: "rank 1 on b could not run: not measured: no GPU"
  // says "could not run" once.
  static const char* const kStacked[][2] = {
      {"could not run: not measured: ", "could not run: "},
      {"could not run: could not run: ", "could not run: "},
      {"not measured: not measured: ", "not measured: "},
      {"not measured: could not run: ", "not measured: "},
      {"could not run: error: ", "could not run: "},
  };
  for (bool again = true; again;) {
    again = false;
    for (const auto& [stacked, once] : kStacked) {
      if (size_t at = reason.find(stacked); at != std::string::npos) {
        reason.replace(at, strlen(stacked), once);
        again = true;
      }
    }
  }
  for (bool again = true; again;) {
    again = false;
    absl::string_view v = absl::StripLeadingAsciiWhitespace(reason);
    for (absl::string_view p : kPrefixes) {
      if (!absl::StartsWithIgnoreCase(v, p)) continue;
      v.remove_prefix(p.size());
      reason = std::string(absl::StripLeadingAsciiWhitespace(v));
      again = true;
      break;
    }
  }
  return std::string(absl::StripAsciiWhitespace(reason));
}

std::vector<std::string> GroupReasons(
    const std::vector<std::pair<std::string, std::string>>& node_reason) {
  std::vector<std::string> order;
  std::map<std::string, std::vector<std::string>> nodes_of;
  for (const auto& [node, reason] : node_reason) {
    auto& nodes = nodes_of[reason];
    if (nodes.empty()) order.push_back(reason);
    if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(node);
  }
  std::vector<std::string> out;
  for (const auto& reason : order) {
    const auto& nodes = nodes_of[reason];
    constexpr size_t kNamed = 5;
    std::vector<std::string> named(nodes.begin(),
                                   nodes.begin() + std::min(nodes.size(), kNamed));
    std::string who = absl::StrJoin(named, ", ");
    if (nodes.size() > kNamed) absl::StrAppend(&who, ", +", nodes.size() - kNamed, " more");
    if (nodes.size() == 1 && !nodes[0].empty()) {
      out.push_back(absl::StrCat(nodes[0], ": ", reason));
    } else if (nodes.size() == 1) {
      out.push_back(reason);
    } else {
      out.push_back(absl::StrCat(nodes.size(), " nodes (", who, "): ", reason));
    }
  }
  return out;
}

Coverage ComputeCoverage(const RunData& data, const std::vector<v1::RuleResult>& results) {
  Coverage cov;
  const std::set<std::string> selected(data.nodes.begin(), data.nodes.end());
  cov.selected = static_cast<int>(selected.size());
  for (const auto& name : CategoryNames()) cov.categories[name];

  std::map<std::string, const v1::TaskInfo*> tasks;
  for (const auto& t : data.tasks) tasks[t.task_id()] = &t;

  // (entry index, node) evaluated; (task, node) -> first not-measured text.
  std::set<std::pair<int, std::string>> entry_evaluated;
  std::map<std::pair<std::string, std::string>, std::string> not_measured_of;
  RecordFilter every;
  every.labels_if = NoLabels;  // reads no label: not parsed (record_set.h)
  ForEachRecord(data, every, [&](const v1::ExportedRecord& rec) {
    auto it = tasks.find(rec.task_id());
    const v1::TaskInfo* task = it == tasks.end() ? nullptr : it->second;
    if (!Evaluates(rec)) {
      if (rec.record().has_finding() && rec.record().finding().not_measured()) {
        not_measured_of.try_emplace({rec.task_id(), RecordNode(rec)},
                                    NotMeasuredReason(rec.record().finding()));
      }
      return;
    }
    const std::vector<std::string> nodes = EvaluatedNodes(rec, task);
    CategoryCoverage& c = cov.categories[RecordCategory(rec)];
    for (const auto& n : nodes) {
      if (selected.count(n)) c.evaluated.insert(n);
      if (task != nullptr) entry_evaluated.insert({task->suite_index(), n});
    }
  });
  for (const auto& r : results) {
    if (r.outcome() == "not_measured") continue;
    auto cit = cov.categories.find(r.category());
    if (cit == cov.categories.end()) continue;
    for (const auto& n : SplitNodes(r.node())) {
      if (selected.count(n)) cit->second.evaluated.insert(n);
    }
  }

  // Plan entries, in plan order, under their suite's category.
  for (int i = 0; i < data.plan.suites_size(); ++i) {
    const v1::SuiteSpec& spec = data.plan.suites(i);
    if (!SuiteIsGraded(spec.suite())) continue;
    v1::EntryCoverage e;
    e.set_entry(spec.name().empty() ? spec.suite() : spec.name());
    e.set_suite(spec.suite());
    std::set<std::string> asked;
    std::vector<std::pair<std::string, std::string>> why;
    for (const auto& t : data.tasks) {
      if (t.suite_index() != i) continue;
      for (const auto& n : SplitNodes(t.node())) {
        if (!asked.insert(n).second) continue;
        if (entry_evaluated.count({i, n})) continue;
        auto nm = not_measured_of.find({t.task_id(), n});
        const std::string reason =
            WhyNotEvaluated(t, n, nm == not_measured_of.end() ? "" : nm->second);
        why.push_back({n, reason});
        cov.not_evaluated_on_node[n].push_back(absl::StrCat(
            SuiteCategory(spec.suite()), " not measured: ", EntryLabel(spec.name(), spec.suite()),
            " ", reason));
      }
    }
    e.set_nodes_asked(static_cast<int>(asked.size()));
    e.set_nodes_evaluated(static_cast<int>(asked.size() - why.size()));
    for (auto& line : GroupReasons(why)) e.add_not_evaluated(std::move(line));
    cov.categories[SuiteCategory(spec.suite())].entries.push_back(std::move(e));
  }
  return cov;
}

std::string CoverageText(const CategoryCoverage& c, int selected) {
  std::string text =
      absl::StrCat("evaluated on ", c.evaluated.size(), " of ", selected, " nodes");
  if (c.entries.empty()) {
    absl::StrAppend(&text, "; the plan has no suite of this category");
    return text;
  }
  std::vector<std::string> parts;
  for (const auto& e : c.entries) {
    std::string p = absl::StrCat(e.entry(), " on ", e.nodes_evaluated(), " of ", e.nodes_asked());
    if (e.not_evaluated_size() > 0) {
      absl::StrAppend(&p, " (", absl::StrJoin(e.not_evaluated(), "; "), ")");
    }
    parts.push_back(std::move(p));
  }
  absl::StrAppend(&text, "; ", absl::StrJoin(parts, "; "));
  return text;
}

std::vector<std::string> MissingForTier(const Coverage& coverage) {
  std::vector<std::string> missing;
  if (coverage.selected == 0) {
    missing.push_back("the run selected no nodes");
    return missing;
  }
  const int needed = NodesNeeded(coverage.selected);
  for (const auto& name : RatedCategories()) {
    const CategoryCoverage& c = coverage.categories.at(name);
    const int got = static_cast<int>(c.evaluated.size());
    if (c.entries.empty() && got == 0) {
      missing.push_back(absl::StrCat(name, ": the plan has no suite of this category"));
      continue;
    }
    if (got < needed) {
      missing.push_back(absl::StrCat(name, " evaluated on ", got, " of ", coverage.selected,
                                     " nodes (needs ", needed, ")"));
    }
    for (const auto& e : c.entries) {
      const int need = NodesNeeded(e.nodes_asked());
      if (e.nodes_evaluated() >= need) continue;
      std::string line = absl::StrCat(name, ": ", e.entry(), " evaluated on ", e.nodes_evaluated(),
                                      " of ", e.nodes_asked(), " nodes (needs ", need, ")");
      if (e.not_evaluated_size() > 0) absl::StrAppend(&line, ": ", e.not_evaluated(0));
      missing.push_back(std::move(line));
    }
  }
  return missing;
}

}  // namespace cmax::reports
