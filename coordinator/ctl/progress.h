// Live progress of a run for `cmaxctl run` and `cmaxctl watch`: a bar per
// suite (tasks ended / total), failures as they happen, a summary at the end.
// On a terminal the bars are redrawn in place; otherwise one line per change.
#ifndef CMAX_COORDINATOR_CTL_PROGRESS_H_
#define CMAX_COORDINATOR_CTL_PROGRESS_H_

#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "cmax/v1/service.pb.h"
#include "common/task_state.h"

namespace cmax::ctl {

// Exit codes of `cmaxctl run` and `cmaxctl watch` (README, "Exit codes"),
// the first that applies:
//   2 usage or plan error (before the run exists);
//   3 the run could not finish (cancelled, coordinator gone);
//   1 a task crashed, hung or was lost, or a node's verdict is fail (a fact
//     to act on, rated or not);
//   5 nothing was measured: no task completed or failed, every task could
//     not run (or was cancelled);
//   4 it completed without failures but its scorecard is not rated;
//   0 otherwise.
// A task that could not run (exit code 2: a missing binary, GPU or tool) is
// not a failure here: when some task did run, the scorecard's tier and
// coverage say what the others left unmeasured; when none did, 5.
inline constexpr int kExitOk = 0, kExitFailed = 1, kExitUsage = 2, kExitUnfinished = 3,
                     kExitNotRated = 4, kExitNothingMeasured = 5;
// Every command: the coordinator refused the credentials (no token, a wrong
// one, or a role without this call). Not 2: a script must tell "fix the
// plan" from "fix the token".
inline constexpr int kExitCredentials = 6;

// The tasks of a run by outcome (common/task_state.h: the coordinator's log
// counts them the same way).
using ::cmax::CountTasks;
using ::cmax::TaskCounts;

// "run R: plan 'quick', 2 tasks on 1 node": what `cmaxctl run` prints once
// the run is submitted.
std::string SubmittedLine(const std::string& run_id, const std::string& plan, int tasks,
                          int nodes);

// True when `tier` says the scorecard gives no tier ("not rated", or none).
bool IsNotRated(const std::string& tier);

// True when the run has tasks and none completed or failed: each could not
// run or was cancelled.
bool NothingMeasured(const TaskCounts& counts);

// The exit code for a run in its final state (see above). `ended`: the
// stream ended normally (false: the connection to the coordinator broke).
int RunExitCode(const v1::RunInfo& run, const TaskCounts& counts, bool ended);

// For exit code 5, the loud line for stderr: "cmaxctl: NOTHING WAS
// MEASURED: all 3 tasks could not run; first reason: could not start
// /usr/local/bin/cmax-bench: No such file or directory (node n1, suite
// gemm)"; "could not run or were cancelled (1
// cancelled)" when some were cancelled. The first reason is the message of
// the first task in `tasks` that could not run, less its "could not run: ".
std::string NothingMeasuredLine(const std::vector<v1::TaskInfo>& tasks);

// "run R completed: not rated; 36/36 tasks ended: 13 completed, 23 could
// not run, 0 failed; 0 nodes failed" (", N cancelled" when some were).
std::string SummaryLine(const v1::RunInfo& run, const TaskCounts& counts);

// Text that came from agents and records (task messages, stderr tails,
// finding titles, GPU models, scorecards) made safe to print on a terminal:
// every C0 control but newline and tab, DEL, and every C1 control (UTF-8
// U+0080..U+009F) is written as a visible escape ("\x1b", "\u009b"), so an
// agent cannot set the window title, move the cursor, recolour or erase
// lines (and hide a FAIL). Valid UTF-8 text is otherwise left as it is.
std::string ForTerminal(std::string_view text);

// A Unix time as RFC 3339 in whole seconds ("2026-11-29T21:17:45Z"), what
// the schedule and remediation listings show; "-" for 0 or less.
std::string WholeSecondsTime(int64_t unix_ns);

// The same for JSON that cmaxctl prints (--json): the same characters are
// written as JSON escapes ("\u001b", "\u009b"), so the output still parses
// as the same JSON. Newline and tab stay (whitespace between tokens; inside
// strings the JSON printer escapes them already).
std::string ForTerminalJson(std::string_view json);

class RunProgress {
 public:
  // Progress and the summary go to `out`; NothingMeasuredLine to `err`.
  RunProgress(FILE* out, bool tty, FILE* err = stderr) : out_(out), err_(err), tty_(tty) {}
  void OnEvent(const v1::RunEvent& event);
  // Prints the summary (and, for exit code 5, NothingMeasuredLine to `err`)
  // and returns RunExitCode. `final` (GetRun's answer after the stream
  // ended), when given, replaces what the events said.
  int Finish(bool ended, const v1::GetRunResponse* final = nullptr);
  const v1::RunInfo& run() const { return run_; }

 private:
  void Redraw();
  v1::RunInfo run_;
  std::map<std::string, v1::TaskInfo> tasks_;  // by task id
  std::vector<std::string> suite_order_;
  FILE* out_;
  FILE* err_;
  bool tty_;
  int drawn_lines_ = 0;
};

}  // namespace cmax::ctl

#endif  // CMAX_COORDINATOR_CTL_PROGRESS_H_
