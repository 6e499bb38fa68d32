#include "coordinator/ctl/progress.h"

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/strings/strip.h"
#include "common/plural.h"
#include "common/severity.h"
#include "common/task_state.h"
#include "common/time_util.h"

namespace cmax::ctl {
namespace {

std::string Label(const v1::TaskInfo& t) {
  return absl::StrCat(t.name().empty() ? t.suite() : t.name(), " #", t.suite_index());
}

std::string FirstLine(const std::string& s, size_t max) {
  std::string line = s.substr(0, s.find('\n'));
  if (line.size() > max) line = line.substr(0, max) + "...";
  return line;
}

}  // namespace

std::string SubmittedLine(const std::string& run_id, const std::string& plan, int tasks,
                          int nodes) {
  return absl::StrCat("run ", run_id, ": plan '", plan, "', ", Counted(tasks, "task", "tasks"),
                      " on ", Counted(nodes, "node", "nodes"));
}

bool IsNotRated(const std::string& tier) {
  return tier.empty() || absl::EqualsIgnoreCase(tier, "not rated");
}

bool NothingMeasured(const TaskCounts& c) {
  return c.total > 0 && c.completed == 0 && c.failed == 0 &&
         c.could_not_run + c.cancelled == c.total;
}

int RunExitCode(const v1::RunInfo& run, const TaskCounts& counts, bool ended) {
  if (!ended || run.state() != "completed") return kExitUnfinished;
  // RunInfo.tasks_failed counts exit-2 tasks too; the counts here do not.
  if (counts.failed > 0 || run.nodes_failed() > 0) return kExitFailed;
  if (NothingMeasured(counts)) return kExitNothingMeasured;
  if (IsNotRated(run.tier())) return kExitNotRated;
  return kExitOk;
}

std::string NothingMeasuredLine(const std::vector<v1::TaskInfo>& tasks) {
  const TaskCounts c = CountTasks(tasks);
  std::string what;
  if (c.cancelled == 0) {
    what = "could not run";
  } else if (c.could_not_run == 0) {
    what = c.total == 1 ? "was cancelled" : "were cancelled";
  } else {
    what = absl::StrCat("could not run or were cancelled (", c.cancelled, " cancelled)");
  }
  std::string line = absl::StrCat("cmaxctl: NOTHING WAS MEASURED: ",
                                  c.total == 1 ? "the only task" : absl::StrCat("all ", c.total, " tasks"),
                                  " ", what);
  for (const auto& t : tasks) {
    if (!TaskCouldNotRun(t)) continue;
    // The agent's message starts "could not run: "; the line says that already.
    std::string reason(absl::StripPrefix(FirstLine(t.message(), 240), "could not run: "));
    absl::StrAppend(&line, "; first reason: ", reason.empty() ? "(no message)" : reason,
                    " (node ", t.node(), ", suite ", t.suite(), ")");
    break;
  }
  return line;
}

std::string SummaryLine(const v1::RunInfo& run, const TaskCounts& c) {
  std::string line = absl::StrCat(
      "run ", run.run_id(), " ", run.state(), ": ",
      IsNotRated(run.tier()) ? "not rated" : absl::StrCat("tier ", run.tier()), "; ", c.ended,
      "/", c.total, " tasks ended: ", TaskCountsText(c), "; ",
      Counted(run.nodes_failed(), "node", "nodes"), " failed");
  return line;
}

void RunProgress::OnEvent(const v1::RunEvent& ev) {
  if (ev.has_run()) run_ = ev.run();
  if (ev.has_task()) {
    const v1::TaskInfo& t = ev.task();
    std::string label = Label(t);
    if (std::find(suite_order_.begin(), suite_order_.end(), label) == suite_order_.end()) {
      suite_order_.push_back(label);
    }
    auto it = tasks_.find(t.task_id());
    v1::TaskState before = it == tasks_.end() ? v1::TASK_STATE_UNSPECIFIED : it->second.state();
    tasks_[t.task_id()] = t;
    if (t.state() != before && (IsFailedState(t.state()) || !tty_)) {
      std::string line;
      if (TaskCouldNotRun(t)) {
        line = absl::StrCat("COULD NOT RUN ", t.node(), " ", t.suite(),
                            t.message().empty() ? "" : " — ", FirstLine(t.message(), 160));
      } else if (TaskBroke(t)) {
        line = absl::StrCat("FAIL ", t.node(), " ", t.suite(), ": ",
                            TaskStateName(t.state()),
                            t.message().empty() ? "" : " — ", FirstLine(t.message(), 160));
        if (t.state() == v1::TASK_FAILED && !t.stderr_tail().empty()) {
          absl::StrAppend(&line, "\n     stderr: ", FirstLine(t.stderr_tail(), 160));
        }
      } else if (before != v1::TASK_STATE_UNSPECIFIED || t.state() != v1::TASK_PENDING) {
        // Only a task first seen pending goes unsaid (every task starts so);
        // one first seen assigned or running (the follower subscribed after
        // it started: a restart, a reconnect) is said, or its start is lost.
        line = absl::StrCat(t.suite(), " on ", t.node(), ": ",
                            TaskStateName(t.state()));
        if (IsTerminal(t.state())) {
          absl::StrAppend(&line, " (exit ", t.exit_code(), ", ",
                          Counted(t.records(), "record", "records"), ")");
        }
      }
      if (!line.empty()) {
        if (tty_ && drawn_lines_ > 0) {
          absl::FPrintF(out_, "\x1b[%dA\x1b[J", drawn_lines_);
          drawn_lines_ = 0;
        }
        absl::FPrintF(out_, "%s\n", ForTerminal(line));
      }
    }
  }
  if (ev.has_finding() && ev.finding().severity() >= v1::SEVERITY_FAIL) {
    if (tty_ && drawn_lines_ > 0) {
      absl::FPrintF(out_, "\x1b[%dA\x1b[J", drawn_lines_);
      drawn_lines_ = 0;
    }
    absl::FPrintF(out_, "%s %s %s: %s\n",
                  absl::AsciiStrToUpper(SeverityName(ev.finding().severity())),
                  ForTerminal(ev.node()), ForTerminal(ev.finding().check_id()),
                  ForTerminal(ev.finding().title()));
  }
  if (tty_) Redraw();
  std::fflush(out_);
}

void RunProgress::Redraw() {
  if (drawn_lines_ > 0) absl::FPrintF(out_, "\x1b[%dA\x1b[J", drawn_lines_);
  drawn_lines_ = 0;
  for (const auto& label : suite_order_) {
    int total = 0, done = 0, failed = 0, could_not_run = 0, running = 0;
    for (const auto& [id, t] : tasks_) {
      if (Label(t) != label) continue;
      ++total;
      if (IsTerminal(t.state())) ++done;
      could_not_run += TaskCouldNotRun(t);
      failed += TaskBroke(t);
      if (t.state() == v1::TASK_RUNNING || t.state() == v1::TASK_ASSIGNED) ++running;
    }
    const int width = 24;
    int filled = total ? done * width / total : 0;
    absl::FPrintF(out_, "  %-24s [%s%s] %d/%d%s%s%s\n", label.substr(0, 24),
                  std::string(filled, '#'), std::string(width - filled, '.'), done, total,
                  running ? absl::StrCat(", ", running, " running") : "",
                  failed ? absl::StrCat(", ", failed, " failed") : "",
                  could_not_run ? absl::StrCat(", ", could_not_run, " could not run") : "");
    ++drawn_lines_;
  }
}

int RunProgress::Finish(bool ended, const v1::GetRunResponse* final) {
  if (tty_) Redraw();
  std::vector<v1::TaskInfo> tasks;
  if (final != nullptr && final->has_run()) {
    run_ = final->run();
    tasks.assign(final->tasks().begin(), final->tasks().end());
  } else {
    for (const auto& [id, t] : tasks_) tasks.push_back(t);
  }
  const std::string& state = run_.state();
  if (!ended || (state != "completed" && state != "cancelled")) {
    absl::FPrintF(out_, "run %s did not finish (state %s): the connection to the coordinator "
                        "was lost; `cmaxctl watch %s` to follow it again\n",
                  run_.run_id(), state.empty() ? "unknown" : state, run_.run_id());
    return kExitUnfinished;
  }
  const TaskCounts counts = CountTasks(tasks);
  absl::FPrintF(out_, "%s\n", SummaryLine(run_, counts));
  if (!run_.report_dir().empty()) {
    absl::FPrintF(out_, "scorecard: %s/scorecard.html (also .md, .json, .xml)\n", run_.report_dir());
  }
  std::fflush(out_);
  const int code = RunExitCode(run_, counts, ended);
  if (code == kExitNothingMeasured) {
    absl::FPrintF(err_, "%s\n", ForTerminal(NothingMeasuredLine(tasks)));
    std::fflush(err_);
  }
  return code;
}

std::string ForTerminal(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
      absl::StrAppendFormat(&out, "\\x%02x", c);
    } else if (c == 0xc2 && i + 1 < text.size() &&
               static_cast<unsigned char>(text[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(text[i + 1]) <= 0x9f) {
      absl::StrAppendFormat(&out, "\\u%04x", static_cast<unsigned char>(text[i + 1]));
      ++i;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

std::string ForTerminalJson(std::string_view json) {
  std::string out;
  out.reserve(json.size());
  for (size_t i = 0; i < json.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(json[i]);
    if ((c < 0x20 && c != '\n' && c != '\t') || c == 0x7f) {
      absl::StrAppendFormat(&out, "\\u%04x", c);
    } else if (c == 0xc2 && i + 1 < json.size() &&
               static_cast<unsigned char>(json[i + 1]) >= 0x80 &&
               static_cast<unsigned char>(json[i + 1]) <= 0x9f) {
      absl::StrAppendFormat(&out, "\\u%04x", static_cast<unsigned char>(json[i + 1]));
      ++i;
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

std::string WholeSecondsTime(int64_t unix_ns) {
  if (unix_ns <= 0) return "-";
  std::string t = FormatRfc3339(unix_ns);
  if (size_t dot = t.find('.'); dot != std::string::npos) t = t.substr(0, dot) + "Z";
  return t;
}

}  // namespace cmax::ctl
