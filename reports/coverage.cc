#include "reports/coverage.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/plural.h"
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

// A reason read at a glance: its clauses (split at ": ") as far as they fit
// in `max_chars`, at least the first two (the verdict and its cause, cut
// with "…" if even they do not fit): "could not run: no GPU driver: the
// CUDA runtime found no driver, and neither ..." -> "could not run: no GPU
// driver"; "could not run: node-1 cannot take part: no RDMA devices:
// /sys/class/infiniband does not exist" -> "... no RDMA devices".
std::string GlanceReason(const std::string& text, size_t max_chars = 90) {
  if (text.size() <= max_chars) return OneLine(text, max_chars);
  size_t end = text.find(": ");
  if (end == std::string::npos) return OneLine(text, max_chars);
  end = text.find(": ", end + 2);  // the end of the second clause
  if (end == std::string::npos || end > max_chars) {
    return OneLine(text.substr(0, end == std::string::npos ? text.size() : end), max_chars);
  }
  for (size_t next = text.find(": ", end + 2); next != std::string::npos && next <= max_chars;
       next = text.find(": ", next + 2)) {
    end = next;
  }
  return OneLine(text.substr(0, end), max_chars);
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
        // Said after the entry's name: "rdma could not run: ..." once.
        return with("could not run", StripVerdictPrefixes(WithoutSuitePrefix(why, t.suite())));
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
  static const std::vector<std::string> names = {"Compute",     "Networking", "Storage",
                                                 "Reliability", "Security",   "Orchestration",
                                                 "Monitoring"};
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
    auto cit = cov.categories.find(r.category());
    if (cit == cov.categories.end()) continue;
    if (r.node().empty()) {
      ++cit->second.fleet_rules;
      if (r.outcome() != "not_measured") ++cit->second.fleet_rules_evaluated;
    }
    if (r.outcome() == "not_measured") continue;
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
        // The node's verdict reads at a glance: the reason's verdict and
        // cause ("could not run: no GPU driver", "stopped: rank 1 on b
        // failed: killed by signal 11"); the entry's coverage and the node's
        // task table have it whole.
        cov.not_evaluated_on_node[n].push_back(absl::StrCat(
            SuiteCategory(spec.suite()), " not measured: ", EntryLabel(spec.name(), spec.suite()),
            " ", GlanceReason(reason)));
      }
    }
    e.set_nodes_asked(static_cast<int>(asked.size()));
    e.set_nodes_evaluated(static_cast<int>(asked.size() - why.size()));
    for (auto& line : GroupReasons(why)) e.add_not_evaluated(std::move(line));
    CategoryCoverage& c = cov.categories[SuiteCategory(spec.suite())];
    c.entries.push_back(std::move(e));
    c.entry_why.push_back(std::move(why));
  }
  return cov;
}

