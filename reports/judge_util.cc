#include "reports/judge_util.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>

#include "absl/strings/match.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/suite_declaration.h"
#include "reports/metric_table.h"

namespace cmax::reports {

const std::vector<std::string>& CategoryNames() {
  static const std::vector<std::string> names = {
      "Compute",  "Networking", "Storage",       "Reliability",
      "Security", "Lifecycle",  "Orchestration", "Monitoring"};
  return names;
}

std::string CanonicalCategory(const std::string& name) {
  std::string lower = absl::AsciiStrToLower(absl::StripAsciiWhitespace(name));
  for (const auto& c : CategoryNames()) {
    if (absl::AsciiStrToLower(c) == lower) return c;
  }
  return "";
}

std::string SuiteCategory(const std::string& suite) {
  const SuiteInfo* info = FindSuite(suite);
  if (info == nullptr) return "Reliability";
  std::string c = CanonicalCategory(info->category);
  return c.empty() ? "Reliability" : c;
}

std::string JudgeCategory(const std::string& suite) {
  const SuiteInfo* info = FindSuite(suite);
  if (info == nullptr || info->judge_category.empty()) return SuiteCategory(suite);
  std::string c = CanonicalCategory(info->judge_category);
  return c.empty() ? SuiteCategory(suite) : c;
}

std::string MeasurementCategory(const v1::Measurement& m, const std::string& record_suite) {
  if (const FleetMetric* fm = FindFleetMetric(m.metric())) return fm->category;
  return SuiteCategory(m.suite().empty() ? record_suite : m.suite());
}

std::string FindingCategory(const v1::Finding& f) {
  std::string c = CanonicalCategory(f.category());
  return c.empty() ? "Reliability" : c;
}

std::string OneLine(const std::string& text, size_t max_chars) {
  std::string line = text.substr(0, text.find('\n'));
  while (!line.empty() && (line.back() == ' ' || line.back() == '\r')) line.pop_back();
  if (line.size() <= max_chars) return line;
  // Cut at the last space that leaves a word whole, and never inside a
  // UTF-8 sequence.
  size_t cut = line.rfind(' ', max_chars);
  if (cut == std::string::npos || cut < max_chars / 2) {
    cut = max_chars;
    while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
  }
  line.resize(cut);
  while (!line.empty() && (line.back() == ' ' || line.back() == ',' || line.back() == ';' ||
                           line.back() == ':')) {
    line.pop_back();
  }
  return line + "\u2026";
}

std::string Headline(const v1::RuleResult& r) {
  return OneLine(r.title().empty() ? r.message() : r.title());
}

std::string TaskStateShown(const v1::TaskSummary& t) {
  if (t.state() == TaskStateName(v1::TASK_FAILED) && t.exit_code() == kCouldNotRunExit) {
    return "could not run";
  }
  return t.state();
}

bool TaskNotStarted(const v1::TaskInfo& t) {
  // Every attempt the scheduler assigns counts from 1 (Scheduler::Assign).
  return TaskCouldNotRun(t) && t.attempt() == 0;
}

bool TaskBlames(const v1::TaskInfo& t, const std::string& node) {
  if (t.blamed_nodes().empty()) return true;
  const auto blamed = SplitNodes(t.blamed_nodes());
  return std::find(blamed.begin(), blamed.end(), node) != blamed.end();
}

bool TaskStoppedOn(const v1::TaskInfo& t, const std::string& node) {
  return SplitNodes(t.node()).size() > 1 && (TaskBroke(t) || TaskCouldNotRun(t)) &&
         !TaskBlames(t, node);
}

std::string EntryLabel(const std::string& name, const std::string& suite) {
  if (name.empty() || name == suite) return suite;
  return absl::StrCat(name, " (", suite, ")");
}

std::string RecordNode(const v1::ExportedRecord& rec) {
  if (!rec.node().empty()) return rec.node();
  const v1::Record& r = rec.record();
  if (r.has_measurement()) return LabelValue(r.measurement().labels(), "node");
  if (r.has_finding()) return LabelValue(r.finding().labels(), "node");
  return "";
}

std::string DescribeSubject(const std::string& node, const v1::Measurement& m) {
  std::string out = node;
  auto add = [&](const char* prefix, const std::string& value, const char* suffix) {
    if (value.empty()) return;
    if (!out.empty()) out += " ";
    absl::StrAppend(&out, prefix, value, suffix);
  };
  add("gpu:", LabelValue(m, "gpu"), "");
  add("(", LabelValue(m, "uuid"), ")");
  add("to ", LabelValue(m, "peer"), "");
  return out.empty() ? "fleet" : out;
}

std::vector<std::string> SplitNodes(const std::string& nodes) {
  std::vector<std::string> out;
  for (absl::string_view piece : absl::StrSplit(nodes, ',')) {
    piece = absl::StripAsciiWhitespace(piece);
    if (!piece.empty()) out.emplace_back(piece);
  }
  return out;
}

std::string FormatNumber(double v) {
  char buf[64];
  double a = std::fabs(v);
  if (!std::isfinite(v)) {
    std::snprintf(buf, sizeof(buf), "%g", v);
  } else if (a < 1e15 && v == std::floor(v)) {
    std::snprintf(buf, sizeof(buf), "%.0f", v);
  } else if (a >= 100) {
    std::snprintf(buf, sizeof(buf), "%.1f", v);
  } else if (a >= 1) {
    std::snprintf(buf, sizeof(buf), "%.2f", v);
  } else {
    std::snprintf(buf, sizeof(buf), "%.3g", v);
  }
  return buf;
}

std::string FormatValue(double v, const std::string& unit) {
  return unit.empty() ? FormatNumber(v) : absl::StrCat(FormatNumber(v), " ", unit);
}

v1::RuleResult MakeRule(const std::string& rule_id, const std::string& category,
                        const std::string& outcome, const std::string& node,
                        const std::string& subject, const std::string& message) {
  v1::RuleResult r;
  r.set_rule_id(rule_id);
  r.set_category(category);
  r.set_outcome(outcome);
  r.set_node(node);
  r.set_subject(subject);
  if (!message.empty()) r.set_message(message);
  return r;
}

const v1::SuiteSpec* PlanEntryOf(const RunData& data, const v1::TaskInfo& task) {
  const int i = task.suite_index();
  return i >= 0 && i < data.plan.suites_size() ? &data.plan.suites(i) : nullptr;
}

bool IsSafeWebLink(const std::string& url) {
  size_t host = 0;
  if (absl::StartsWithIgnoreCase(url, "https://")) {
    host = 8;
  } else if (absl::StartsWithIgnoreCase(url, "http://")) {
    host = 7;
  } else {
    return false;
  }
  if (url.size() <= host || url[host] == '/') return false;
  for (char ch : url) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == 0x7f || std::string_view("\"'<>\\`").find(ch) != std::string_view::npos) {
      return false;
    }
  }
  return true;
}

std::string LabelValue(const google::protobuf::Map<std::string, std::string>& labels,
                       const std::string& key) {
  auto it = labels.find(key);
  return it == labels.end() ? "" : it->second;
}

std::string LabelValue(const v1::Measurement& m, const std::string& key) {
  return LabelValue(m.labels(), key);
}

}  // namespace cmax::reports
