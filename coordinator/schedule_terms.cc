#include "coordinator/schedule_terms.h"

#include <algorithm>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/plan_parser.h"
#include "common/status_macros.h"
#include "coordinator/registry.h"
#include "re2/re2.h"

namespace cmax::coordinator {
namespace {

constexpr int64_t kMaxEveryDays = 365;
constexpr int kMaxNodesAtOnce = 100000;
constexpr char kRegexPrefix[] = "regex:";

// "HH:MM" -> minutes after midnight; -1 when it is not one.
int ParseClock(const std::string& s) {
  if (s.size() != 5 || s[2] != ':') return -1;
  int h, m;
  if (!absl::SimpleAtoi(s.substr(0, 2), &h) || !absl::SimpleAtoi(s.substr(3, 2), &m)) return -1;
  if (!absl::ascii_isdigit(s[0]) || !absl::ascii_isdigit(s[3])) return -1;  // no "+1:00"
  if (h < 0 || h > 23 || m < 0 || m > 59) return -1;
  return h * 60 + m;
}

int64_t FloorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

}  // namespace

absl::StatusOr<int64_t> ParseDuration(const std::string& text, const std::string& option,
                                      const std::string& examples, int64_t max_days) {
  const std::string err =
      absl::StrCat(option, " '", text, "' must be a whole number with a unit, s, m, h or d (",
                   examples, "), from 1s to ", max_days, "d");
  if (text.size() < 2) return absl::InvalidArgumentError(err);
  int64_t unit;
  switch (text.back()) {
    case 's': unit = 1; break;
    case 'm': unit = 60; break;
    case 'h': unit = 3600; break;
    case 'd': unit = 86400; break;
    default: return absl::InvalidArgumentError(err);
  }
  const std::string digits = text.substr(0, text.size() - 1);
  int64_t v;
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return absl::ascii_isdigit(c); }) ||
      !absl::SimpleAtoi(digits, &v) || v <= 0 || v > max_days * 86400 / unit) {
    return absl::InvalidArgumentError(err);
  }
  return v * unit * kNsPerSecond;
}

absl::StatusOr<int64_t> ParseEvery(const std::string& text) {
  return ParseDuration(text, "--every", "30s, 15m, 6h, 7d", kMaxEveryDays);
}

absl::StatusOr<DailyWindow> ParseWindow(const std::string& text) {
  const std::string err = absl::StrCat(
      "--window '", text, "' must be HH:MM-HH:MM in UTC (e.g. 02:00-06:00, or 22:00-04:00 "
      "across midnight), start and end different");
  std::vector<std::string> parts = absl::StrSplit(text, '-');
  if (parts.size() != 2) return absl::InvalidArgumentError(err);
  DailyWindow w{ParseClock(parts[0]), ParseClock(parts[1])};
  if (w.start_minute < 0 || w.end_minute < 0 || w.start_minute == w.end_minute) {
    return absl::InvalidArgumentError(err);
  }
  return w;
}

absl::StatusOr<v1::NodeSelector> ParseNodeSelector(const std::string& text) {
  v1::NodeSelector sel;
  if (text.empty() || text == "all") {
    sel.set_all(true);
    return sel;
  }
  if (absl::StartsWith(text, kRegexPrefix)) {
    const std::string re_text = text.substr(sizeof(kRegexPrefix) - 1);
    RE2 re(re_text, RE2::Quiet);
    if (re_text.empty() || !re.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--nodes '", text, "': not a regular expression (RE2)",
          re_text.empty() ? "" : absl::StrCat(": ", re.error())));
    }
    sel.set_name_regex(re_text);
    return sel;
  }
  std::set<std::string> seen;
  const std::vector<std::string> names = absl::StrSplit(text, ',');
  for (const std::string& name : names) {
    if (!IsValidNodeName(name)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--nodes '", text, "': '", name,
          "' is not a node name (1-64 of A-Z a-z 0-9 _ . -); give 'all', NAME,NAME... or "
          "regex:RE"));
    }
    if (seen.insert(name).second) sel.add_names(name);
  }
  return sel;
}

absl::StatusOr<ScheduleTerms> ParseScheduleSpec(const v1::ScheduleSpec& spec) {
  if (!spec.has_plan()) return absl::InvalidArgumentError("the schedule has no plan");
  if (auto st = ValidatePlan(spec.plan()); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("the plan: ", st.message()));
  }
  ScheduleTerms terms;
  CMAX_ASSIGN_OR_RETURN(terms.every_ns, ParseEvery(spec.every()));
  CMAX_ASSIGN_OR_RETURN(terms.nodes, ParseNodeSelector(spec.nodes()));
  if (!spec.window().empty()) {
    CMAX_ASSIGN_OR_RETURN(terms.window, ParseWindow(spec.window()));
    terms.has_window = true;
  }
  if (spec.max_nodes_at_once() < 0 || spec.max_nodes_at_once() > kMaxNodesAtOnce) {
    return absl::InvalidArgumentError(
        absl::StrCat("--max-nodes-at-once ", spec.max_nodes_at_once(), " must be in [1, ",
                     kMaxNodesAtOnce, "] (0 or absent: all at once)"));
  }
  terms.max_nodes_at_once = spec.max_nodes_at_once();
  terms.only_idle = spec.only_idle();
  return terms;
}

bool InWindow(const DailyWindow& w, int64_t unix_ns) {
  const int minute = static_cast<int>((unix_ns - FloorDiv(unix_ns, kDayNs) * kDayNs) / kMinuteNs);
  if (w.start_minute < w.end_minute) return minute >= w.start_minute && minute < w.end_minute;
  return minute >= w.start_minute || minute < w.end_minute;  // wraps past midnight
}

int64_t NextInWindow(const DailyWindow& w, int64_t unix_ns) {
  if (InWindow(w, unix_ns)) return unix_ns;
  // Outside: the next opening is today's start, or tomorrow's.
  const int64_t day = FloorDiv(unix_ns, kDayNs) * kDayNs;
  int64_t open = day + w.start_minute * kMinuteNs;
  if (open <= unix_ns) open += kDayNs;
  return open;
}

int64_t NextSlotAfter(int64_t anchor_ns, int64_t every_ns, int64_t unix_ns) {
  if (unix_ns < anchor_ns) return anchor_ns + every_ns;
  return anchor_ns + (FloorDiv(unix_ns - anchor_ns, every_ns) + 1) * every_ns;
}

int64_t StartOfSlot(const ScheduleTerms& terms, int64_t slot_ns) {
  return terms.has_window ? NextInWindow(terms.window, slot_ns) : slot_ns;
}

std::vector<std::string> SelectScheduleNodes(const v1::NodeSelector& selector,
                                             const std::vector<std::string>& connected,
                                             std::vector<std::string>* missing) {
  std::vector<std::string> out;
  std::set<std::string> up(connected.begin(), connected.end());
  if (!selector.names().empty()) {
    for (const auto& n : selector.names()) {
      if (up.count(n)) {
        out.push_back(n);
      } else if (missing) {
        missing->push_back(n);
      }
    }
  } else if (!selector.name_regex().empty()) {
    RE2 re(selector.name_regex(), RE2::Quiet);
    for (const auto& n : up) {
      if (re.ok() && RE2::FullMatch(n, re)) out.push_back(n);
    }
  } else {
    out.assign(up.begin(), up.end());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace cmax::coordinator