std::string CoverageText(const CategoryCoverage& c, int selected) {
  // A category with no plan entry and no node of its own evaluated but
  // fleet-wide results (inventory uniformity) says what those covered:
  // "evaluated on 0 of 3 nodes" next to a grade reads as a contradiction.
  // With plan entries the node count stays: that is what the tier needs.
  std::string text =
      c.evaluated.empty() && c.fleet_rules > 0 && c.entries.empty()
          ? absl::StrCat("fleet rules: ", c.fleet_rules_evaluated, " of ", c.fleet_rules)
          : absl::StrCat("evaluated on ",
                         CountedOf(static_cast<int64_t>(c.evaluated.size()), selected, "node",
                                   "nodes"));
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

bool IsFleetOnly(const v1::CategoryGrade& c) {
  return c.nodes_evaluated() == 0 && c.fleet_rules() > 0 && c.entries().empty();
}

std::string EvaluatedOnText(const v1::CategoryGrade& c) {
  if (IsFleetOnly(c)) {
    return absl::StrCat("fleet rules: ", c.fleet_rules_evaluated(), " of ", c.fleet_rules());
  }
  return CountedOf(c.nodes_evaluated(), c.nodes_selected(), "node", "nodes");
}

namespace {

// "a", "a and b", "a, b and c", "a, b, c and 2 more".
std::string JoinNames(const std::vector<std::string>& names, size_t max_named = 3) {
  if (names.size() <= 1) return names.empty() ? "" : names[0];
  if (names.size() <= max_named) {
    std::vector<std::string> head(names.begin(), names.end() - 1);
    return absl::StrCat(absl::StrJoin(head, ", "), " and ", names.back());
  }
  std::vector<std::string> head(names.begin(), names.begin() + max_named);
  return absl::StrCat(absl::StrJoin(head, ", "), " and ", names.size() - max_named, " more");
}

// Entries of one category whose gaps read the same (same counts, same
// reasons), grouped in plan order: indexes into c.entries.
std::vector<std::vector<size_t>> SameGaps(const CategoryCoverage& c,
                                          const std::function<bool(const v1::EntryCoverage&)>& keep) {
  std::vector<std::vector<size_t>> groups;
  std::map<std::string, size_t> group_of;
  for (size_t i = 0; i < c.entries.size(); ++i) {
    const v1::EntryCoverage& e = c.entries[i];
    if (!keep(e)) continue;
    const std::string key = absl::StrCat(e.nodes_evaluated(), "/", e.nodes_asked(), "\n",
                                         absl::StrJoin(e.not_evaluated(), "\n"));
    auto [it, added] = group_of.try_emplace(key, groups.size());
    if (added) groups.emplace_back();
    groups[it->second].push_back(i);
  }
  return groups;
}

std::vector<std::string> EntryNames(const CategoryCoverage& c, const std::vector<size_t>& idx) {
  std::vector<std::string> names;
  for (size_t i : idx) names.push_back(c.entries[i].entry());
  return names;
}

std::string Clip(std::string text, size_t max) {
  if (text.size() <= max) return text;
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;  // UTF-8
  return absl::StrCat(text.substr(0, cut), "\u2026");
}

// A grouped gap read at a glance: "3 nodes (a, b, c): could not run: no GPU
// driver: the CUDA runtime found no driver, ..." -> "3 nodes (a, b, c):
// could not run: no GPU driver". The category's coverage has it whole.
std::string GlanceGap(const std::string& grouped) {
  const size_t at = grouped.find(": ");
  std::string nodes, reason = grouped;
  if (at != std::string::npos) {
    const std::string head = grouped.substr(0, at);
    const bool head_is_reason = absl::StartsWith(head, "could not run") ||
                                absl::StartsWith(head, "not measured") ||
                                absl::StartsWith(head, "stopped");
    if (!head_is_reason) {
      nodes = head;
      reason = grouped.substr(at + 2);
    }
  }
  // The verdict stays with its cause: "could not run: no GPU driver", "not
  // measured: bare metal (managed: false)".
  std::string cause = ShortCause(reason);
  for (const char* verdict : {"could not run", "not measured"}) {
    if (absl::StartsWith(reason, verdict) && cause != verdict &&
        !absl::StartsWith(cause, "stopped")) {
      cause = absl::StrCat(verdict, ": ", cause);
      break;
    }
  }
  return nodes.empty() ? cause : absl::StrCat(nodes, ": ", cause);
}

}  // namespace

std::vector<std::string> EntryGaps(const CategoryCoverage& c) {
  std::vector<std::string> out;
  for (const auto& group : SameGaps(c, [](const v1::EntryCoverage& e) {
         return e.not_evaluated_size() > 0;
       })) {
    const v1::EntryCoverage& e = c.entries[group.front()];
    const std::string head = absl::StrCat(absl::StrJoin(EntryNames(c, group), ", "), " on ",
                                          e.nodes_evaluated(), " of ", e.nodes_asked());
    for (const auto& reason : e.not_evaluated()) {
      out.push_back(absl::StrCat(head, ": ", GlanceGap(reason)));
    }
  }
  return out;
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
      missing.push_back(absl::StrCat(name, " evaluated on ",
                                     CountedOf(got, coverage.selected, "node", "nodes"),
                                     " (needs ", needed, ")"));
    }
    // Each entry in one line; entries that fell short the same way share it.
    for (const auto& group : SameGaps(c, [](const v1::EntryCoverage& e) {
           return e.nodes_evaluated() < NodesNeeded(e.nodes_asked());
         })) {
      const v1::EntryCoverage& e = c.entries[group.front()];
      std::string line = absl::StrCat(
          name, ": ", absl::StrJoin(EntryNames(c, group), ", "), " evaluated on ",
          CountedOf(e.nodes_evaluated(), e.nodes_asked(), "node", "nodes"), " (needs ",
          NodesNeeded(e.nodes_asked()), ")");
      // One line an entry group: the reason's cause; its category's coverage
      // (and the node's section) has it whole.
      if (e.not_evaluated_size() > 0) absl::StrAppend(&line, ": ", GlanceGap(e.not_evaluated(0)));
      if (e.not_evaluated_size() > 1) {
        absl::StrAppend(&line, " (and ", e.not_evaluated_size() - 1, " more ",
                        e.not_evaluated_size() == 2 ? "reason" : "reasons", ")");
      }
      missing.push_back(std::move(line));
    }
  }
  if (missing.size() > kMissingLines) {
    const size_t more = missing.size() - kMissingLines + 1;
    missing.resize(kMissingLines - 1);
    missing.push_back(absl::StrCat("and ", more, " more (each category's coverage says which "
                                   "entries and why)"));
  }
  return missing;
}

std::string WithoutSuitePrefix(std::string why, const std::string& suite) {
  for (const std::string& said : {suite + " could not run: ", suite + ": "}) {
    if (absl::StartsWith(why, said)) why.erase(0, said.size());
  }
  return why;
}

