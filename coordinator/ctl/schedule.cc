#include "coordinator/ctl/schedule.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/args.h"
#include "common/plan_parser.h"
#include "common/record_io.h"
#include "common/time_util.h"
#include "coordinator/ctl/progress.h"

namespace cmax::ctl {
namespace {

constexpr char kScheduleUsage[] =
    R"(usage: cmaxctl schedule add --plan FILE --every DURATION [--nodes SELECTOR]
                            [--only-idle] [--window HH:MM-HH:MM]
                            [--max-nodes-at-once N] [--json]
       cmaxctl schedule list [--json]
       cmaxctl schedule pause|resume|remove ID

Recurring runs of a plan, kept by the coordinator (they survive its
restarts). `cmaxctl schedule add --help` says what each option does.
)";

constexpr char kAddDescription[] =
    R"(Adds a schedule: a run of the plan every DURATION, started by the coordinator the
way `cmaxctl run` starts one. The plan file is read, checked and stored now: a later
edit of the file does not change the schedule (remove it and add it again). The first
slot comes one DURATION after this command; with --window it is the window's next
opening (tonight's, or now when inside it) and later slots keep its time of day.
Slots missed while the coordinator was down are run once, not once each. A slot whose previous run is still going is
skipped, and `schedule list` says so with the reason.)";

int Usage(const std::string& error) {
  std::fprintf(stderr, "cmaxctl schedule: %s\n\n%s", error.c_str(), kScheduleUsage);
  return kExitUsage;
}

// Whole seconds are plenty here (progress.h).
std::string Time(int64_t unix_ns) { return WholeSecondsTime(unix_ns); }

std::string Plain(const std::string& s) { return ForTerminal(s); }

int CmdAdd(Client& client, const std::vector<std::string>& args) {
  std::string plan_path, every, nodes, window;
  bool only_idle = false, json = false;
  int64_t max_nodes = 0;
  ArgParser p("cmaxctl schedule add --plan FILE --every DURATION [options]", kAddDescription);
  p.AddString("plan", &plan_path, "plan file (YAML), read and stored now");
  p.AddString("every", &every,
              "how often: a whole number and s, m, h or d (6h, 7d), from the coordinator's "
              "minimum (1h unless its --min-schedule-period says less) to 365d");
  p.AddString("nodes", &nodes,
              "which connected agents: all (default), NAME,NAME,... or regex:RE (RE2, full "
              "match on the node name); named nodes that are not connected at a slot are left "
              "for the next");
  p.AddFlag("only-idle", &only_idle,
            "at each slot ask Slurm (sinfo on the coordinator's host) which selected nodes "
            "are idle and run on those only; the rest wait for the next slot. Without "
            "Slurm the slot is skipped ('not measured: sinfo not found'), never run on all");
  p.AddString("window", &window,
              "start runs only inside this daily window, in UTC (02:00-06:00; 22:00-04:00 "
              "wraps past midnight); a slot due outside it waits for the next opening");
  p.AddInt("max-nodes-at-once", &max_nodes,
           "roll the plan through the selected nodes in waves of at most N nodes, one run a "
           "wave, the next when the previous run ends (default: all at once)");
  p.AddFlag("json", &json, "the new schedule as one JSON object");
  if (auto s = p.Parse(args); !s.ok()) return Usage(std::string(s.message()));
  if (p.help_requested()) return std::fputs(p.Help().c_str(), stdout), kExitOk;
  if (!p.positional().empty()) return Usage("add takes no positional argument");
  if (plan_path.empty()) return Usage("add needs --plan FILE");
  if (every.empty()) return Usage("add needs --every DURATION (e.g. 7d)");
  if (max_nodes < 0 || max_nodes > 100000) {
    return Usage("--max-nodes-at-once must be in [1, 100000]");
  }
  auto plan = LoadPlanFile(plan_path);
  if (!plan.ok()) {
    std::fprintf(stderr, "cmaxctl: %s\n", std::string(plan.status().message()).c_str());
    return kExitUsage;
  }
  v1::AddScheduleRequest req;
  auto* spec = req.mutable_spec();
  *spec->mutable_plan() = *plan;
  spec->set_every(every);
  spec->set_nodes(nodes);
  spec->set_only_idle(only_idle);
  spec->set_window(window);
  spec->set_max_nodes_at_once(static_cast<int32_t>(max_nodes));
  v1::AddScheduleResponse resp;
  auto ctx = client.Context();
  grpc::Status st = client.stub()->AddSchedule(ctx.get(), req, &resp);
  if (!st.ok()) return RpcError(st, client);
  const auto& s = resp.schedule();
  if (json) {
    std::printf("%s\n", ForTerminalJson(MessageToJsonLine(s)).c_str());
  } else {
    std::printf("schedule %s added: plan '%s' every %s; first slot %s\n",
                s.schedule_id().c_str(), Plain(plan->name()).c_str(), every.c_str(),
                Time(s.next_start_unix_ns()).c_str());
  }
  return kExitOk;
}

int CmdList(Client& client, const std::vector<std::string>& args) {
  bool json = false;
  ArgParser p("cmaxctl schedule list [--json]",
              "Every schedule: id, plan, every, window, state, its last run and how it ended, "
              "the next slot, and the latest skipped slots with their reasons.");
  p.AddFlag("json", &json, "one JSON object");
  if (auto s = p.Parse(args); !s.ok()) return Usage(std::string(s.message()));
  if (p.help_requested()) return std::fputs(p.Help().c_str(), stdout), kExitOk;
  if (!p.positional().empty()) return Usage("list takes no positional argument");
  v1::ListSchedulesResponse resp;
  auto ctx = client.Context();
  grpc::Status st = client.stub()->ListSchedules(ctx.get(), {}, &resp);
  if (!st.ok()) return RpcError(st, client);
  if (json) {
    std::printf("%s\n", ForTerminalJson(MessageToJsonLine(resp, true)).c_str());
    return kExitOk;
  }
  const std::string text = ScheduleListText(resp);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

int CmdUpdate(Client& client, const std::string& action, const std::vector<std::string>& args) {
  ArgParser p(absl::StrCat("cmaxctl schedule ", action, " ID"),
              action == "pause"    ? "Stops starting runs; a run under way goes on, the slot's "
                                     "later waves are dropped."
              : action == "resume" ? "Starts runs again; the first slot is the next one after now."
                                   : "Forgets the schedule; a run under way goes on, its runs "
                                     "stay in the store.");
  if (auto s = p.Parse(args); !s.ok()) return Usage(std::string(s.message()));
  if (p.help_requested()) return std::fputs(p.Help().c_str(), stdout), kExitOk;
  if (p.positional().size() != 1) return Usage(absl::StrCat(action, " needs one schedule ID"));
  v1::UpdateScheduleRequest req;
  req.set_schedule_id(p.positional()[0]);
  req.set_action(action == "pause"    ? v1::SCHEDULE_PAUSE
                 : action == "resume" ? v1::SCHEDULE_RESUME
                                      : v1::SCHEDULE_REMOVE);
  v1::UpdateScheduleResponse resp;
  auto ctx = client.Context();
  grpc::Status st = client.stub()->UpdateSchedule(ctx.get(), req, &resp);
  if (!st.ok()) return RpcError(st, client);
  const auto& s = resp.schedule();
  const std::string going =
      s.current_run_id().empty() ? "" : absl::StrCat("; its run ", s.current_run_id(), " goes on");
  if (action == "pause") {
    std::printf("schedule %s paused%s\n", s.schedule_id().c_str(), going.c_str());
  } else if (action == "resume") {
    std::printf("schedule %s resumed: next slot %s\n", s.schedule_id().c_str(),
                Time(s.next_start_unix_ns()).c_str());
  } else {
    std::printf("schedule %s removed%s\n", s.schedule_id().c_str(), going.c_str());
  }
  return kExitOk;
}

}  // namespace

std::string ScheduleListText(const v1::ListSchedulesResponse& list) {
  if (list.schedules().empty()) return "(no schedules)\n";
  std::string out = absl::StrFormat("%-8s %-16s %-6s %-17s %-7s %-21s %-26s %s\n", "ID", "PLAN",
                                    "EVERY", "WINDOW (UTC)", "STATE", "NEXT SLOT", "LAST RUN",
                                    "OUTCOME");
  for (const auto& s : list.schedules()) {
    const auto& spec = s.spec();
    std::string state = s.paused() ? "paused" : "active";
    std::string last = s.last_run_id().empty() ? "-" : s.last_run_id();
    std::string outcome = s.last_outcome().empty() ? "-" : s.last_outcome();
    absl::StrAppendFormat(&out, "%-8s %-16s %-6s %-17s %-7s %-21s %-26s %s\n", s.schedule_id(),
                          Plain(spec.plan().name()), spec.every(),
                          spec.window().empty() ? "any time" : spec.window(), state,
                          s.paused() ? "-" : Time(s.next_start_unix_ns()), last, Plain(outcome));
    std::vector<std::string> how;
    how.push_back(absl::StrCat("added by ",
                               s.added_by().empty() ? "(not recorded)" : s.added_by()));
    if (!spec.nodes().empty() && spec.nodes() != "all") how.push_back("nodes " + spec.nodes());
    if (spec.only_idle()) how.push_back("idle nodes only (Slurm)");
    if (spec.max_nodes_at_once() > 0) {
      how.push_back(absl::StrCat("at most ", spec.max_nodes_at_once(), " nodes at once"));
    }
    how.push_back(absl::StrCat(s.runs_started(), " runs started, ", s.failures(), " failed, ",
                               s.slots_skipped(), " slots skipped"));
    absl::StrAppend(&out, "    ", Plain(absl::StrJoin(how, "; ")), "\n");
    if (!s.current_run_id().empty()) {
      absl::StrAppend(&out, "    running: ", s.current_run_id(), " (wave ", s.wave(), " of ",
                      s.waves(), ": ", absl::StrJoin(s.current_nodes(), ", "), ")\n");
    } else if (s.probing()) {
      absl::StrAppend(&out, "    waiting for Slurm's answer (slot ", Time(s.pass_slot_unix_ns()),
                      ")\n");
    }
    if (s.pending_nodes_size() > 0) {
      absl::StrAppend(&out, "    next waves: ", s.pending_nodes_size(), " nodes\n");
    }
    constexpr int kShown = 5;
    const int first = std::max(0, s.skipped_size() - kShown);
    for (int i = first; i < s.skipped_size(); ++i) {
      const auto& k = s.skipped(i);
      absl::StrAppend(&out, "    ", k.slots() > 0 ? "skipped slot " : "slot ",
                      Time(k.slot_unix_ns()), k.slots() > 0 ? ": " : ", in part: ",
                      Plain(k.reason()), "\n");
    }
  }
  return out;
}

int CmdSchedule(Client& client, const std::vector<std::string>& args) {
  if (args.empty()) return Usage("which? add, list, pause, resume or remove");
  const std::string& action = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (action == "-h" || action == "--help" || action == "help") {
    std::fputs(kScheduleUsage, stdout);
    return kExitOk;
  }
  if (action == "add") return CmdAdd(client, rest);
  if (action == "list") return CmdList(client, rest);
  if (action == "pause" || action == "resume" || action == "remove") {
    return CmdUpdate(client, action, rest);
  }
  return Usage(absl::StrCat("unknown schedule command '", action, "'"));
}

}  // namespace cmax::ctl
