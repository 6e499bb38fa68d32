#include "coordinator/ctl/remediation.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/args.h"
#include "common/record_io.h"
#include "common/time_util.h"
#include "coordinator/ctl/progress.h"

namespace cmax::ctl {
namespace {

constexpr char kUsage[] =
    R"(usage: cmaxctl remediation status [--node NODE] [--all] [--json]
       cmaxctl remediation pause|resume|reload
       cmaxctl remediation approve|dismiss INCIDENT

The fault loop: incidents opened by the nodes' passive watch, what was done
about each (fence, steps, verify, return or escalate) and how long each took.
pause, resume, approve, dismiss and reload need the admin role.
)";

int Usage(const std::string& error) {
  std::fprintf(stderr, "cmaxctl remediation: %s\n\n%s", error.c_str(), kUsage);
  return kExitUsage;
}

// Whole seconds are plenty here (progress.h).
std::string Time(int64_t unix_ns) { return WholeSecondsTime(unix_ns); }

std::string Seconds(int64_t from, int64_t to) {
  if (from <= 0 || to < from) return "-";
  return absl::StrFormat("%.1f s", static_cast<double>(to - from) / 1e9);
}

std::string StateName(v1::IncidentState s) {
  std::string name = v1::IncidentState_Name(s);
  if (name.rfind("INCIDENT_", 0) == 0) name = name.substr(9);
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return name;
}

void AppendIncident(const v1::RemediationIncident& i, std::string* out) {
  absl::StrAppend(out, i.incident_id(), "  ", ForTerminal(i.node()), "  ", StateName(i.state()),
                  i.dry_run() ? " (dry-run)" : "", "\n");
  absl::StrAppend(out, "    ", ForTerminal(i.check_id()), " ", ForTerminal(i.subject()), ": ",
                  ForTerminal(i.title()), "\n");
  if (!i.reason().empty()) absl::StrAppend(out, "    why: ", ForTerminal(i.reason()), "\n");
  absl::StrAppend(out, "    plan: ", ForTerminal(i.plan()),
                  i.rule_line() > 0 ? absl::StrCat(" (policy line ", i.rule_line(), ")") : "", "\n");
  const int64_t repaired = i.state() == v1::INCIDENT_RETURNED ? i.closed_unix_ns() : 0;
  absl::StrAppend(out, "    signal ", Time(i.signal_unix_ns()), "; detect ",
                  Seconds(i.signal_unix_ns(), i.detected_unix_ns()), ", quarantine ",
                  Seconds(i.detected_unix_ns(), i.quarantined_unix_ns()), ", repair ",
                  Seconds(i.detected_unix_ns(), repaired), "\n");
  for (const auto& s : i.steps()) {
    absl::StrAppendFormat(out, "    %d %-12s %-8s %s", s.step(), s.kind(), s.outcome(),
                          ForTerminal(s.detail()));
    if (s.started_unix_ns() > 0 && s.ended_unix_ns() >= s.started_unix_ns()) {
      absl::StrAppend(out, " (", Seconds(s.started_unix_ns(), s.ended_unix_ns()), ")");
    }
    if (!s.message().empty()) absl::StrAppend(out, ": ", ForTerminal(s.message()));
    if (!s.by().empty() && s.by() != "cmax (policy)") absl::StrAppend(out, " [", ForTerminal(s.by()), "]");
    absl::StrAppend(out, "\n");
  }
}

int Status(Client& client, const std::vector<std::string>& args) {
  std::string node;
  bool all = false, json = false;
  ArgParser p("cmaxctl remediation status [--node NODE] [--all] [--json]",
              "The fault loop's mode and breaker, and its incidents: open ones, or with --all the "
              "closed ones too, each with its timings and steps.");
  p.AddString("node", &node, "only this node's incidents");
  p.AddFlag("all", &all, "closed incidents too (returned, escalated, dismissed)");
  p.AddFlag("json", &json, "one JSON object");
  if (auto s = p.Parse(args); !s.ok()) return Usage(std::string(s.message()));
  if (p.help_requested()) return std::fputs(p.Help().c_str(), stdout), kExitOk;
  if (!p.positional().empty()) return Usage("status takes no positional argument");
  v1::GetRemediationRequest req;
  req.set_node(node);
  req.set_include_closed(all);
  v1::RemediationStatus resp;
  auto ctx = client.Context();
  grpc::Status st = client.stub()->GetRemediation(ctx.get(), req, &resp);
  if (!st.ok()) return RpcError(st, client);
  if (json) {
    std::printf("%s\n", ForTerminalJson(MessageToJsonLine(resp, true)).c_str());
    return kExitOk;
  }
  const std::string text = RemediationText(resp);
  std::fwrite(text.data(), 1, text.size(), stdout);
  return kExitOk;
}

int Update(Client& client, const std::string& action, const std::vector<std::string>& args) {
  ArgParser p(absl::StrCat("cmaxctl remediation ", action,
                           action == "approve" || action == "dismiss" ? " INCIDENT" : ""),
              "A change to the fault loop (admin role).");
  if (auto s = p.Parse(args); !s.ok()) return Usage(std::string(s.message()));
  if (p.help_requested()) return std::fputs(p.Help().c_str(), stdout), kExitOk;
  v1::UpdateRemediationRequest req;
  const bool takes_id = action == "approve" || action == "dismiss";
  if (takes_id != (p.positional().size() == 1) || p.positional().size() > 1) {
    return Usage(takes_id ? absl::StrCat(action, " needs one incident id")
                          : absl::StrCat(action, " takes no argument"));
  }
  if (takes_id) req.set_incident_id(p.positional()[0]);
  req.set_command(action == "pause"     ? v1::REMEDIATION_PAUSE
                  : action == "resume"  ? v1::REMEDIATION_RESUME
                  : action == "approve" ? v1::REMEDIATION_APPROVE
                  : action == "dismiss" ? v1::REMEDIATION_DISMISS
                                        : v1::REMEDIATION_RELOAD);
  v1::RemediationStatus resp;
  auto ctx = client.Context();
  grpc::Status st = client.stub()->UpdateRemediation(ctx.get(), req, &resp);
  if (!st.ok()) {
    if (st.error_code() == grpc::StatusCode::NOT_FOUND) {
      std::fprintf(stderr, "cmaxctl remediation %s: %s\n", action.c_str(),
                   ForTerminal(st.error_message()).c_str());
      return kExitUsage;
    }
    return RpcError(st, client);
  }
  std::printf("remediation %s: done; %s%s, %d node(s) in remediation\n", action.c_str(),
              resp.mode().c_str(), resp.paused() ? " (paused)" : "", resp.in_remediation());
  return kExitOk;
}

}  // namespace

