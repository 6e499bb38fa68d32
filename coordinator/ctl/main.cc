// cmaxctl: the operator's command line for a cmax coordinator.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/args.h"
#include "common/plan_parser.h"
#include "common/record_io.h"
#include "common/time_util.h"
#include "common/version.h"
#include "coordinator/ctl/analysis.h"
#include "coordinator/ctl/client.h"
#include "coordinator/ctl/progress.h"
#include "coordinator/ctl/history.h"
#include "coordinator/ctl/remediation.h"
#include "coordinator/ctl/schedule.h"

namespace cmax::ctl {
namespace {

constexpr char kDefaultTokenFile[] = "/etc/cmax/token";
constexpr int kOk = kExitOk, kFailed = kExitFailed, kUsage = kExitUsage;

constexpr char kUsageText[] =
    R"(usage: cmaxctl [--coordinator HOST:PORT] [--token-file F] [--tls-ca F]
               [--tls-cert F --tls-key F] [--allow-insecure] <command> [options]

commands:
  agents [--json]                          every agent: state, heartbeat, clock offset,
                                           addresses, GPUs
  run --plan FILE [--no-wait] [--json]     submit a plan, then follow it live
  runs [--limit N] [--json]                recent runs
  watch RUN [--json]                       follow a run live
  cancel RUN                               stop every task of a run
  report RUN [--format json|md|html|junit] [-o FILE]
                                           the run's scorecard
  export RUN [-o FILE]                     every stored record as JSON lines (none once the
                                           coordinator's --keep-runs-for dropped them)
  schedule add --plan FILE --every DURATION [--nodes SELECTOR] [--only-idle]
               [--window HH:MM-HH:MM] [--max-nodes-at-once N] [--json]
                                           run the plan every DURATION (30s, 6h, 7d); the
                                           plan is read and stored now (a later edit of the
                                           file does not change the schedule); --window is
                                           in UTC; see `cmaxctl schedule add --help`
  schedule list [--json]                   schedules: state, last run and outcome, next
                                           slot, skipped slots and why
  schedule pause|resume|remove ID
  remediation status [--node NODE] [--all] [--json]
                                           the fault loop: incidents from the nodes' watch,
                                           their steps and time to detect, quarantine and
                                           repair (docs/remediation.md)
  remediation pause|resume|reload          (admin) stop or restart the loop; read the
                                           policy again (a bad one is refused, the old stays)
  remediation approve|dismiss INCIDENT     (admin) run a planned or held incident; return
                                           an escalated node; close a planned one
  history [NODE] [--json]                  a node's verdicts over time, reasons (first,
                                           last, repeat offenders), figures with trend
                                           and fleet band, incidents and time to repair;
                                           without NODE the fleet: nodes by state, open
                                           incidents, median/p90 time to repair, failures
                                           per 1,000 GPU-hours by week (docs/history.md)
  compare RUN_A RUN_B [--threshold PCT] [--format text|json|html] [-o FILE]
  compare --files A.json B.json [...]      what changed from run A to run B, of what
                                           both measured, summary first: metrics that
                                           moved beyond PCT% (default 5) and their
                                           noise, per entry, node and GPU; findings
                                           that appeared or cleared ('not measured in
                                           B' where B did not run the check); verdicts
                                           where both ran the same suites; tier; exit 0
                                           no regression, 1 regressions, 2 usage or input
  baseline save RUN -o FILE                a baseline file for a plan's 'baseline: FILE'
  rank SCORECARD.json... [--name FILE=NAME]... [--price NAME_OR_FILE=USD]...
       [--format text|json|md] [-o FILE]   league table of clusters (rules in
                                           reports/RULES.md, "Ranking"); no coordinator

defaults: --coordinator from $CMAX_COORDINATOR (else 127.0.0.1:8470),
          --token-file from $CMAX_TOKEN_FILE, else /etc/cmax/token when readable
          (root and the cmax group; written by deploy/install.sh)
a token is never sent in clear text to a non-loopback coordinator: give
  --tls-ca, or --allow-insecure to send it anyway (a warning is printed)
exit codes (run, watch), the first that applies:
  2 usage or plan error
  3 the run could not finish (cancelled, coordinator gone)
  1 a task crashed, hung or was lost, or a node failed (rated or not)
  5 nothing was measured: no task completed or failed, every task could not
    run (exit 2: a missing suite binary, GPU or tool) or was cancelled; a line
    on stderr says so with the first reason
  4 the run completed without failures but its scorecard is not rated
    (too little was measured for a tier)
  0 otherwise (tasks that could not run, exit 2, are counted apart, not as failures)
exit codes (schedule): 0 done, 2 usage or a bad plan, duration, window or
  selector (nothing stored) or an unknown id, 3 coordinator unreachable
exit codes (history): 0 shown, 2 usage, a bad or unknown node, 3 coordinator
  unreachable
exit codes (compare): 0 no regression, 1 regressions found, 2 usage or unreadable
  input, 3 coordinator unreachable; (baseline, rank): 0 written, 1 cannot write,
  2 usage or unreadable input, 3 coordinator unreachable (baseline)
exit code 6, every command that calls the coordinator: it refused the
  credentials (no token, a wrong one, or a role without the call)
)";

// The whole usage: asked for, or no command to go by.
int FullUsage(const std::string& error) {
  if (!error.empty()) std::fprintf(stderr, "cmaxctl: %s\n\n", error.c_str());
  std::fputs(kUsageText, error.empty() ? stdout : stderr);
  return error.empty() ? kOk : kUsage;
}

// A command's own mistake: the one line that says what is wrong (with the
// valid values), not sixty lines of every other command.
int Usage(const std::string& error) {
  if (error.empty()) return FullUsage("");
  std::fprintf(stderr, "cmaxctl: %s (cmaxctl COMMAND --help: its options)\n", error.c_str());
  return kUsage;
}

std::string Ago(int64_t unix_ns) {
  if (unix_ns <= 0) return "never";
  double s = static_cast<double>(NowUnixNs() - unix_ns) / 1e9;
  return absl::StrFormat("%.1fs ago", s < 0 ? 0 : s);
}

int CmdAgents(Client& client, const std::vector<std::string>& args) {
  bool json = false;
  ArgParser p("cmaxctl agents [--json]", "Every agent the coordinator knows.");
  p.AddFlag("json", &json, "one JSON object");
  if (auto s = p.Parse(args); !s.ok()) return Usage(std::string(s.message()));
  if (p.help_requested()) return std::fputs(p.Help().c_str(), stdout), kOk;
  v1::ListAgentsResponse resp;
  auto ctx = client.Context();
  grpc::Status st = client.stub()->ListAgents(ctx.get(), {}, &resp);
  if (!st.ok()) return RpcError(st, client);
  if (json) {
    std::printf("%s\n", cmax::ctl::ForTerminalJson(MessageToJsonLine(resp, true)).c_str());
    return kOk;
  }
  std::printf("%-20s %-12s %-12s %10s %8s %5s  %-24s %s\n", "NODE", "STATE", "HEARTBEAT",
              "OFFSET_MS", "RTT_MS", "GPUS", "ADDRESSES", "MODEL / TASK");
  for (const auto& a : resp.agents()) {
    std::string detail = a.inventory().gpu_model();
    if (!a.running_task().empty()) detail = absl::StrCat(detail, detail.empty() ? "" : " / ",
                                                         a.running_task());
    const std::string addresses = absl::StrJoin(a.addresses(), ",");
    std::printf("%-20s %-12s %-12s %10.3f %8.3f %5d  %-24s %s\n", a.node_name().c_str(),
                a.state().c_str(), Ago(a.last_heartbeat_unix_ns()).c_str(), a.clock_offset_ms(),
                a.rtt_ms(), a.inventory().gpu_count(),
                addresses.empty() ? "-" : cmax::ctl::ForTerminal(addresses).c_str(),
                cmax::ctl::ForTerminal(detail).c_str());
  }
  if (resp.agents().empty()) std::printf("(no agents have connected)\n");
  return kOk;
}

int Follow(Client& client, const std::string& run_id, bool json) {
  auto ctx = client.Context(0);
  v1::WatchRunRequest req;
  req.set_run_id(run_id);
  auto reader = client.stub()->WatchRun(ctx.get(), req);
  RunProgress progress(stdout, !json && isatty(STDOUT_FILENO));
  v1::RunEvent ev;
  v1::RunInfo last;
  std::map<std::string, v1::TaskInfo> seen;  // by task id, as the events told
  while (reader->Read(&ev)) {
    if (ev.has_run()) last = ev.run();
    if (ev.has_task()) seen[ev.task().task_id()] = ev.task();
    if (json) {  // JSON lines only: nothing else on stdout
      std::printf("%s\n", cmax::ctl::ForTerminalJson(MessageToJsonLine(ev)).c_str());
      std::fflush(stdout);
    } else {
      progress.OnEvent(ev);
    }
  }
  grpc::Status st = reader->Finish();
  if (!st.ok() && st.error_code() != grpc::StatusCode::UNAVAILABLE) return RpcError(st, client);
  // The run's final state and every task, for the counts and the exit code
  // (the events may have missed tasks that never changed).
  v1::GetRunResponse final;
  bool have_final = false;
  if (st.ok()) {
    v1::GetRunRequest get;
    get.set_run_id(run_id);
    auto get_ctx = client.Context();
    have_final = client.stub()->GetRun(get_ctx.get(), get, &final).ok() && final.has_run();
  }
  if (json) {  // stdout stays JSON lines; the loud line goes to stderr
    std::vector<v1::TaskInfo> tasks;
    if (have_final) {
      tasks.assign(final.tasks().begin(), final.tasks().end());
    } else {
      for (const auto& [id, t] : seen) tasks.push_back(t);
    }
    const int code = RunExitCode(have_final ? final.run() : last, CountTasks(tasks),
                                 st.ok());
    if (code == kExitNothingMeasured) {
      std::fprintf(stderr, "%s\n", cmax::ctl::ForTerminal(NothingMeasuredLine(tasks)).c_str());
    }
    return code;
  }
  return progress.Finish(st.ok(), have_final ? &final : nullptr);
}

int CmdRun(Client& client, const std::vector<std::string>& args) {
  std::string plan_path;
  bool no_wait = false, json = false;
  ArgParser p("cmaxctl run --plan FILE [--no-wait] [--json]",
              "Submits a plan, prints the run id, then follows the run until it ends.");
  p.AddString("plan", &plan_path, "plan file (YAML)");
  p.AddFlag("no-wait", &no_wait, "print the run id and return");
  p.AddFlag("json", &json, "events as JSON lines");
  if (auto s = p.Parse(args); !s.ok()) return Usage(std::string(s.message()));
  if (p.help_requested()) return std::fputs(p.Help().c_str(), stdout), kOk;
  if (plan_path.empty()) return Usage("run needs --plan FILE");
  auto plan = LoadPlanFile(plan_path);
  if (!plan.ok()) {
    std::fprintf(stderr, "cmaxctl: %s\n", std::string(plan.status().message()).c_str());
    return kUsage;
  }
  v1::SubmitRunRequest req;
  *req.mutable_plan() = *plan;
  v1::SubmitRunResponse resp;
  auto ctx = client.Context();
  grpc::Status st = client.stub()->SubmitRun(ctx.get(), req, &resp);
  if (!st.ok()) return RpcError(st, client);
  if (json) {
    std::printf("%s\n", cmax::ctl::ForTerminalJson(MessageToJsonLine(resp)).c_str());
  } else {
    std::printf("%s\n",
                SubmittedLine(resp.run_id(), plan->name(), resp.tasks(), resp.nodes_size()).c_str());
  }
  std::fflush(stdout);
  if (no_wait) return kOk;
  return Follow(client, resp.run_id(), json);
}

int CmdRuns(Client& client, const std::vector<std::string>& args) {
  bool json = false;
  int64_t limit = 20;
  ArgParser p("cmaxctl runs [--limit N] [--json]", "Recent runs, newest first.");
  p.AddFlag("json", &json, "one JSON object");
  p.AddInt("limit", &limit, "how many (default 20)");
  if (auto s = p.Parse(args); !s.ok()) return Usage(std::string(s.message()));
  if (p.help_requested()) return std::fputs(p.Help().c_str(), stdout), kOk;
  v1::ListRunsRequest req;
  req.set_limit(static_cast<int>(limit));
  v1::ListRunsResponse resp;
  auto ctx = client.Context();
  grpc::Status st = client.stub()->ListRuns(ctx.get(), req, &resp);
  if (!st.ok()) return RpcError(st, client);
  if (json) {
    std::printf("%s\n", cmax::ctl::ForTerminalJson(MessageToJsonLine(resp, true)).c_str());
    return kOk;
  }
  // FAILED: crashed, hung or lost; a task that could not run (no GPU, a
  // missing tool) is no failure and has its own column.
  std::printf("%-26s %-16s %-10s %-13s %7s %6s %13s  %s\n", "RUN", "PLAN", "STATE", "TIER",
              "TASKS", "FAILED", "COULD_NOT_RUN", "CREATED");
  for (const auto& r : resp.runs()) {
    // A run whose records retention dropped keeps its scorecard; its
    // records (export, compare against them) are gone, and the line says so.
    std::printf("%-26s %-16s %-10s %-13s %3d/%-3d %6d %13d  %s%s\n", r.run_id().c_str(),
                r.plan_name().c_str(), r.state().c_str(),
                r.tier().empty() ? "-" : r.tier().c_str(), r.tasks_done(), r.tasks_total(),
                r.tasks_failed(), r.tasks_could_not_run(), FormatRfc3339(r.created_unix_ns()).c_str(),
                r.records_dropped_unix_ns() > 0 ? "  (records dropped by retention)" : "");
  }
  return kOk;
}

int CmdWatch(Client& client, const std::vector<std::string>& args) {
  bool json = false;
  ArgParser p("cmaxctl watch RUN [--json]", "Follows a run until it ends.");
  p.AddFlag("json", &json, "events as JSON lines");
  if (auto s = p.Parse(args); !s.ok()) return Usage(std::string(s.message()));
  if (p.help_requested()) return std::fputs(p.Help().c_str(), stdout), kOk;
  if (p.positional().size() != 1) return Usage("watch needs one RUN id");
  return Follow(client, p.positional()[0], json);
}

int CmdCancel(Client& client, const std::vector<std::string>& args) {
  ArgParser p("cmaxctl cancel RUN", "Stops every task of a run on every agent.");
  if (auto s = p.Parse(args); !s.ok()) return Usage(std::string(s.message()));
  if (p.help_requested()) return std::fputs(p.Help().c_str(), stdout), kOk;
  if (p.positional().size() != 1) return Usage("cancel needs one RUN id");
  v1::CancelRunRequest req;
  req.set_run_id(p.positional()[0]);
  v1::CancelRunResponse resp;
  auto ctx = client.Context();
  grpc::Status st = client.stub()->CancelRun(ctx.get(), req, &resp);
  if (!st.ok()) return RpcError(st, client);
  std::printf("run %s cancelled: %d tasks stopped\n", req.run_id().c_str(),
              resp.tasks_cancelled());
  return kOk;
}

int WriteOut(const std::string& path, const std::string& content) {
  if (path.empty() || path == "-") {
    // A scorecard holds agents' text (titles, stderr tails): on stdout,
    // controls are made visible (JSON has none raw); a file keeps it as is.
    const std::string shown = cmax::ctl::ForTerminal(content);
    std::fwrite(shown.data(), 1, shown.size(), stdout);
    return kOk;
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << content;
  out.close();
  if (!out) {
    std::fprintf(stderr, "cmaxctl: cannot write %s\n", path.c_str());
    return kFailed;
  }
  std::fprintf(stderr, "wrote %s (%zu bytes)\n", path.c_str(), content.size());
  return kOk;
}

int CmdReport(Client& client, const std::vector<std::string>& args) {
  std::string format = "md", out;
  ArgParser p("cmaxctl report RUN [--format json|md|html|junit] [-o FILE]", "The run's scorecard.");
  p.AddString("format", &format, "json, md, html or junit (JUnit XML; default md)");
  p.AddString("output", &out, "write to FILE instead of stdout", "o");
  if (auto s = p.Parse(args); !s.ok()) return Usage(std::string(s.message()));
  if (p.help_requested()) return std::fputs(p.Help().c_str(), stdout), kOk;
  if (p.positional().size() != 1) return Usage("report needs one RUN id");
  if (format != "json" && format != "md" && format != "html" && format != "markdown" &&
      format != "junit") {
    return Usage("--format must be json, md, html or junit");
  }
  v1::GetReportRequest req;
  req.set_run_id(p.positional()[0]);
  req.set_format(format);
  v1::GetReportResponse resp;
  auto ctx = client.Context();
  grpc::Status st = client.stub()->GetReport(ctx.get(), req, &resp);
  if (!st.ok()) return RpcError(st, client);
  return WriteOut(out, resp.content());
}

int CmdHistory(Client& client, const std::vector<std::string>& args) {
  bool json = false;
  ArgParser p(
      "cmaxctl history [NODE] [--json]",
      "A node's history from every stored run, or the fleet's (docs/history.md).");
  p.AddFlag("json", &json, "one JSON object (GetHistoryResponse)");
  if (auto s = p.Parse(args); !s.ok()) return Usage(std::string(s.message()));
  if (p.help_requested()) return std::fputs(p.Help().c_str(), stdout), kOk;
  if (p.positional().size() > 1) return Usage("history takes at most one NODE");
  v1::GetHistoryRequest req;
  if (!p.positional().empty()) req.set_node(p.positional()[0]);
  v1::GetHistoryResponse resp;
  auto ctx = client.Context();
  grpc::Status st = client.stub()->GetHistory(ctx.get(), req, &resp);
  if (!st.ok()) return RpcError(st, client);
  // Agents' text (finding titles, reasons, node names): controls made visible.
  const std::string text = cmax::ctl::HistoryOutput(resp, !req.node().empty(), json);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kOk;
}

int CmdExport(Client& client, const std::vector<std::string>& args) {
  std::string out;
  ArgParser p("cmaxctl export RUN [-o FILE]",
              "Every stored record of a run as JSON lines (task id, attempt, rank, seq, node, "
              "suite, record, late).");
  p.AddString("output", &out, "write to FILE instead of stdout", "o");
  if (auto s = p.Parse(args); !s.ok()) return Usage(std::string(s.message()));
  if (p.help_requested()) return std::fputs(p.Help().c_str(), stdout), kOk;
  if (p.positional().size() != 1) return Usage("export needs one RUN id");
  FILE* f = stdout;
  if (!out.empty() && out != "-") {
    f = std::fopen(out.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "cmaxctl: cannot write %s\n", out.c_str());
      return kFailed;
    }
  }
  auto ctx = client.Context(0);
  v1::ExportRequest req;
  req.set_run_id(p.positional()[0]);
  auto reader = client.stub()->Export(ctx.get(), req);
  v1::ExportedRecord r;
  int64_t n = 0;
  while (reader->Read(&r)) {
    // To a terminal or a file alike: the same JSON, controls as escapes.
    std::string line = cmax::ctl::ForTerminalJson(MessageToJsonLine(r));
    line.push_back('\n');
    std::fwrite(line.data(), 1, line.size(), f);
    ++n;
  }
  grpc::Status st = reader->Finish();
  if (f != stdout) {
    std::fclose(f);
    std::fprintf(stderr, "wrote %lld records to %s\n", static_cast<long long>(n), out.c_str());
  }
  if (!st.ok()) return RpcError(st, client);
  return kOk;
}

}  // namespace
}  // namespace cmax::ctl

