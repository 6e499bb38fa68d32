#include "coordinator/web/pages.h"

#include <algorithm>
#include <functional>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/task_state.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "reports/judge_util.h"
#include "reports/svg.h"

namespace cmax::coordinator::web {
namespace {

// Shared by every page: readable on screen and on paper, no external resource.
constexpr absl::string_view kStyle = R"css(
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222;max-width:80em}
h1{font-size:1.4em;margin:.2em 0 .5em}h2{font-size:1.15em;margin:1.2em 0 .4em}
table{border-collapse:collapse;margin:.3em 0 1em}
th,td{border:1px solid #ccc;padding:.2em .5em;text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{background:#f3f3f3}td.n{text-align:right;font-variant-numeric:tabular-nums}
nav{margin-bottom:1em;display:flex;gap:1em;align-items:center}nav form{margin:0}
.state-running,.state-busy{color:#0b5cad}.state-completed,.state-connected{color:#17722c}
.state-failed,.state-lost,.state-timed_out{color:#b3261e;font-weight:bold}
.state-cancelled,.state-disconnected{color:#777}
pre{white-space:pre-wrap;margin:0;font-size:12px;max-height:12em;overflow:auto}
.muted{color:#666}.err{color:#b3261e}
@media print{nav,#live{display:none}}
)css";

std::string Head(absl::string_view title, absl::string_view extra_head = "") {
  return absl::StrCat(
      "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
      "<meta name=\"viewport\" content=\"width=device-width\">"
      "<link rel=\"icon\" href=\"data:,\">",
      extra_head, "<title>", HtmlEscape(title), "</title><style>", kStyle,
      "</style></head>\n");
}

std::string Nav(const PageContext& ctx) {
  std::string out =
      "<nav><a href=\"/\">Agents and runs</a><a href=\"/fleet\">Fleet history</a>";
  if (ctx.signed_in) {
    absl::StrAppend(&out,
                    "<form method=\"post\" action=\"/logout\">"
                    "<button type=\"submit\">Sign out</button></form>");
  }
  absl::StrAppend(&out, "</nav>\n");
  return out;
}

std::string StateCell(absl::string_view state) {
  std::string cls(state);
  std::replace(cls.begin(), cls.end(), ' ', '_');
  return absl::StrCat("<td class=\"state-", HtmlEscape(cls), "\">", HtmlEscape(state),
                      "</td>");
}

std::string Num(int64_t n) { return absl::StrCat("<td class=\"n\">", n, "</td>"); }

google::protobuf::Value Str(absl::string_view s) {
  google::protobuf::Value v;
  v.set_string_value(std::string(s));
  return v;
}
google::protobuf::Value Number(double n) {
  google::protobuf::Value v;
  v.set_number_value(n);
  return v;
}
google::protobuf::Value Bool(bool b) {
  google::protobuf::Value v;
  v.set_bool_value(b);
  return v;
}

}  // namespace

// One escaper for every page cmax writes (reports/svg.h); Debian's Abseil
// string_view is not std::string_view, hence the conversion.
std::string HtmlEscape(absl::string_view text) {
  return reports::HtmlEscape(std::string_view(text.data(), text.size()));
}

std::string FormatTime(int64_t unix_ns) {
  if (unix_ns <= 0) return "";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S UTC", absl::FromUnixNanos(unix_ns),
                          absl::UTCTimeZone());
}

bool IsLocalPath(absl::string_view next) {
  if (next.empty() || next.front() != '/' || next.size() > 512) return false;
  if (next.size() > 1 && (next[1] == '/' || next[1] == '\\')) return false;  // //host
  for (char c : next) {
    const bool ok = isalnum(static_cast<unsigned char>(c)) || c == '/' || c == '-' ||
                    c == '_' || c == '.' || c == '?' || c == '=' || c == '&' || c == '%';
    if (!ok) return false;
  }
  return true;
}

RunProgress Summarize(const v1::GetRunResponse& run) {
  RunProgress p;
  p.run = run.run();
  p.final = p.run.state() == "completed" || p.run.state() == "cancelled" ||
            p.run.state() == "failed";
  std::map<int, EntryProgress> entries;
  std::string print = absl::StrCat(p.run.state(), "|", p.run.tier(), "|",
                                   p.run.report_dir(), "|", p.run.message());
  for (const v1::TaskInfo& t : run.tasks()) {
    EntryProgress& e = entries[t.suite_index()];
    e.suite_index = t.suite_index();
    e.suite = t.suite();
    if (e.name.empty()) e.name = t.name();
    ++e.total;
    ++p.total;
    absl::StrAppend(&print, "|", t.task_id(), ":", t.state(), ":", t.attempt(), ":",
                    t.exit_code());
    bool failure = false, not_run = false;
    switch (t.state()) {
      case v1::TASK_PENDING:
        ++e.pending;
        ++p.pending;
        break;
      case v1::TASK_ASSIGNED:
      case v1::TASK_RUNNING:
        ++e.running;
        ++p.running;
        break;
      case v1::TASK_COMPLETED:
        ++e.done;
        ++p.done;
        if (t.exit_code() == 1) {
          ++e.found_failures;
          failure = true;
        }
        break;
      case v1::TASK_FAILED:
        if (TaskCouldNotRun(t)) {  // the scorecard says why, as not measured
          ++e.could_not_run;
          ++p.could_not_run;
          not_run = true;
          break;
        }
        [[fallthrough]];
      case v1::TASK_TIMED_OUT:
      case v1::TASK_LOST:
        ++e.failed;
        ++p.failed;
        failure = true;
        break;
      case v1::TASK_CANCELLED:
        ++e.cancelled;
        ++p.cancelled;
        break;
      default:
        break;
    }
    if (failure || not_run) {
      TaskFailure f;
      f.task_id = t.task_id();
      f.suite = t.suite();
      f.name = t.name();
      f.node = t.node();
      f.state = t.state() == v1::TASK_COMPLETED ? "found failures"
                : not_run                         ? "could not run"
                                                  : TaskStateName(t.state());
      f.message = t.message();
      f.stderr_tail = t.stderr_tail();
      f.blamed_nodes = t.blamed_nodes();
      f.exit_code = t.exit_code();
      f.attempt = t.attempt();
      f.finished_unix_ns = t.finished_unix_ns();
      (not_run ? p.not_run : p.failures).push_back(std::move(f));
    }
  }
  for (auto& [index, e] : entries) p.entries.push_back(std::move(e));
  p.failures_total = static_cast<int>(p.failures.size());
  for (auto* list : {&p.failures, &p.not_run}) {
    std::stable_sort(list->begin(), list->end(), [](const TaskFailure& a, const TaskFailure& b) {
      return a.finished_unix_ns < b.finished_unix_ns;
    });
    if (list->size() > kMaxFailuresShown) {
      list->erase(list->begin(), list->end() - kMaxFailuresShown);
    }
  }
  p.fingerprint = absl::StrFormat("%016x", std::hash<std::string>{}(print));
  return p;
}

std::string IndexPage(const v1::ListAgentsResponse& agents,
                      const v1::ListRunsResponse& runs, int64_t now_unix_ns,
                      const PageContext& ctx) {
  std::string out = Head("cmax: agents and runs");
  absl::StrAppend(&out, "<body>", Nav(ctx), "<h1>cmax coordinator</h1>\n");
  absl::StrAppend(&out, "<h2 id=\"agents\">Agents (", agents.agents_size(), ")</h2>\n");
  if (agents.agents_size() == 0) {
    absl::StrAppend(&out, "<p class=\"muted\">No agent has connected.</p>\n");
  } else {
    absl::StrAppend(&out,
                    "<table id=\"agent-table\"><thead><tr><th>node</th><th>state</th>"
                    "<th>running task</th><th>last heard</th><th>RTT ms</th>"
                    "<th>GPUs</th><th>CPU cores</th><th>memory GiB</th><th>addresses</th>"
                    "</tr></thead><tbody>\n");
    for (const auto& a : agents.agents()) {
      std::string heard = "never";
      if (a.last_heartbeat_unix_ns() > 0) {
        heard = absl::StrFormat(
            "%.1f s ago",
            std::max<int64_t>(0, now_unix_ns - a.last_heartbeat_unix_ns()) / 1e9);
      }
      const auto& inv = a.inventory();
      std::string gpus =
          inv.gpu_count() > 0 ? absl::StrCat(inv.gpu_count(), " ", inv.gpu_model()) : "0";
      absl::StrAppend(
          &out, "<tr><td><a href=\"/nodes/", HtmlEscape(a.node_name()), "\">",
          HtmlEscape(a.node_name()), "</a></td>", StateCell(a.state()), "<td>",
          HtmlEscape(a.running_task()), "</td><td>", HtmlEscape(heard),
          "</td><td class=\"n\">",
          a.rtt_ms() < 0 ? std::string("") : absl::StrFormat("%.2f", a.rtt_ms()),
          "</td><td>", HtmlEscape(gpus), "</td>", Num(inv.cpu_cores()),
          "<td class=\"n\">", absl::StrFormat("%.1f", inv.memory_gib()), "</td><td>",
          HtmlEscape(absl::StrJoin(a.addresses(), ", ")), "</td></tr>\n");
    }
    absl::StrAppend(&out, "</tbody></table>\n");
  }
  absl::StrAppend(&out, "<h2 id=\"runs\">Runs (latest ", runs.runs_size(), ")</h2>\n");
  if (runs.runs_size() == 0) {
    absl::StrAppend(&out, "<p class=\"muted\">No run yet.</p>\n");
  } else {
    absl::StrAppend(&out,
                    "<table id=\"run-table\"><thead><tr><th>run</th><th>plan</th>"
                    "<th>state</th><th>created</th><th>tasks ended</th><th>failed</th>"
                    "<th>could not run</th><th>tier</th><th>scorecard</th></tr></thead><tbody>\n");
    for (const auto& r : runs.runs()) {
      const std::string id = HtmlEscape(r.run_id());
      std::string card;
      if (!r.report_dir().empty()) {
        card = absl::StrCat(
            "<a href=\"/runs/", id, "/scorecard\">html</a> <a href=\"/runs/", id,
            "/scorecard.md\">md</a> <a href=\"/runs/", id, "/scorecard.json\">json</a>");
      }
      absl::StrAppend(&out, "<tr><td><a href=\"/runs/", id, "\">", id, "</a></td><td>",
                      HtmlEscape(r.plan_name()), "</td>", StateCell(r.state()), "<td>",
                      FormatTime(r.created_unix_ns()), "</td><td class=\"n\">",
                      r.tasks_done(), " / ", r.tasks_total(), "</td>",
                      Num(r.tasks_failed()), Num(r.tasks_could_not_run()), "<td>",
                      HtmlEscape(r.tier()), "</td><td>",
                      card, "</td></tr>\n");
    }
    absl::StrAppend(&out, "</tbody></table>\n");
  }
  // Comparing needs two runs with a scorecard.
  std::string options;
  int with_card = 0;
  for (const auto& r : runs.runs()) {
    if (r.report_dir().empty()) continue;
    ++with_card;
    absl::StrAppend(&options, "<option value=\"", HtmlEscape(r.run_id()), "\">",
                    HtmlEscape(r.run_id()), " (", HtmlEscape(r.plan_name()),
                    ")</option>");
  }
  if (with_card >= 2) {
    absl::StrAppend(&out,
                    "<h2 id=\"compare\">Compare two runs</h2>\n<form method=\"get\" "
                    "action=\"/compare\"><select name=\"a\">",
                    options, "</select> with <select name=\"b\">", options,
                    "</select> <button type=\"submit\">Compare</button></form>\n");
  }
  absl::StrAppend(&out,
                  "<p class=\"muted\">JSON: <a href=\"/api/agents\">/api/agents</a>, "
                  "<a href=\"/api/runs\">/api/runs</a>.</p>\n</body></html>\n");
  return out;
}

namespace {

// Follows /api/runs/ID: asks with the fingerprint it has, the server answers
// when something changed (or after about a second), the page redraws what
// changed and notes each state it saw in #update-log. Builds the DOM with
// textContent only: no data ever becomes markup.
constexpr absl::string_view kRunScript = R"js(
(function () {
  'use strict';
  var body = document.body;
  var runId = body.getAttribute('data-run');
  var fp = '';
  var live = document.getElementById('live-status');
  var log = document.getElementById('update-log');
  function set(id, t) { var el = document.getElementById(id); if (el) el.textContent = String(t); }
  function cell(tr, t, cls) {
    var td = document.createElement('td');
    td.textContent = t === undefined || t === null ? '' : String(t);
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }
  function fill(id, rows, make) {
    var tb = document.getElementById(id);
    while (tb.firstChild) tb.removeChild(tb.firstChild);
    rows.forEach(function (r) { var tr = document.createElement('tr'); make(tr, r); tb.appendChild(tr); });
  }
  function render(j) {
    var st = document.getElementById('run-state');
    st.textContent = j.run.state;
    st.className = 'state-' + j.run.state;
    set('count-total', j.total); set('count-done', j.done); set('count-running', j.running);
    set('count-pending', j.pending); set('count-failed', j.failed);
    set('count-could-not-run', j.could_not_run);
    set('count-cancelled', j.cancelled); set('run-tier', j.run.tier || '');
    set('run-message', j.run.message || '');
    fill('entries', j.entries, function (tr, e) {
      cell(tr, e.index, 'n'); cell(tr, e.suite); cell(tr, e.name); cell(tr, e.total, 'n');
      cell(tr, e.pending, 'n'); cell(tr, e.running, 'n'); cell(tr, e.done, 'n');
      cell(tr, e.failed, 'n'); cell(tr, e.could_not_run, 'n'); cell(tr, e.found_failures, 'n');
      cell(tr, e.cancelled, 'n');
    });
    function taskRow(tr, f) {
      cell(tr, f.name); cell(tr, f.node); cell(tr, f.state, 'state-' + f.state.replace(/ /g, '_'));
      cell(tr, f.exit_code, 'n'); cell(tr, f.attempt, 'n'); cell(tr, f.message);
      var pre = document.createElement('pre'); pre.textContent = f.stderr_tail;
      cell(tr, '').appendChild(pre);
    }
    fill('failures', j.failures, taskRow);
    fill('not-run', j.not_run, taskRow);
    set('failures-total', j.failures_total);
    set('not-run-total', j.could_not_run);
    document.getElementById('no-failures').hidden = j.failures.length > 0;
    document.getElementById('no-not-run').hidden = j.not_run.length > 0;
    document.getElementById('scorecard-links').hidden = !j.scorecard;
    document.getElementById('no-scorecard').hidden = j.scorecard;
  }
  var lastNoted = '';
  function note(j) {
    var seen = [j.run.state, j.done, j.running, j.failed, j.could_not_run, j.pending,
                j.cancelled].join(' ');
    if (seen === lastNoted) return;  // a change the counts do not show (e.g. assigned to running)
    lastNoted = seen;
    var li = document.createElement('li');
    li.setAttribute('data-state', j.run.state);
    li.setAttribute('data-done', String(j.done));
    li.setAttribute('data-running', String(j.running));
    li.setAttribute('data-failed', String(j.failed));
    li.setAttribute('data-could-not-run', String(j.could_not_run));
    li.textContent = new Date().toISOString().substring(11, 19) + ' ' + j.run.state + ': ' +
        j.done + ' of ' + j.total + ' done, ' + j.running + ' running, ' + j.failed + ' failed' +
        (j.could_not_run ? ', ' + j.could_not_run + ' could not run' : '');
    log.appendChild(li);
  }
  function poll() {
    fetch('/api/runs/' + encodeURIComponent(runId) + '?since=' + encodeURIComponent(fp),
          {credentials: 'same-origin', cache: 'no-store'})
      .then(function (r) {
        if (r.status === 401) { throw new Error('signed out: reload the page to sign in'); }
        if (!r.ok) { throw new Error('HTTP ' + r.status); }
        return r.json();
      })
      .then(function (j) {
        if (j.fingerprint !== fp) { fp = j.fingerprint; render(j); note(j); }
        if (j.final) { live.textContent = 'final: this run has ended'; body.setAttribute('data-final', '1'); return; }
        live.textContent = 'live: following the run';
        setTimeout(poll, 200);
      })
      .catch(function (e) {
        live.textContent = 'not updating (' + e.message + '); retrying in 3 s';
        if (!/signed out/.test(e.message)) setTimeout(poll, 3000);
      });
  }
  poll();
})();
)js";

}  // namespace

namespace {

// A table of tasks under `title` ("Failures"): `id` names its tbody
// (filled again by kRunScript), `id`-total its count and no-`id` the line
// shown while it is empty.
void TaskTable(std::string* out, absl::string_view title, absl::string_view id, int total,
               const std::vector<TaskFailure>& tasks) {
  absl::StrAppend(out, "<h2>", title, " (<span id=\"", id, "-total\">", total,
                  "</span>; the latest ", kMaxFailuresShown, " are listed)</h2>\n<p id=\"no-",
                  id, "\" class=\"muted\"", tasks.empty() ? "" : " hidden",
                  ">None so far.</p>\n<table><thead><tr><th>task</th><th>node</th><th>state</th>"
                  "<th>exit</th><th>attempt</th><th>message</th><th>stderr (tail)</th></tr>"
                  "</thead><tbody id=\"", id, "\">\n");
  for (const TaskFailure& f : tasks) {
    std::string cls = f.state;
    std::replace(cls.begin(), cls.end(), ' ', '_');
    absl::StrAppend(out, "<tr><td>", HtmlEscape(f.name), "</td><td>", HtmlEscape(f.node),
                    "</td><td class=\"state-", HtmlEscape(cls), "\">", HtmlEscape(f.state),
                    "</td>", Num(f.exit_code), Num(f.attempt), "<td>", HtmlEscape(f.message),
                    "</td><td><pre>", HtmlEscape(f.stderr_tail), "</pre></td></tr>\n");
  }
  absl::StrAppend(out, "</tbody></table>\n");
}

}  // namespace

std::string RunPage(const RunProgress& p, bool has_scorecard, const PageContext& ctx) {
  const v1::RunInfo& r = p.run;
  const std::string id = HtmlEscape(r.run_id());
  // Without script the page reloads itself while the run goes on.
  std::string out = Head(
      absl::StrCat("cmax run ", r.run_id()),
      p.final ? "" : "<noscript><meta http-equiv=\"refresh\" content=\"5\"></noscript>");
  absl::StrAppend(&out, "<body data-run=\"", id, "\">", Nav(ctx), "<h1>Run ", id,
                  "</h1>\n");
  absl::StrAppend(&out, "<table id=\"run-summary\"><tbody>", "<tr><th>plan</th><td>",
                  HtmlEscape(r.plan_name()), "</td></tr>",
                  "<tr><th>state</th><td id=\"run-state\" class=\"state-",
                  HtmlEscape(r.state()), "\">", HtmlEscape(r.state()), "</td></tr>",
                  "<tr><th>created</th><td>", FormatTime(r.created_unix_ns()),
                  "</td></tr>", "<tr><th>tasks</th><td><span id=\"count-done\">", p.done,
                  "</span> done of <span id=\"count-total\">", p.total,
                  "</span>; <span id=\"count-running\">", p.running,
                  "</span> running, <span id=\"count-pending\">", p.pending,
                  "</span> pending, <span id=\"count-failed\">", p.failed,
                  "</span> failed, <span id=\"count-could-not-run\">", p.could_not_run,
                  "</span> could not run, <span id=\"count-cancelled\">", p.cancelled,
                  "</span> cancelled</td></tr>", "<tr><th>tier</th><td id=\"run-tier\">",
                  HtmlEscape(r.tier()), "</td></tr>",
                  "<tr><th>message</th><td id=\"run-message\">", HtmlEscape(r.message()),
                  "</td></tr></tbody></table>\n");
  absl::StrAppend(&out, "<p id=\"live\" class=\"muted\"><span id=\"live-status\">",
                  p.final ? "final: this run has ended"
                          : "state at load (without script this page reloads every 5 s)",
                  "</span></p>\n");
  absl::StrAppend(
      &out, "<h2>Scorecard</h2><p id=\"scorecard-links\"", has_scorecard ? "" : " hidden",
      "><a href=\"/runs/", id, "/scorecard\">HTML</a> · <a href=\"/runs/", id,
      "/scorecard.md\">Markdown</a> · <a href=\"/runs/", id,
      "/scorecard.json\">JSON (download)</a></p><p id=\"no-scorecard\" class=\"muted\"",
      has_scorecard ? " hidden" : "",
      ">The scorecard is written when the run ends.</p>\n");
  absl::StrAppend(&out,
                  "<h2>Progress per plan entry</h2>\n<table><thead><tr><th>#</th>"
                  "<th>suite</th><th>name</th><th>tasks</th><th>pending</th>"
                  "<th>running</th><th>done</th><th>failed</th><th>could not run</th>"
                  "<th>found failures</th>"
                  "<th>cancelled</th></tr></thead><tbody id=\"entries\">\n");
  for (const EntryProgress& e : p.entries) {
    absl::StrAppend(&out, "<tr>", Num(e.suite_index), "<td>", HtmlEscape(e.suite),
                    "</td><td>", HtmlEscape(e.name), "</td>", Num(e.total),
                    Num(e.pending), Num(e.running), Num(e.done), Num(e.failed),
                    Num(e.could_not_run), Num(e.found_failures), Num(e.cancelled), "</tr>\n");
  }
  absl::StrAppend(&out, "</tbody></table>\n");
  TaskTable(&out, "Failures", "failures", p.failures_total, p.failures);
  // Not failures: what a node lacks (no GPU, no InfiniBand, no permission),
  // shown on the scorecard as not measured.
  TaskTable(&out, "Could not run", "not-run", p.could_not_run, p.not_run);
  absl::StrAppend(&out,
                  "<details id=\"updates\"><summary>Updates seen by "
                  "this page</summary><ol id=\"update-log\"></ol></details>\n<script>",
                  kRunScript, "</script>\n</body></html>\n");
  return out;
}

absl::string_view RunPageScript() { return kRunScript; }

namespace {

void TaskList(const std::vector<TaskFailure>& tasks, google::protobuf::ListValue* list) {
  for (const TaskFailure& t : tasks) {
    google::protobuf::Struct s;
    auto& sf = *s.mutable_fields();
    sf["task_id"] = Str(t.task_id);
    sf["suite"] = Str(t.suite);
    sf["name"] = Str(t.name);
    sf["node"] = Str(t.node);
    sf["state"] = Str(t.state);
    sf["exit_code"] = Number(t.exit_code);
    sf["attempt"] = Number(t.attempt);
    sf["message"] = Str(t.message);
    sf["stderr_tail"] = Str(t.stderr_tail);
    sf["blamed_nodes"] = Str(t.blamed_nodes);
    *list->add_values()->mutable_struct_value() = std::move(s);
  }
}

}  // namespace

std::string RunJson(const RunProgress& p, bool has_scorecard) {
  google::protobuf::Struct root;
  auto& f = *root.mutable_fields();
  google::protobuf::Struct run;
  auto& rf = *run.mutable_fields();
  rf["run_id"] = Str(p.run.run_id());
  rf["plan_name"] = Str(p.run.plan_name());
  rf["state"] = Str(p.run.state());
  rf["tier"] = Str(p.run.tier());
  rf["message"] = Str(p.run.message());
  rf["created_unix_ns"] = Str(absl::StrCat(p.run.created_unix_ns()));
  rf["finished_unix_ns"] = Str(absl::StrCat(p.run.finished_unix_ns()));
  rf["nodes_failed"] = Number(p.run.nodes_failed());
  *f["run"].mutable_struct_value() = std::move(run);
  f["total"] = Number(p.total);
  f["pending"] = Number(p.pending);
  f["running"] = Number(p.running);
  f["done"] = Number(p.done);
  f["failed"] = Number(p.failed);
  f["could_not_run"] = Number(p.could_not_run);
  f["cancelled"] = Number(p.cancelled);
  f["final"] = Bool(p.final);
  f["scorecard"] = Bool(has_scorecard);
  f["fingerprint"] = Str(p.fingerprint);
  f["failures_total"] = Number(p.failures_total);
  auto* entries = f["entries"].mutable_list_value();
  for (const EntryProgress& e : p.entries) {
    google::protobuf::Struct s;
    auto& sf = *s.mutable_fields();
    sf["index"] = Number(e.suite_index);
    sf["suite"] = Str(e.suite);
    sf["name"] = Str(e.name);
    sf["total"] = Number(e.total);
    sf["pending"] = Number(e.pending);
    sf["running"] = Number(e.running);
    sf["done"] = Number(e.done);
    sf["failed"] = Number(e.failed);
    sf["could_not_run"] = Number(e.could_not_run);
    sf["found_failures"] = Number(e.found_failures);
    sf["cancelled"] = Number(e.cancelled);
    *entries->add_values()->mutable_struct_value() = std::move(s);
  }
  TaskList(p.failures, f["failures"].mutable_list_value());
  TaskList(p.not_run, f["not_run"].mutable_list_value());
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(root, &out);
  return out;
}

std::string LoginPage(absl::string_view next, absl::string_view message, int status) {
  std::string out = Head("cmax: sign in");
  absl::StrAppend(&out, "<body><h1>cmax coordinator: sign in</h1>\n");
  if (status == 401) {
    absl::StrAppend(&out,
                    "<p>This coordinator asks for its bearer token (the one agents and "
                    "cmaxctl use, e.g. /etc/cmax/token).</p>\n");
  }
  if (!message.empty()) {
    absl::StrAppend(&out, "<p class=\"err\" id=\"login-error\">", HtmlEscape(message),
                    "</p>\n");
  }
  absl::StrAppend(&out,
                  "<form method=\"post\" action=\"/login\"><input type=\"hidden\" "
                  "name=\"next\" value=\"",
                  HtmlEscape(IsLocalPath(next) ? next : "/"),
                  "\"><label>Token <input type=\"password\" name=\"token\" "
                  "autocomplete=\"current-password\" required autofocus></label> "
                  "<button type=\"submit\">Sign in</button></form>\n</body></html>\n");
  return out;
}

std::string SignedInPage(absl::string_view next) {
  const std::string to = HtmlEscape(IsLocalPath(next) ? next : "/");
  std::string out =
      Head("cmax: signed in",
           absl::StrCat("<meta http-equiv=\"refresh\" content=\"0;url=", to, "\">"));
  absl::StrAppend(&out, "<body><p>Signed in. Continuing to <a href=\"", to, "\">", to,
                  "</a>.</p></body></html>\n");
  return out;
}

std::string ErrorPage(int status, absl::string_view message, const PageContext& ctx) {
  std::string out = Head(absl::StrCat("cmax: ", status));
  absl::StrAppend(&out, "<body>", Nav(ctx), "<h1>", status, "</h1><p id=\"error\">",
                  HtmlEscape(message), "</p></body></html>\n");
  return out;
}

namespace {

std::string VerdictCell(const std::string& verdict) {
  const char* cls = verdict == "accept"   ? "state-completed"
                    : verdict == "reject" ? "state-failed"
                                          : "state-cancelled";
  return absl::StrCat("<td class=\"", cls, "\">", HtmlEscape(verdict), "</td>");
}

std::string NodeLink(const std::string& node) {
  return absl::StrCat("<a href=\"/nodes/", HtmlEscape(node), "\">", HtmlEscape(node),
                      "</a>");
}

// The node's values over time (line and points), the fleet's p10-p90 band
// at the same runs, and the least-squares trend as a dashed line.
std::string FigureChart(const v1::FigureTrend& f) {
  const int n = f.node_values_size();
  if (n == 0) return "";
  constexpr int kW = 640, kH = 220, kLeft = 60, kRight = 620, kTop = 15, kBottom = 180;
  double lo = f.node_values(0), hi = lo;
  for (int i = 0; i < n; ++i) {
    lo = std::min({lo, f.node_values(i), f.fleet_p10(i)});
    hi = std::max({hi, f.node_values(i), f.fleet_p90(i)});
  }
  if (hi <= lo) {
    lo -= 1;
    hi += 1;
  }
  const double pad = (hi - lo) * 0.1;
  const int64_t t0 = f.node_times_unix_ns(0), t1 = f.node_times_unix_ns(n - 1);
  const double days = std::max(1e-9, (t1 - t0) / 86400e9);
  reports::Scale x(0, days, kLeft, kRight), y(lo - pad, hi + pad, kBottom, kTop);
  auto xd = [&](int i) { return (f.node_times_unix_ns(i) - t0) / 86400e9; };
  reports::Svg svg(kW, kH, "history-chart",
                   absl::StrCat(f.name(), " (", f.unit(), ") over time",
                                f.simulated() ? ", simulated" : ""));
  svg.YAxis(y, kLeft, kRight, f.unit());
  svg.XAxis(x, kBottom, "days since the first run", 6);
  if (n >= 2) {
    std::vector<std::pair<double, double>> band;
    for (int i = 0; i < n; ++i) band.emplace_back(x(xd(i)), y(f.fleet_p90(i)));
    for (int i = n - 1; i >= 0; --i) band.emplace_back(x(xd(i)), y(f.fleet_p10(i)));
    svg.Polygon(band, "#888888", "fleet p10-p90");
  }
  std::vector<std::pair<double, double>> line;
  for (int i = 0; i < n; ++i) line.emplace_back(x(xd(i)), y(f.node_values(i)));
  if (n >= 2) svg.Polyline(line, "#0b5cad", "this node");
  for (int i = 0; i < n; ++i) {
    svg.Circle(line[i].first, line[i].second, 3, "#0b5cad",
               absl::StrFormat("%s: %.4g %s (fleet %.4g-%.4g)",
                               FormatTime(f.node_times_unix_ns(i)), f.node_values(i),
                               f.unit(), f.fleet_p10(i), f.fleet_p90(i)));
  }
  if (f.trend_measured()) {
    // The fitted line through the mean point with the slope.
    double mx = 0, my = 0;
    for (int i = 0; i < n; ++i) {
      mx += xd(i);
      my += f.node_values(i);
    }
    mx /= n;
    my /= n;
    svg.Line(x(0), y(my - f.slope_per_day() * mx), x(days),
             y(my + f.slope_per_day() * (days - mx)), "#b3261e",
             absl::StrFormat("trend %+.4g %s per day", f.slope_per_day(), f.unit()),
             true);
  }
  return svg.Finish();
}

// Failures per 1,000 GPU-hours by week, one bar a measured week.
std::string WeeksChart(const v1::ReliabilitySummary& r) {
  std::vector<const v1::WeekFailures*> weeks;
  double hi = 0;
  for (const auto& w : r.weeks()) {
    if (!w.measured()) continue;
    weeks.push_back(&w);
    hi = std::max(hi, w.per_1000_gpu_hours());
  }
  if (weeks.empty()) return "";
  if (hi <= 0) hi = 1;
  constexpr int kW = 640, kH = 220, kLeft = 60, kRight = 620, kTop = 15, kBottom = 180;
  reports::Scale y(0, hi * 1.1, kBottom, kTop);
  reports::Svg svg(kW, kH, "history-chart", "failures per 1,000 GPU-hours by week");
  svg.YAxis(y, kLeft, kRight, "/1k GPU-h");
  const double slot = static_cast<double>(kRight - kLeft) / weeks.size();
  for (size_t i = 0; i < weeks.size(); ++i) {
    const auto& w = *weeks[i];
    const double top = y(w.per_1000_gpu_hours());
    svg.Rect(kLeft + i * slot + slot * 0.15, top, slot * 0.7, kBottom - top, "#b3261e",
             absl::StrFormat("week of %s: %d failures in %.1f GPU-hours = %.2f", w.week(),
                             w.failures(), w.gpu_hours(), w.per_1000_gpu_hours()));
    svg.Text(kLeft + (i + 0.5) * slot, kBottom + 14, w.week(), "middle", 10);
  }
  return svg.Finish();
}

std::string IncidentRows(
    const google::protobuf::RepeatedPtrField<v1::Incident>& incidents, bool with_node) {
  std::string out =
      absl::StrCat("<table><thead><tr>", with_node ? "<th>node</th>" : "",
                   "<th>opened</th><th>closed</th><th>time to repair</th>"
                   "<th>reasons</th><th>evidence</th></tr></thead><tbody>\n");
  for (const auto& i : incidents) {
    std::vector<std::string> reasons;
    for (const auto& r : i.reasons()) {
      reasons.push_back(
          absl::StrCat("<b>", HtmlEscape(r.id()), "</b>: ", HtmlEscape(reports::OneLine(r.text()))));
    }
    const std::string opened = HtmlEscape(i.opened_run());
    // What keeps it open (reports/history.h): the reasons no run has
    // measured again and passed.
    std::vector<std::string> waiting;
    for (const auto& id : i.unresolved()) waiting.push_back(HtmlEscape(id));
    const std::string open_cell =
        waiting.empty() ? std::string("<span class=\"err\">open</span>")
                        : absl::StrCat("<span class=\"err\">open</span>: waiting for a run "
                                       "that measures again and passes ",
                                       absl::StrJoin(waiting, ", "));
    absl::StrAppend(
        &out, "<tr>", with_node ? absl::StrCat("<td>", NodeLink(i.node()), "</td>") : "",
        "<td>", FormatTime(i.opened_unix_ns()), " (<a href=\"/runs/", opened, "\">",
        opened, "</a>)</td><td>",
        i.closed_run().empty()
            ? open_cell
            : absl::StrCat(FormatTime(i.closed_unix_ns()), " (<a href=\"/runs/",
                           HtmlEscape(i.closed_run()), "\">", HtmlEscape(i.closed_run()),
                           "</a>)"),
        "</td><td class=\"n\">",
        i.closed_run().empty() ? std::string("")
                               : absl::StrFormat("%.2f h", i.repair_hours()),
        i.reopened_within_7d()
            ? " <span class=\"err\">(failed again within 7 days)</span>"
            : "",
        "</td><td>", absl::StrJoin(reasons, "<br>"), "</td><td><a href=\"/runs/", opened,
        "/scorecard\">scorecard</a></td></tr>\n");
  }
  absl::StrAppend(&out, "</tbody></table>\n");
  return out;
}

}  // namespace

std::string NodeHistoryPage(const v1::NodeHistory& h, const PageContext& ctx,
                            absl::string_view remediation_section) {
  std::string out = Head(absl::StrCat("cmax: node ", h.node()));
  absl::StrAppend(
      &out, "<body>", Nav(ctx), "<h1>Node ", HtmlEscape(h.node()), "</h1>\n",
      "<p id=\"node-state\">Now: <b>", HtmlEscape(h.state()), "</b>; ", h.runs_size(),
      " runs, ", h.incidents_size(),
      " incidents. <a href=\"/fleet\">Fleet history</a>, <a href=\"/api/nodes/",
      HtmlEscape(h.node()), "\">JSON</a>.</p>\n", remediation_section);
  absl::StrAppend(&out, "<h2 id=\"incidents\">Incidents</h2>\n");
  if (h.incidents_size() == 0) {
    absl::StrAppend(&out, "<p class=\"muted\">No run has rejected this node.</p>\n");
  } else {
    absl::StrAppend(&out, IncidentRows(h.incidents(), false));
  }
  absl::StrAppend(&out, "<h2 id=\"figures\">Figures over time</h2>\n");
  if (h.figures_size() == 0)
    absl::StrAppend(&out, "<p class=\"muted\">No figure measured.</p>\n");
  for (const auto& f : h.figures()) {
    absl::StrAppend(
        &out, "<h3>", HtmlEscape(f.name()), " (", HtmlEscape(f.unit()), ")",
        f.simulated() ? " <span class=\"err\">simulated</span>" : "", "</h3>\n",
        "<p class=\"muted\">",
        f.trend_measured()
            ? absl::StrFormat("trend %+.4g %s per day (least squares)", f.slope_per_day(),
                              f.unit())
            : std::string("trend not measured (fewer than two values, or "
                          "less than an hour between the first and the last)"),
        "; grey band: the fleet's p10-p90 at each run.</p>\n", FigureChart(f));
  }
  absl::StrAppend(&out, "<h2 id=\"reasons\">Reasons</h2>\n");
  if (h.reasons_size() == 0) {
    absl::StrAppend(&out, "<p class=\"muted\">None.</p>\n");
  } else {
    absl::StrAppend(&out, "<p class=\"muted\">Repeat offender: in ", h.repeat_k(),
                    " of the node's last ", h.repeat_n(),
                    " measured runs.</p>\n<table><thead><tr><th>reason</th><th>runs</th>"
                    "<th>first seen</th><th>last seen</th><th>repeat offender</th>"
                    "<th>latest text</th></tr></thead><tbody>\n");
    for (const auto& r : h.reasons()) {
      absl::StrAppend(&out, "<tr><td>", HtmlEscape(r.id()), "</td>", Num(r.runs()),
                      "<td>", FormatTime(r.first_unix_ns()), "</td><td>",
                      FormatTime(r.last_unix_ns()), "</td><td>",
                      r.repeat_offender() ? "<b class=\"err\">yes</b>" : "no",
                      "</td><td>", HtmlEscape(reports::OneLine(r.text())), "</td></tr>\n");
    }
    absl::StrAppend(&out, "</tbody></table>\n");
  }
  absl::StrAppend(&out,
                  "<h2 id=\"verdicts\">Verdicts</h2>\n<table><thead><tr><th>finished</th>"
                  "<th>run</th><th>plan</th><th>verdict</th><th>reasons</th></tr></thead>"
                  "<tbody>\n");
  for (auto it = h.runs().rbegin(); it != h.runs().rend(); ++it) {
    std::vector<std::string> ids;
    for (const auto& r : it->reasons()) ids.push_back(HtmlEscape(r.id()));
    const std::string id = HtmlEscape(it->run_id());
    absl::StrAppend(&out, "<tr><td>", FormatTime(it->finished_unix_ns()),
                    "</td><td><a href=\"/runs/", id, "\">", id, "</a></td><td>",
                    HtmlEscape(it->plan()), "</td>", VerdictCell(it->verdict()), "<td>",
                    it->partial() ? "(partial) " : "",
                    it->simulated() ? "<span class=\"err\">simulated</span> " : "",
                    absl::StrJoin(ids, ", "), "</td></tr>\n");
  }
  absl::StrAppend(&out, "</tbody></table>\n</body></html>\n");
  return out;
}

std::string FleetPage(const v1::ReliabilitySummary& r, const PageContext& ctx) {
  std::string out = Head("cmax: fleet history");
  absl::StrAppend(
      &out, "<body>", Nav(ctx), "<h1>Fleet history</h1>\n<p id=\"fleet-summary\">",
      HtmlEscape(r.summary()),
      "</p>\n<p>Time from failure to drain: ", HtmlEscape(r.drain_time()), "</p>\n");
  absl::StrAppend(&out, "<h2 id=\"states\">Nodes by state now</h2>\n<table><tbody>\n");
  for (const auto& [state, n] : std::map<std::string, int32_t>(
           r.nodes_by_state().begin(), r.nodes_by_state().end())) {
    absl::StrAppend(&out, "<tr>", StateCell(state), Num(n), "</tr>\n");
  }
  absl::StrAppend(&out, "</tbody></table>\n<h2 id=\"open\">Open incidents (",
                  r.open_size(), ")</h2>\n");
  if (r.open_size() == 0) {
    absl::StrAppend(&out, "<p class=\"muted\">None.</p>\n");
  } else {
    absl::StrAppend(&out, IncidentRows(r.open(), true));
  }
  absl::StrAppend(&out, "<h2 id=\"weeks\">Failures per 1,000 GPU-hours by week</h2>\n");
  if (r.weeks_size() == 0) {
    absl::StrAppend(&out,
                    "<p class=\"muted\">Not measured: no GPU-hours between runs.</p>\n");
  } else {
    absl::StrAppend(
        &out, WeeksChart(r),
        "<table><thead><tr><th>week (Monday, UTC)</th><th>failures</th>"
        "<th>GPU-hours</th><th>per 1,000 GPU-hours</th></tr></thead><tbody>\n");
    for (const auto& w : r.weeks()) {
      absl::StrAppend(&out, "<tr><td>", HtmlEscape(w.week()), "</td>", Num(w.failures()),
                      "<td class=\"n\">", absl::StrFormat("%.1f", w.gpu_hours()),
                      "</td><td class=\"n\">",
                      w.measured() ? absl::StrFormat("%.2f", w.per_1000_gpu_hours())
                                   : std::string("not measured"),
                      "</td></tr>\n");
    }
    absl::StrAppend(&out, "</tbody></table>\n");
  }
  absl::StrAppend(&out, "<h2 id=\"top-reasons\">Reasons that recur most</h2>\n");
  if (r.top_reasons_size() == 0) {
    absl::StrAppend(&out, "<p class=\"muted\">None.</p>\n");
  } else {
    absl::StrAppend(
        &out,
        "<table><thead><tr><th>reason</th><th>node-runs</th><th>last seen</th>"
        "<th>latest text</th></tr></thead><tbody>\n");
    for (const auto& t : r.top_reasons()) {
      absl::StrAppend(&out, "<tr><td>", HtmlEscape(t.id()), "</td>", Num(t.runs()),
                      "<td>", FormatTime(t.last_unix_ns()), "</td><td>",
                      HtmlEscape(reports::OneLine(t.text())), "</td></tr>\n");
    }
    absl::StrAppend(&out, "</tbody></table>\n");
  }
  absl::StrAppend(&out,
                  "<p class=\"muted\">JSON: <a href=\"/api/fleet\">/api/fleet</a>.</p>\n"
                  "</body></html>\n");
  return out;
}

}  // namespace cmax::coordinator::web