std::string RemediationText(const v1::RemediationStatus& s) {
  std::string out = absl::StrCat(
      "remediation: ", s.mode(), s.paused() ? ", paused" : "", "; fence ", s.fence(),
      "; policy ", ForTerminal(s.policy()), "\n", "breaker: ", s.in_remediation(),
      " node(s) in remediation, at most ", s.max_nodes(), " and ", s.max_percent(),
      " % of the fleet", s.breaker_open() ? " — OPEN: new incidents wait" : "", "\n");
  if (!s.policy_error().empty()) {
    absl::StrAppend(&out, "last reload refused (the policy above stays): ",
                    ForTerminal(s.policy_error()), "\n");
  }
  if (s.incidents().empty()) {
    absl::StrAppend(&out, "(no incidents)\n");
    return out;
  }
  for (const auto& i : s.incidents()) AppendIncident(i, &out);
  return out;
}

int CmdRemediation(Client& client, const std::vector<std::string>& args) {
  if (args.empty()) return Usage("which? status, pause, resume, approve, dismiss or reload");
  const std::string& action = args[0];
  const std::vector<std::string> rest(args.begin() + 1, args.end());
  if (action == "-h" || action == "--help" || action == "help") {
    std::fputs(kUsage, stdout);
    return kExitOk;
  }
  if (action == "status") return Status(client, rest);
  if (action == "pause" || action == "resume" || action == "approve" || action == "dismiss" ||
      action == "reload") {
    return Update(client, action, rest);
  }
  return Usage(absl::StrCat("unknown remediation command '", action, "'"));
}

}  // namespace cmax::ctl