std::string ShortCause(const std::string& reason) {
  constexpr size_t kMaxCause = 80;
  // The text before the first ": " is the cause, what follows its detail
  // ("no GPU driver: libcuda.so.1: cannot open shared object file").
  // A ": " inside parentheses is part of the cause ("bare metal (managed:
  // false)").
  auto head = [](absl::string_view text) {
    int depth = 0;
    size_t end = text.size();
    for (size_t i = 0; i + 1 < text.size(); ++i) {
      if (text[i] == '(') ++depth;
      if (text[i] == ')' && depth > 0) --depth;
      if (depth == 0 && text[i] == ':' && text[i + 1] == ' ') {
        end = i;
        break;
      }
    }
    return std::string(absl::StripAsciiWhitespace(text.substr(0, end)));
  };
  // "stopped: rank 1 on b could not run: ...": the cause is elsewhere.
  constexpr absl::string_view kStopped = "stopped with a rank of its group on another node";
  absl::string_view r = absl::StripAsciiWhitespace(reason);
  for (absl::string_view verdict : {"could not run", "not measured"}) {
    if (!absl::StartsWith(r, verdict)) continue;
    const std::string rest = StripVerdictPrefixes(std::string(r));
    if (absl::StartsWith(rest, "stopped")) return std::string(kStopped);
    return rest.empty() ? std::string(verdict) : Clip(head(rest), kMaxCause);
  }
  if (absl::StartsWith(r, "stopped")) return std::string(kStopped);
  return Clip(head(r), kMaxCause);
}

std::string NotRatedHeadline(const Coverage& coverage) {
  if (coverage.selected == 0) return "the run selected no nodes";
  // Categories and entries named per clause before "and N more": all five
  // rated categories fit.
  constexpr size_t kNamedSubjects = 5;
  const int needed = NodesNeeded(coverage.selected);
  // cause -> what it left unmeasured (categories or entries) and where.
  struct Cause {
    std::vector<std::string> subjects;
    std::set<std::string> nodes;
  };
  std::vector<std::string> order;
  std::map<std::string, Cause> causes;
  std::vector<std::string> not_in_plan;
  // "evaluated on 2 of 3 nodes (needs 3)" -> categories short that way with
  // no entry to name a cause (records outside the plan, nodes never asked).
  std::vector<std::pair<std::string, std::vector<std::string>>> uncaused;
  auto add = [&](const std::string& cause, const std::string& subject, const std::string& node) {
    auto [it, added] = causes.try_emplace(cause);
    if (added) order.push_back(cause);
    auto& subjects = it->second.subjects;
    if (std::find(subjects.begin(), subjects.end(), subject) == subjects.end()) {
      subjects.push_back(subject);
    }
    it->second.nodes.insert(node);
  };
  for (const auto& name : RatedCategories()) {
    const CategoryCoverage& c = coverage.categories.at(name);
    const int got = static_cast<int>(c.evaluated.size());
    if (c.entries.empty() && got == 0) {
      not_in_plan.push_back(name);
      continue;
    }
    if (got < needed) {
      // The category as a whole, on the nodes none of its entries evaluated.
      bool any = false;
      for (const auto& why : c.entry_why) {
        for (const auto& [node, reason] : why) {
          if (c.evaluated.count(node)) continue;
          add(ShortCause(reason), name, node);
          any = true;
        }
      }
      if (!any) {
        const std::string shortfall =
            absl::StrCat("evaluated on ", CountedOf(got, coverage.selected, "node", "nodes"),
                         " (needs ", needed, ")");
        auto it = std::find_if(uncaused.begin(), uncaused.end(),
                               [&](const auto& u) { return u.first == shortfall; });
        if (it == uncaused.end()) {
          it = uncaused.emplace(uncaused.end(), shortfall, std::vector<std::string>{});
        }
        it->second.push_back(name);
      }
      continue;
    }
    // The category is covered; an entry of it is short.
    for (size_t i = 0; i < c.entries.size(); ++i) {
      const v1::EntryCoverage& e = c.entries[i];
      if (e.nodes_evaluated() >= NodesNeeded(e.nodes_asked())) continue;
      for (const auto& [node, reason] : c.entry_why[i]) add(ShortCause(reason), e.entry(), node);
    }
  }
  std::vector<std::string> clauses;
  for (const auto& cause : order) {
    const Cause& c = causes[cause];
    clauses.push_back(absl::StrCat(
        JoinNames(c.subjects, kNamedSubjects), " not measured: ", cause, " on ",
        CountedOf(static_cast<int64_t>(c.nodes.size()), coverage.selected, "node", "nodes")));
  }
  for (const auto& [shortfall, names] : uncaused) {
    clauses.push_back(absl::StrCat(JoinNames(names, kNamedSubjects), " ", shortfall));
  }
  if (!not_in_plan.empty()) {
    clauses.push_back(absl::StrCat(JoinNames(not_in_plan, kNamedSubjects), " not in the plan"));
  }
  if (clauses.size() > kHeadlineCauses) {
    const size_t more = clauses.size() - kHeadlineCauses;
    clauses.resize(kHeadlineCauses);
    clauses.push_back(absl::StrCat("and ", more, " more ", more == 1 ? "cause" : "causes"));
  }
  return absl::StrJoin(clauses, "; ");
}

}  // namespace cmax::reports
