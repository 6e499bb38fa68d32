// The HTML pages and JSON answers of the web view (coordinator/web/web_server.h),
// as pure functions of the data the core hands out: testable without a
// server. Every page is self-contained (inline style and script, no external
// resource) and escapes every text that comes from data.
#ifndef CMAX_COORDINATOR_WEB_PAGES_H_
#define CMAX_COORDINATOR_WEB_PAGES_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "cmax/v1/history.pb.h"
#include "cmax/v1/service.pb.h"

namespace cmax::coordinator::web {

// &, <, >, " and ' as entities: safe in text and in quoted attributes.
std::string HtmlEscape(absl::string_view text);
// "2026-12-07 19:09:01 UTC"; "" for a time not set (<= 0).
std::string FormatTime(int64_t unix_ns);

// What every page's frame needs.
struct PageContext {
  bool signed_in = false;  // show "sign out" (a session cookie was used)
};

// Progress of one plan entry (suite_index) of a run.
struct EntryProgress {
  int suite_index = 0;
  std::string suite, name;
  int total = 0, pending = 0, running = 0, done = 0, failed = 0, cancelled = 0;
  int found_failures = 0;  // completed with exit 1: ran and found failures
  int could_not_run = 0;   // TASK_FAILED with exit 2: measured nothing, failed nothing
};

// A task that failed (failed, timed out, lost), ran and found failures
// (exit 1), or could not run (exit 2: listed apart, never as a failure).
struct TaskFailure {
  std::string task_id, suite, name, node, state, message, stderr_tail, blamed_nodes;
  int exit_code = 0, attempt = 0;
  int64_t finished_unix_ns = 0;
};

// A run page lists at most this many failures (the latest).
inline constexpr int kMaxFailuresShown = 200;

struct RunProgress {
  v1::RunInfo run;
  std::vector<EntryProgress> entries;  // by suite_index
  std::vector<TaskFailure> failures;   // by finish time, the latest kMaxFailuresShown
  int failures_total = 0;              // all of them
  std::vector<TaskFailure> not_run;    // could not run (why: message, stderr), as above
  int total = 0, pending = 0, running = 0, done = 0, failed = 0, cancelled = 0;
  int could_not_run = 0;    // not in `failed`, never called a failure
  bool final = false;       // completed, cancelled or failed: nothing changes any more
  std::string fingerprint;  // changes whenever anything shown changes
};

RunProgress Summarize(const v1::GetRunResponse& run);

// "/": the agents with their states and the latest runs.
std::string IndexPage(const v1::ListAgentsResponse& agents,
                      const v1::ListRunsResponse& runs, int64_t now_unix_ns,
                      const PageContext& ctx);
// "/runs/ID": the state at load; a script then follows /api/runs/ID.
std::string RunPage(const RunProgress& progress, bool has_scorecard,
                    const PageContext& ctx);
// "/api/runs/ID": what the run page's script reads.
std::string RunJson(const RunProgress& progress, bool has_scorecard);
// The run page's inline script, byte for byte as RunPage embeds it (the
// Content-Security-Policy names its hash).
absl::string_view RunPageScript();
// The sign-in form; `next` is where it returns (a path of this server).
std::string LoginPage(absl::string_view next, absl::string_view message, int status);
// The page after a good sign-in: it goes on to `next` (see web_server.cc for why
// a page and not a redirect).
std::string SignedInPage(absl::string_view next);
std::string ErrorPage(int status, absl::string_view message, const PageContext& ctx);
// "/nodes/NAME": verdicts over time, reasons (first, last, repeat
// offenders), a chart per figure (the node's values, its trend, the
// fleet's p10-p90 band) and incidents. "/fleet": nodes by state, open
// incidents, time to repair, failures per 1,000 GPU-hours by week (a chart)
// and the reasons that recur most (docs/history.md). `remediation_section`
// (remediation_section.h, already escaped) follows the node's state.
std::string NodeHistoryPage(const v1::NodeHistory& history, const PageContext& ctx,
                            absl::string_view remediation_section = "");
std::string FleetPage(const v1::ReliabilitySummary& fleet, const PageContext& ctx);

// Whether `next` is a path of this server that a sign-in may return to:
// starts with one '/', and only URL-safe characters.
bool IsLocalPath(absl::string_view next);

}  // namespace cmax::coordinator::web

#endif  // CMAX_COORDINATOR_WEB_PAGES_H_
