#include "coordinator/ctl/progress.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "coordinator/scheduler.h"

namespace cmax::ctl {
namespace {

bool IsFailure(v1::TaskState s) {
  return s == v1::TASK_FAILED || s == v1::TASK_TIMED_OUT || s == v1::TASK_LOST;
}

std::string Label(const v1::TaskInfo& t) {
  return absl::StrCat(t.name().empty() ? t.suite() : t.name(), " #", t.suite_index());
}

std::string FirstLine(const std::string& s, size_t max) {
  std::string line = s.substr(0, s.find('\n'));
  if (line.size() > max) line = line.substr(0, max) + "...";
  return line;
}

}  // namespace

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
    if (t.state() != before && (IsFailure(t.state()) || !tty_)) {
      std::string line;
      if (IsFailure(t.state())) {
        line = absl::StrCat("FAIL ", t.node(), " ", t.suite(), ": ",
                            coordinator::TaskStateName(t.state()),
                            t.message().empty() ? "" : " — ", FirstLine(t.message(), 160));
        if (t.state() == v1::TASK_FAILED && !t.stderr_tail().empty()) {
          absl::StrAppend(&line, "\n     stderr: ", FirstLine(t.stderr_tail(), 160));
        }
      } else if (before != v1::TASK_STATE_UNSPECIFIED || coordinator::IsTerminal(t.state())) {
        line = absl::StrCat(t.suite(), " on ", t.node(), ": ",
                            coordinator::TaskStateName(t.state()));
        if (coordinator::IsTerminal(t.state())) {
          absl::StrAppend(&line, " (exit ", t.exit_code(), ", ", t.records(), " records)");
        }
      }
      if (!line.empty()) {
        if (tty_ && drawn_lines_ > 0) {
          absl::FPrintF(out_, "\x1b[%dA\x1b[J", drawn_lines_);
          drawn_lines_ = 0;
        }
        absl::FPrintF(out_, "%s\n", line);
      }
    }
  }
  if (ev.has_finding() && ev.finding().severity() >= v1::SEVERITY_FAIL) {
    if (tty_ && drawn_lines_ > 0) {
      absl::FPrintF(out_, "\x1b[%dA\x1b[J", drawn_lines_);
      drawn_lines_ = 0;
    }
    absl::FPrintF(out_, "%s %s %s: %s\n",
                  ev.finding().severity() == v1::SEVERITY_CRITICAL ? "CRITICAL" : "FAIL",
                  ev.node(), ev.finding().check_id(), ev.finding().title());
  }
  if (tty_) Redraw();
  std::fflush(out_);
}

void RunProgress::Redraw() {
  if (drawn_lines_ > 0) absl::FPrintF(out_, "\x1b[%dA\x1b[J", drawn_lines_);
  drawn_lines_ = 0;
  for (const auto& label : suite_order_) {
    int total = 0, done = 0, failed = 0, running = 0;
    for (const auto& [id, t] : tasks_) {
      if (Label(t) != label) continue;
      ++total;
      if (coordinator::IsTerminal(t.state())) ++done;
      if (IsFailure(t.state())) ++failed;
      if (t.state() == v1::TASK_RUNNING || t.state() == v1::TASK_ASSIGNED) ++running;
    }
    const int width = 24;
    int filled = total ? done * width / total : 0;
    absl::FPrintF(out_, "  %-24s [%s%s] %d/%d%s%s\n", label.substr(0, 24),
                  std::string(filled, '#'), std::string(width - filled, '.'), done, total,
                  running ? absl::StrCat(", ", running, " running") : "",
                  failed ? absl::StrCat(", ", failed, " failed") : "");
    ++drawn_lines_;
  }
}

int RunProgress::Finish(bool ended) {
  if (tty_) Redraw();
  const std::string& state = run_.state();
  if (!ended || (state != "completed" && state != "cancelled")) {
    absl::FPrintF(out_, "run %s did not finish (state %s): the connection to the coordinator "
                        "was lost; `cmaxctl watch %s` to follow it again\n",
                  run_.run_id(), state.empty() ? "unknown" : state, run_.run_id());
    return 3;
  }
  absl::FPrintF(out_, "run %s %s: tier %s; %d/%d tasks ended, %d failed; %d node%s failed\n",
                run_.run_id(), state, run_.tier().empty() ? "not rated" : run_.tier(),
                run_.tasks_done(), run_.tasks_total(), run_.tasks_failed(),
                run_.nodes_failed(), run_.nodes_failed() == 1 ? "" : "s");
  if (!run_.report_dir().empty()) {
    absl::FPrintF(out_, "scorecard: %s/scorecard.html (also .md, .json)\n", run_.report_dir());
  }
  std::fflush(out_);
  if (state == "cancelled") return 3;
  return run_.tasks_failed() > 0 || run_.nodes_failed() > 0 ? 1 : 0;
}

}  // namespace cmax::ctl
