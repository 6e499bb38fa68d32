// The coordinator core's side of the fault loop: the passive watch's records
// (stored once, acknowledged once durable, findings handed to the incident
// manager), the manager's view of this core (IncidentHooksImpl), its policy
// and fencer, and the operators' commands. Core thread only.
#include <fstream>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/plan_parser.h"
#include "common/status_macros.h"
#include "common/subprocess.h"
#include "common/time_util.h"
#include "coordinator/core.h"
#include "coordinator/remediation/verify_plans.h"

namespace cmax::coordinator {
namespace {

std::shared_ptr<spdlog::logger> Log() { return GetLogger("remediation"); }

// The policy's fencer; the programs are resolved on PATH now, so a missing
// one fails the fence with its name rather than at exec.
std::unique_ptr<remediation::Fencer> FencerFor(const remediation::Policy& policy,
                                               const CoreOptions& options) {
  auto resolve = [](const std::string& name) {
    std::string found = FindExecutable(name);
    return found.empty() ? name : found;
  };
  return remediation::MakeFencer(policy, resolve(options.scontrol), resolve(options.kubectl));
}

absl::StatusOr<remediation::Policy> ReadPolicy(const std::string& path) {
  if (path.empty()) return remediation::ParsePolicy("", "no --remediation-policy: the defaults");
  return remediation::LoadPolicy(path);
}

}  // namespace

absl::Status CoordinatorCore::InitRemediation() {
  CMAX_ASSIGN_OR_RETURN(remediation::Policy policy, ReadPolicy(options_.remediation_policy));
  std::unique_ptr<remediation::Fencer> fencer = FencerFor(policy, options_);
  remediation::IncidentOptions o;
  o.escalations_dir = options_.data_dir + "/escalations";
  o.webhook_poster = options_.webhook_poster;
  Log()->info("remediation: {} ({}), fence {}, {} rule(s)", remediation::ModeName(policy.mode),
              policy.source, remediation::FenceKindName(policy.fence), policy.rules.size());
  incidents_ = std::make_unique<remediation::IncidentManager>(&incident_hooks_, std::move(policy),
                                                              std::move(fencer), o);
  CMAX_ASSIGN_OR_RETURN(std::vector<v1::RemediationIncident> stored, store_->LoadIncidents());
  incidents_->Load(std::move(stored), NowUnixNs());
  return absl::OkStatus();
}

void CoordinatorCore::OnWatch(AgentSession* session, const std::string& node,
                              const v1::WatchBatch& batch) {
  if (batch.records_size() == 0 || batch.epoch().empty() || batch.epoch().size() > 80) return;
  const int64_t now = NowUnixNs();
  std::vector<std::pair<int64_t, const v1::Record*>> rows;
  int64_t next = 0;
  for (const auto& w : batch.records()) {
    rows.emplace_back(w.seq(), &w.record());
    next = std::max(next, w.seq() + 1);
  }
  if (absl::Status s = store_->PutWatchRecords(node, batch.epoch(), rows, now); !s.ok()) {
    Log()->error("agent {}: storing watch records: {}", node, std::string(s.message()));
    session->Close("the coordinator could not store the watch's records");
    return;
  }
  watch_records_ += batch.records_size();
  // The node's clock: offset = agent - coordinator (registry.h).
  const AgentEntry* agent = registry_.Find(node);
  const int64_t offset = agent ? static_cast<int64_t>(agent->offset_ns) : 0;
  for (const auto& w : batch.records()) {
    if (!w.record().has_finding()) continue;
    const v1::Finding& f = w.record().finding();
    int64_t signal = 0;
    if (auto it = f.labels().find("signal_unix_ns");
        it == f.labels().end() || !absl::SimpleAtoi(it->second, &signal)) {
      signal = w.record().time_unix_ns();
    }
    incidents_->OnFinding(node, f, signal > 0 ? signal - offset : now, now);
  }
  v1::CoordinatorMessage ack;
  ack.mutable_watch_ack()->set_epoch(batch.epoch());
  ack.mutable_watch_ack()->set_next_seq(next);
  SendAck(sessions_.count(session) ? sessions_[session] : nullptr, session, ack);
}

absl::StatusOr<v1::RemediationStatus> CoordinatorCore::HandleGetRemediation(
    const v1::GetRemediationRequest& request) {
  return incidents_->Status(request.node(), request.include_closed());
}

absl::StatusOr<v1::RemediationStatus> CoordinatorCore::HandleUpdateRemediation(
    const v1::UpdateRemediationRequest& request, const std::string& by) {
  const int64_t now = NowUnixNs();
  absl::Status s;
  switch (request.command()) {
    case v1::REMEDIATION_PAUSE: s = incidents_->Pause(by); break;
    case v1::REMEDIATION_RESUME: s = incidents_->Resume(by, now); break;
    case v1::REMEDIATION_APPROVE: s = incidents_->Approve(request.incident_id(), by, now); break;
    case v1::REMEDIATION_DISMISS: s = incidents_->Dismiss(request.incident_id(), by, now); break;
    case v1::REMEDIATION_RELOAD: {
      auto policy = ReadPolicy(options_.remediation_policy);
      if (!policy.ok()) {
        incidents_->SetPolicyError(std::string(policy.status().message()));
        Log()->error("remediation policy refused, the previous one stays in force: {}",
                     std::string(policy.status().message()));
        return policy.status();
      }
      std::unique_ptr<remediation::Fencer> fencer = FencerFor(*policy, options_);
      Log()->warn("remediation policy reloaded by {}: {}", by, remediation::ModeName(policy->mode));
      incidents_->SetPolicy(std::move(*policy), std::move(fencer));
      break;
    }
    default:
      return absl::InvalidArgumentError("command must be pause, resume, approve, dismiss or reload");
  }
  if (!s.ok()) return s;
  Checkpoint();
  return incidents_->Status("", false);
}

// ------------------------------------------------------------- hooks

int CoordinatorCore::IncidentHooksImpl::FleetSize() {
  return static_cast<int>(core_->registry_.All().size());
}

bool CoordinatorCore::IncidentHooksImpl::Connected(const std::string& node) {
  return core_->registry_.IsConnected(node);
}

int CoordinatorCore::IncidentHooksImpl::GpuCount(const std::string& node) {
  const AgentEntry* a = core_->registry_.Find(node);
  return a ? a->inventory.gpu_count() : 0;
}

bool CoordinatorCore::IncidentHooksImpl::SendAction(const std::string& node,
                                                    const v1::RemediationAction& action) {
  if (!core_->registry_.IsConnected(node)) return false;
  v1::CoordinatorMessage m;
  *m.mutable_remediate() = action;
  core_->SendTo(node, m);
  return true;
}

absl::StatusOr<std::string> CoordinatorCore::IncidentHooksImpl::StartVerifyRun(
    const std::string& node, const std::string& incident_id) {
  const CoreOptions& o = core_->options_;
  std::string text, source;
  if (o.verify_plan.empty()) {
    text = remediation::VerifyPlanYaml(GpuCount(node) > 0);
    source = GpuCount(node) > 0 ? "(built-in verify-gpu.yaml)" : "(built-in verify-cpu.yaml)";
  } else {
    std::ifstream in(o.verify_plan);
    if (!in) return absl::NotFoundError(absl::StrCat("--verify-plan ", o.verify_plan, ": cannot read"));
    std::stringstream ss;
    ss << in.rdbuf();
    text = ss.str();
    source = o.verify_plan;
  }
  CMAX_ASSIGN_OR_RETURN(v1::Plan plan, ParsePlan(text, source));
  plan.set_name(absl::StrCat(plan.name(), " ", incident_id));
  // The incident's node alone, whatever the plan selects.
  for (v1::SuiteSpec& s : *plan.mutable_suites()) {
    s.mutable_nodes()->Clear();
    s.mutable_nodes()->add_names(node);
  }
  std::vector<std::string> only = {node};
  CMAX_ASSIGN_OR_RETURN(v1::SubmitRunResponse started, core_->StartRun(plan, &only, ""));
  return started.run_id();
}

void CoordinatorCore::IncidentHooksImpl::Persist(const v1::RemediationIncident& incident) {
  if (absl::Status s = core_->store_->PutIncident(incident); !s.ok()) {
    Log()->error("storing incident {}: {}", incident.incident_id(), std::string(s.message()));
  }
}

}  // namespace cmax::coordinator