int main(int argc, char** argv) {
  using namespace cmax::ctl;
  ClientOptions options;
  if (const char* e = std::getenv("CMAX_COORDINATOR"); e && *e) options.coordinator = e;
  if (const char* e = std::getenv("CMAX_TOKEN_FILE"); e && *e) options.token_file = e;
  int i = 1;
  for (; i < argc; ++i) {
    std::string a = argv[i];
    if (a.rfind("--", 0) != 0 && a != "-h") break;
    if (a == "-h" || a == "--help") return FullUsage("");
    if (a == "--version") {
      std::printf("cmaxctl %s\n", cmax::kCmaxVersion);
      return kOk;
    }
    if (a == "--allow-insecure") {
      options.allow_insecure = true;
      continue;
    }
    std::string name = a, value;
    if (size_t eq = a.find('='); eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return FullUsage(absl::StrCat(a, " needs a value"));
    }
    if (name == "--coordinator") options.coordinator = value;
    else if (name == "--token-file") options.token_file = value;
    else if (name == "--tls-ca") options.tls_ca = value;
    else if (name == "--tls-cert") options.tls_cert = value;
    else if (name == "--tls-key") options.tls_key = value;
    else return FullUsage(absl::StrCat("unknown option ", name));
  }
  if (options.token_file.empty() && access(kDefaultTokenFile, R_OK) == 0) {
    options.token_file = kDefaultTokenFile;
  }
  if (i >= argc) return FullUsage("no command given");
  std::string command = argv[i];
  std::vector<std::string> args(argv + i + 1, argv + argc);
  // These read scorecards; rank and compare --files need no coordinator.
  if (command == "compare") return CmdCompare(options, args);
  if (command == "baseline") return CmdBaseline(options, args);
  if (command == "rank") return CmdRank(args);
  auto client = Client::Create(options);
  if (!client.ok()) {
    std::fprintf(stderr, "cmaxctl: %s\n", std::string(client.status().message()).c_str());
    return kUsage;
  }
  Client& c = **client;
  if (command == "agents") return CmdAgents(c, args);
  if (command == "run") return CmdRun(c, args);
  if (command == "runs") return CmdRuns(c, args);
  if (command == "watch") return CmdWatch(c, args);
  if (command == "cancel") return CmdCancel(c, args);
  if (command == "report") return CmdReport(c, args);
  if (command == "export") return CmdExport(c, args);
  if (command == "schedule") return CmdSchedule(c, args);
  if (command == "remediation") return CmdRemediation(c, args);
  if (command == "history") return CmdHistory(c, args);
  if (command == "help") return FullUsage("");
  return FullUsage(absl::StrCat("unknown command '", command, "'"));
}
