#include "coordinator/remediation/incidents.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "common/atomic_file.h"
#include "common/logging.h"
#include "common/record_io.h"
#include "common/subprocess.h"

namespace cmax::remediation {
namespace {

std::shared_ptr<spdlog::logger> Log() { return GetLogger("remediation"); }

constexpr char kPending[] = "pending";
constexpr char kPlanned[] = "planned";
constexpr char kRunning[] = "running";
constexpr char kDone[] = "done";
constexpr char kFailed[] = "failed";
constexpr char kSkipped[] = "skipped";
constexpr char kSending[] = "sending";  // the webhook, on the worker

bool InRemediationState(v1::IncidentState s) {
  return s == v1::INCIDENT_QUARANTINED || s == v1::INCIDENT_REMEDIATING ||
         s == v1::INCIDENT_VERIFYING;
}

std::string FenceDetail(FenceKind kind) {
  switch (kind) {
    case FenceKind::kSlurm: return "drain the node in Slurm";
    case FenceKind::kKubernetes: return "cordon and taint the node in Kubernetes";
    case FenceKind::kNone: break;
  }
  return "none (fence: none; the node stays schedulable)";
}

std::string StepDetail(const Step& s) {
  switch (s.kind) {
    case StepKind::kCollect: return "collect evidence (kernel log, journal, nvidia-bug-report)";
    case StepKind::kRestartUnit: return absl::StrCat("restart ", s.unit);
    case StepKind::kResetGpu:
      return s.gpu_index >= 0 ? absl::StrCat("reset GPU ", s.gpu_index)
                              : "reset the GPU the finding names";
    case StepKind::kReboot: return "reboot the fenced, idle node";
    case StepKind::kVerify: return "verify: health and a short burn-in on the node";
    case StepKind::kEscalate: return "escalate to a person";
  }
  return "";
}

std::optional<int> XidOf(const v1::Finding& f) {
  auto it = f.labels().find("xid");
  int xid = 0;
  if (it == f.labels().end() || !absl::SimpleAtoi(it->second, &xid)) return std::nullopt;
  return xid;
}

v1::RemediationActionKind ActionKind(const std::string& kind) {
  if (kind == "collect") return v1::REMEDIATION_COLLECT;
  if (kind == "restart_unit") return v1::REMEDIATION_RESTART_UNIT;
  if (kind == "reset_gpu") return v1::REMEDIATION_RESET_GPU;
  if (kind == "reboot") return v1::REMEDIATION_REBOOT;
  return v1::REMEDIATION_ACTION_UNSPECIFIED;
}

double Seconds(int64_t from, int64_t to) {
  return from > 0 && to >= from ? static_cast<double>(to - from) / 1e9 : -1;
}

}  // namespace

IncidentTimings TimingsOf(const v1::RemediationIncident& i) {
  IncidentTimings t;
  t.detect_s = Seconds(i.signal_unix_ns(), i.detected_unix_ns());
  t.quarantine_s = Seconds(i.detected_unix_ns(), i.quarantined_unix_ns());
  if (i.state() == v1::INCIDENT_RETURNED) t.repair_s = Seconds(i.detected_unix_ns(), i.closed_unix_ns());
  return t;
}

std::string IncidentStateName(v1::IncidentState s) {
  switch (s) {
    case v1::INCIDENT_PLANNED: return "planned";
    case v1::INCIDENT_HELD: return "held";
    case v1::INCIDENT_QUARANTINED: return "quarantined";
    case v1::INCIDENT_REMEDIATING: return "remediating";
    case v1::INCIDENT_VERIFYING: return "verifying";
    case v1::INCIDENT_RETURNED: return "returned";
    case v1::INCIDENT_ESCALATED: return "escalated";
    case v1::INCIDENT_DISMISSED: return "dismissed";
    default: break;
  }
  return "unknown";
}

bool IsClosed(v1::IncidentState s) {
  return s == v1::INCIDENT_RETURNED || s == v1::INCIDENT_ESCALATED || s == v1::INCIDENT_DISMISSED;
}

IncidentManager::IncidentManager(IncidentHooks* hooks, Policy policy,
                                 std::unique_ptr<Fencer> fencer, IncidentOptions options)
    : hooks_(hooks), policy_(std::move(policy)), fencer_(std::move(fencer)),
      options_(std::move(options)) {
  worker_ = std::thread([this] { WorkerLoop(); });
}

IncidentManager::~IncidentManager() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  worker_.join();
}

void IncidentManager::SetPolicy(Policy policy, std::unique_ptr<Fencer> fencer) {
  policy_ = std::move(policy);
  fencer_ = std::move(fencer);
  policy_error_.clear();
}

void IncidentManager::Load(std::vector<v1::RemediationIncident> stored, int64_t now_ns) {
  for (v1::RemediationIncident& inc : stored) {
    const std::string id = inc.incident_id();
    sequence_ = std::max<int64_t>(sequence_, static_cast<int64_t>(incidents_.size()) + 1);
    v1::RemediationIncident& kept = incidents_[id] = std::move(inc);
    for (auto& s : *kept.mutable_steps()) {
      if (s.outcome() != kSending) continue;
      s.set_outcome(kFailed);
      s.set_message("the coordinator stopped before the webhook answered");
    }
    if (IsClosed(kept.state())) continue;
    open_by_node_[kept.node()] = id;
    if (InRemediationState(kept.state())) {
      Escalate(kept, "the coordinator restarted during remediation: a person decides", now_ns);
    }
  }
}

// ------------------------------------------------------------ opening

void IncidentManager::OnFinding(const std::string& node, const v1::Finding& f, int64_t signal_ns,
                                int64_t now_ns) {
  if (f.not_measured()) return;
  FindingKey key{f.check_id(), f.suite(), XidOf(f), f.severity()};
  if (!OpensIncident(policy_, key)) return;
  if (auto it = open_by_node_.find(node); it != open_by_node_.end()) {
    v1::RemediationIncident& inc = incidents_[it->second];
    if (static_cast<size_t>(inc.findings_size()) < options_.max_findings) {
      *inc.add_findings() = f;
      Save(inc);
    }
    return;
  }
  v1::RemediationIncident& inc = Open(node, f, signal_ns, now_ns);
  Plan(inc, policy_.Match(key));
  if (inc.dry_run()) {
    inc.set_state(v1::INCIDENT_PLANNED);
    inc.set_reason("dry-run: the steps are recorded, nothing was done (mode: enforce, or approve)");
    Log()->warn("incident {} on {}: {} — planned (dry-run): {}", inc.incident_id(), node,
                inc.title(), inc.plan());
    Save(inc);
    return;
  }
  Log()->warn("incident {} on {}: {} — {}", inc.incident_id(), node, inc.title(), inc.plan());
  Start(inc, now_ns);
}

v1::RemediationIncident& IncidentManager::Open(const std::string& node, const v1::Finding& f,
                                    int64_t signal_ns, int64_t now_ns) {
  const std::string id = absl::StrCat(
      "inc-", absl::FormatTime("%Y%m%dT%H%M%S", absl::FromUnixNanos(now_ns), absl::UTCTimeZone()),
      "-", ++sequence_);
  v1::RemediationIncident& inc = incidents_[id];
  inc.set_incident_id(id);
  inc.set_node(node);
  inc.set_check_id(f.check_id());
  inc.set_subject(f.subject());
  inc.set_title(f.title());
  inc.set_severity(f.severity());
  inc.set_dry_run(policy_.mode == Mode::kDryRun);
  inc.set_fence(FenceKindName(policy_.fence));
  inc.set_signal_unix_ns(signal_ns > 0 && signal_ns <= now_ns ? signal_ns : now_ns);
  inc.set_detected_unix_ns(now_ns);
  *inc.add_findings() = f;
  open_by_node_[node] = id;
  return inc;
}

void IncidentManager::Plan(v1::RemediationIncident& inc, const Rule* rule) {
  const char* outcome = inc.dry_run() ? kPlanned : kPending;
  auto add = [&](const std::string& kind, const std::string& detail) {
    v1::IncidentStep* s = inc.add_steps();
    s->set_step(inc.steps_size() - 1);
    s->set_kind(kind);
    s->set_detail(detail);
    s->set_outcome(outcome);
    s->set_by("cmax (policy)");
  };
  add("fence", FenceDetail(policy_.fence));
  const int flaps = FlapCount(inc);
  if (flaps + 1 >= policy_.flap.count && policy_.flap.count > 1) {
    inc.set_plan(absl::StrCat("flapping: failure ", flaps + 1, " of ", inc.check_id(), " within ",
                              absl::FormatDuration(policy_.flap.window), " → escalate"));
    add("escalate", inc.plan());
    return;
  }
  if (rule == nullptr) {
    inc.set_plan(absl::StrCat("no rule matches ", inc.check_id(), " → escalate"));
    add("escalate", inc.plan());
    return;
  }
  inc.set_rule_line(rule->line);
  inc.set_plan(DescribeSteps(*rule));
  for (const Step& s : rule->steps) add(StepKindName(s.kind), StepDetail(s));
  if (rule->steps.back().kind != StepKind::kEscalate) add("return", "return the node to service");
}

int IncidentManager::FlapCount(const v1::RemediationIncident& inc) const {
  const int64_t since = inc.detected_unix_ns() - absl::ToInt64Nanoseconds(policy_.flap.window);
  int n = 0;
  for (const auto& [id, other] : incidents_) {
    if (id == inc.incident_id() || other.node() != inc.node()) continue;
    if (other.check_id() == inc.check_id() && other.detected_unix_ns() >= since &&
        other.state() != v1::INCIDENT_DISMISSED) {
      ++n;
    }
  }
  return n;
}

// ------------------------------------------------------------- running

int IncidentManager::InRemediation() const {
  int n = 0;
  for (const auto& [id, inc] : incidents_) n += InRemediationState(inc.state());
  return n;
}

bool IncidentManager::BreakerAllows() const {
  const int fleet = std::max(1, hooks_->FleetSize());
  // The percentage is floored but never below one node, so a small cluster
  // can still repair one node at a time; max_nodes bounds it in absolute terms.
  const int by_percent = std::max(1, fleet * policy_.breaker.max_percent / 100);
  return InRemediation() < std::min(policy_.breaker.max_nodes, by_percent);
}

void IncidentManager::Start(v1::RemediationIncident& inc, int64_t now_ns) {
  if (paused_) {
    inc.set_state(v1::INCIDENT_HELD);
    inc.set_reason(absl::StrCat("remediation paused by ", paused_by_));
  } else if (!BreakerAllows()) {
    std::string reason = absl::StrCat("breaker open: ", InRemediation(),
                                      " node(s) in remediation (at most ", policy_.breaker.max_nodes,
                                      ", ", policy_.breaker.max_percent, " % of ",
                                      hooks_->FleetSize(), ")");
    // Held again on every round while the breaker stays open: said once.
    if (inc.state() == v1::INCIDENT_HELD && inc.reason() == reason) return;
    inc.set_state(v1::INCIDENT_HELD);
    inc.set_reason(std::move(reason));
    Log()->warn("incident {} on {}: held, {}", inc.incident_id(), inc.node(), inc.reason());
  } else {
    inc.set_state(v1::INCIDENT_QUARANTINED);
    inc.set_reason("");
    Advance(inc, now_ns);
    return;
  }
  Save(inc);
}

v1::IncidentStep* IncidentManager::Current(v1::RemediationIncident& inc) {
  for (auto& s : *inc.mutable_steps()) {
    if (s.outcome() == kRunning || s.outcome() == kPending) return &s;
  }
  return nullptr;
}

void IncidentManager::Advance(v1::RemediationIncident& inc, int64_t now_ns) {
  v1::IncidentStep* step = Current(inc);
  if (step == nullptr) {
    Finish(inc, v1::INCIDENT_RETURNED, now_ns);
    return;
  }
  if (step->outcome() == kRunning) return;  // waiting for its result
  RunStep(inc, *step, now_ns);
}

void IncidentManager::RunStep(v1::RemediationIncident& inc, v1::IncidentStep& step, int64_t now_ns) {
  step.set_started_unix_ns(now_ns);
  const std::string& kind = step.kind();
  if (kind == "fence") {
    if (policy_.fence == FenceKind::kNone) {
      step.set_outcome(kDone);
      step.set_message("fence: none; the node stays schedulable");
      step.set_ended_unix_ns(now_ns);
      inc.set_quarantined_unix_ns(now_ns);
      Advance(inc, now_ns);
      return;
    }
    step.set_outcome(kRunning);
    Post(inc, Job::kFence);
  } else if (kind == "return") {
    if (!inc.fence_ours()) {
      step.set_outcome(kDone);
      step.set_message("no fence of cmax's to lift");
      step.set_ended_unix_ns(now_ns);
      Finish(inc, v1::INCIDENT_RETURNED, now_ns);
      return;
    }
    step.set_outcome(kRunning);
    Post(inc, Job::kLift);
  } else if (kind == "escalate") {
    Escalate(inc, step.detail(), now_ns);
    return;
  } else if (kind == "verify") {
    auto run = hooks_->StartVerifyRun(inc.node(), inc.incident_id());
    if (!run.ok()) {
      step.set_outcome(kFailed);
      step.set_message(std::string(run.status().message()));
      Escalate(inc, absl::StrCat("verify could not start: ", run.status().message()), now_ns);
      return;
    }
    step.set_outcome(kRunning);
    step.set_message(absl::StrCat("run ", *run));
    inc.set_verify_run_id(*run);
    inc.set_state(v1::INCIDENT_VERIFYING);
    by_verify_run_[*run] = inc.incident_id();
    step_deadline_[inc.incident_id()] = now_ns + absl::ToInt64Nanoseconds(options_.verify_timeout);
  } else {
    v1::RemediationAction a;
    a.set_incident_id(inc.incident_id());
    a.set_step(step.step());
    a.set_kind(ActionKind(kind));
    a.set_reason(inc.title());
    if (kind == "restart_unit") a.set_unit(step.detail().substr(std::string("restart ").size()));
    if (kind == "reset_gpu") {
      int gpu = -1;
      if (!absl::SimpleAtoi(step.detail().substr(std::string("reset GPU ").size()), &gpu)) {
        auto it = inc.findings(0).labels().find("gpu");
        if (it == inc.findings(0).labels().end() || !absl::SimpleAtoi(it->second, &gpu)) {
          gpu = hooks_->GpuCount(inc.node()) == 1 ? 0 : -1;
        }
      }
      if (gpu < 0) {
        step.set_outcome(kFailed);
        Escalate(inc, "reset_gpu: the finding names no GPU index on a node with several GPUs", now_ns);
        return;
      }
      a.set_gpu_index(gpu);
    }
    inc.set_state(v1::INCIDENT_REMEDIATING);
    const absl::Duration limit = kind == "reboot" ? options_.reboot_timeout : options_.step_timeout;
    step_deadline_[inc.incident_id()] = now_ns + absl::ToInt64Nanoseconds(limit);
    if (!hooks_->SendAction(inc.node(), a)) {
      step.set_message("waiting for the node's agent to connect");
      Save(inc);
      return;  // stays pending; OnConnected sends it
    }
    step.set_outcome(kRunning);
    Log()->info("incident {} on {}: step {} {}", inc.incident_id(), inc.node(), step.step(),
                step.detail());
  }
  Save(inc);
}

void IncidentManager::Escalate(v1::RemediationIncident& inc, const std::string& why, int64_t now_ns) {
  for (auto& s : *inc.mutable_steps()) {
    if (s.outcome() == kRunning) {
      s.set_outcome(kFailed);
      s.set_ended_unix_ns(now_ns);
    } else if (s.outcome() == kPending) {
      s.set_outcome(s.kind() == "escalate" ? kDone : kSkipped);
      if (s.kind() == "escalate") {
        s.set_started_unix_ns(now_ns);
        s.set_ended_unix_ns(now_ns);
      }
    }
  }
  inc.set_reason(why);
  Log()->error("incident {} on {}: escalated to a person: {} (the node stays fenced)",
               inc.incident_id(), inc.node(), why);
  if (!policy_.escalate.webhook.empty()) AddWebhookStep(inc, now_ns);
  Finish(inc, v1::INCIDENT_ESCALATED, now_ns);
  if (!policy_.escalate.command.empty()) Post(inc, Job::kEscalate);
  if (!policy_.escalate.webhook.empty()) Post(inc, Job::kWebhook);
}

// The webhook's own step, "sending" until the worker's answer (Take); not
// pending, so an approved escalated incident never waits on it.
void IncidentManager::AddWebhookStep(v1::RemediationIncident& inc, int64_t now_ns) {
  auto url = ParseWebhookUrl(policy_.escalate.webhook);
  v1::IncidentStep* s = inc.add_steps();
  s->set_step(inc.steps_size() - 1);
  s->set_kind("webhook");
  s->set_detail(url.ok() ? absl::StrCat("POST the incident to ", url->Redacted())
                         : "POST the incident to the webhook");
  s->set_outcome(kSending);
  s->set_by("cmax (policy)");
  s->set_started_unix_ns(now_ns);
}

void IncidentManager::Finish(v1::RemediationIncident& inc, v1::IncidentState state, int64_t now_ns) {
  inc.set_state(state);
  inc.set_closed_unix_ns(now_ns);
  open_by_node_.erase(inc.node());
  step_deadline_.erase(inc.incident_id());
  if (state == v1::INCIDENT_RETURNED) {
    IncidentTimings t = TimingsOf(inc);
    Log()->info("incident {} on {}: returned to service; detect {:.1f} s, quarantine {:.1f} s, "
                "repair {:.1f} s", inc.incident_id(), inc.node(), t.detect_s, t.quarantine_s,
                t.repair_s);
  }
  Save(inc);
}

// ------------------------------------------------------------- results

void IncidentManager::OnResult(const std::string& node, const v1::RemediationResult& r,
                               int64_t now_ns) {
  auto it = incidents_.find(r.incident_id());
  if (it == incidents_.end() || it->second.node() != node) {
    Log()->warn("remediation result from {} for incident '{}' refused: not an incident of {}",
                node, r.incident_id(), node);
    return;
  }
  v1::RemediationIncident& inc = it->second;
  if (r.step() < 0 || r.step() >= inc.steps_size() ||
      inc.steps(r.step()).outcome() != kRunning) {
    Log()->warn("incident {}: a result for step {} that is not under way, ignored",
                inc.incident_id(), r.step());
    return;
  }
  v1::IncidentStep& step = *inc.mutable_steps(r.step());
  step.set_message(r.message());
  for (const auto& a : r.artifacts()) *step.add_artifacts() = a;
  if (!r.ok()) {
    step.set_outcome(kFailed);
    step.set_ended_unix_ns(now_ns);
    Escalate(inc, absl::StrCat("step ", r.step(), " (", step.detail(), ") failed: ", r.message(),
                               r.stderr_tail().empty() ? "" : absl::StrCat("; stderr: ", r.stderr_tail())),
             now_ns);
    return;
  }
  if (step.kind() == "reboot") {
    step.set_message(absl::StrCat(r.message(), "; waiting for the node's agent to come back"));
    Save(inc);
    return;  // done when the node says Hello again (OnConnected)
  }
  step.set_outcome(kDone);
  step.set_ended_unix_ns(now_ns);
  if (step.kind() != "collect") inc.set_repaired_unix_ns(now_ns);
  step_deadline_.erase(inc.incident_id());
  Advance(inc, now_ns);
}

void IncidentManager::OnConnected(const std::string& node, int64_t now_ns) {
  auto it = open_by_node_.find(node);
  if (it == open_by_node_.end()) return;
  v1::RemediationIncident& inc = incidents_[it->second];
  v1::IncidentStep* step = Current(inc);
  if (step == nullptr || !InRemediationState(inc.state())) return;
  if (step->kind() == "reboot" && step->outcome() == kRunning) {
    step->set_outcome(kDone);
    step->set_ended_unix_ns(now_ns);
    step->set_message(absl::StrCat(step->message(), "; the node is back"));
    inc.set_repaired_unix_ns(now_ns);
    step_deadline_.erase(inc.incident_id());
    Advance(inc, now_ns);
  } else if (step->outcome() == kPending && ActionKind(step->kind()) != v1::REMEDIATION_ACTION_UNSPECIFIED) {
    RunStep(inc, *step, now_ns);  // the action that waited for the agent
  }
}

void IncidentManager::OnRunEnded(
    const std::string& run_id,
    const std::map<std::string, std::pair<std::string, std::string>>& verdicts, int64_t now_ns) {
  auto it = by_verify_run_.find(run_id);
  if (it == by_verify_run_.end()) return;
  const std::string id = it->second;
  by_verify_run_.erase(it);
  auto inc_it = incidents_.find(id);
  if (inc_it == incidents_.end() || inc_it->second.state() != v1::INCIDENT_VERIFYING) return;
  v1::RemediationIncident& inc = inc_it->second;
  v1::IncidentStep* step = Current(inc);
  auto v = verdicts.find(inc.node());
  const std::string verdict = v == verdicts.end() ? "not measured" : v->second.first;
  if (step == nullptr) return;
  step->set_ended_unix_ns(now_ns);
  step_deadline_.erase(id);
  // Only a pass returns the node: "warn" is what a node gets when anything
  // in the run was not measured (reports/scorecard.cc), and not measured is
  // never a pass.
  if (verdict == "pass") {
    step->set_outcome(kDone);
    step->set_message(absl::StrCat("run ", run_id, ": the node's verdict is ", verdict));
    inc.set_verified_unix_ns(now_ns);
    inc.set_state(v1::INCIDENT_QUARANTINED);
    Advance(inc, now_ns);
    return;
  }
  step->set_outcome(kFailed);
  step->set_message(absl::StrCat("run ", run_id, ": the node's verdict is ", verdict,
                                 v == verdicts.end() || v->second.second.empty()
                                     ? ""
                                     : absl::StrCat(" (", v->second.second, ")")));
  Escalate(inc, absl::StrCat("verify failed: ", step->message()), now_ns);
}

// ---------------------------------------------------------- the worker

void IncidentManager::Post(const v1::RemediationIncident& inc, Job job) {
  const std::string id = inc.incident_id(), node = inc.node();
  std::shared_ptr<Fencer> fencer = fencer_;
  std::function<WorkResult()> fn;
  if (job == Job::kFence) {
    const std::string reason = absl::StrCat(inc.incident_id(), " ", inc.check_id());
    fn = [=] {
      absl::Status s = fencer->Fence(node, reason);
      auto state = fencer->Inspect(node);
      return WorkResult{id, job, s, state.ok() ? state->Describe() : ""};
    };
  } else if (job == Job::kLift) {
    fn = [=] { return WorkResult{id, job, fencer->Lift(node), ""}; };
  } else if (job == Job::kWebhook) {
    fn = WebhookJob(inc);
  } else {
    const std::string path = absl::StrCat(options_.escalations_dir, "/", id, ".json");
    const std::string json = MessageToJsonLine(inc, /*pretty=*/true);
    std::vector<std::string> argv = policy_.escalate.command;
    argv.push_back(path);
    const std::string dir = options_.escalations_dir;
    fn = [=] {
      std::error_code ec;
      std::filesystem::create_directories(dir, ec);
      if (absl::Status w = WriteFileAtomically(path, json); !w.ok()) return WorkResult{id, job, w, ""};
      auto r = RunCommand(argv, std::chrono::seconds(30), 64 << 10);
      if (!r.ok()) return WorkResult{id, job, r.status(), ""};
      absl::Status s = r->exit.exited && r->exit.code == 0
                           ? absl::OkStatus()
                           : absl::UnavailableError(absl::StrCat(argv[0], ": ", r->exit.Describe(), " ", r->err));
      return WorkResult{id, job, s, ""};
    };
  }
  absl::MutexLock lock(&mu_);
  jobs_.push_back(std::move(fn));
}

std::function<IncidentManager::WorkResult()> IncidentManager::WebhookJob(
    const v1::RemediationIncident& inc) {
  const std::string id = inc.incident_id();
  const std::string json = MessageToJsonLine(inc, /*pretty=*/true);
  const absl::StatusOr<WebhookUrl> url = ParseWebhookUrl(policy_.escalate.webhook);
  const WebhookPoster post = options_.webhook_poster;
  const WebhookRetry retry = options_.webhook_retry;
  return [=] {
    if (!url.ok()) {
      return WorkResult{id, Job::kWebhook, absl::InvalidArgumentError(absl::StrCat(
                                               "the webhook URL: ", url.status().message())), ""};
    }
    if (!post) {
      return WorkResult{id, Job::kWebhook,
                        absl::UnimplementedError("this coordinator has no HTTP client: not sent"), ""};
    }
    std::string outcome;
    absl::Status s = SendWebhook(post, *url, json, retry, &outcome);
    return WorkResult{id, Job::kWebhook, s, outcome};
  };
}

void IncidentManager::WorkerLoop() {
  for (;;) {
    std::function<WorkResult()> job;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](IncidentManager* m) ABSL_EXCLUSIVE_LOCKS_REQUIRED(m->mu_) {
            return m->stop_ || !m->jobs_.empty();
          },
          this));
      if (stop_) return;
      job = std::move(jobs_.front());
      jobs_.pop_front();
      ++busy_;
    }
    WorkResult r = job();
    absl::MutexLock lock(&mu_);
    done_.push_back(std::move(r));
    --busy_;
  }
}

bool IncidentManager::WorkerIdle() const {
  absl::MutexLock lock(&mu_);
  return jobs_.empty() && busy_ == 0 && done_.empty();
}

void IncidentManager::Take(const WorkResult& r, int64_t now_ns) {
  auto it = incidents_.find(r.incident_id);
  if (it == incidents_.end()) return;
  v1::RemediationIncident& inc = it->second;
  if (r.job == Job::kEscalate || r.job == Job::kWebhook) {
    TakeHook(inc, r, now_ns);
    return;
  }
  v1::IncidentStep* step = Current(inc);
  if (step == nullptr || step->outcome() != kRunning) return;
  step->set_ended_unix_ns(now_ns);
  if (r.job == Job::kFence) {
    if (IsHeldByOperator(r.status)) {
      step->set_outcome(kDone);
      step->set_message(std::string(r.status.message()));
      inc.set_fence_ours(false);
      inc.set_state(v1::INCIDENT_HELD);
      inc.set_reason(absl::StrCat(r.status.message(), ": cmax leaves the node to its operator "
                                                      "(cmaxctl remediation approve to go on)"));
      Save(inc);
      return;
    }
    if (!r.status.ok()) {
      step->set_outcome(kFailed);
      step->set_message(std::string(r.status.message()));
      Escalate(inc, absl::StrCat("could not fence the node: ", r.status.message()), now_ns);
      return;
    }
    step->set_outcome(kDone);
    step->set_message(r.detail);
    inc.set_fence_ours(true);
    inc.set_quarantined_unix_ns(now_ns);
    Advance(inc, now_ns);
    return;
  }
  if (!r.status.ok()) {  // kLift
    step->set_outcome(kFailed);
    step->set_message(std::string(r.status.message()));
    Escalate(inc, absl::StrCat("could not return the node: ", r.status.message()), now_ns);
    return;
  }
  step->set_outcome(kDone);
  step->set_message("cmax's fence lifted");
  Finish(inc, v1::INCIDENT_RETURNED, now_ns);
}

// An escalate hook's outcome: the command's on the escalate step, the
// webhook's on its own step (its detail names the URL without its secrets).
void IncidentManager::TakeHook(v1::RemediationIncident& inc, const WorkResult& r, int64_t now_ns) {
  if (r.job == Job::kEscalate) {
    for (auto& s : *inc.mutable_steps()) {
      if (s.kind() != "escalate") continue;
      s.set_message(r.status.ok() ? "the escalate command took the incident"
                                  : absl::StrCat("the escalate command failed: ", r.status.message()));
    }
    Save(inc);
    return;
  }
  for (auto& s : *inc.mutable_steps()) {
    if (s.kind() != "webhook" || s.outcome() != kSending) continue;
    s.set_outcome(r.status.ok() ? kDone : kFailed);
    s.set_ended_unix_ns(now_ns);
    s.set_message(r.status.ok() ? absl::StrCat("delivered: ", r.detail)
                                : absl::StrCat("not delivered: ", r.status.message()));
    if (r.status.ok()) {
      Log()->info("incident {} on {}: {}: {}", inc.incident_id(), inc.node(), s.detail(), s.message());
    } else {
      Log()->error("incident {} on {}: {}: {}", inc.incident_id(), inc.node(), s.detail(), s.message());
    }
  }
  Save(inc);
}

void IncidentManager::Tick(int64_t now_ns) {
  std::vector<WorkResult> done;
  {
    absl::MutexLock lock(&mu_);
    done.swap(done_);
  }
  for (const WorkResult& r : done) Take(r, now_ns);
  for (auto it = step_deadline_.begin(); it != step_deadline_.end();) {
    const std::string id = it->first;
    const int64_t deadline = it->second;
    ++it;
    if (now_ns < deadline) continue;
    v1::RemediationIncident& inc = incidents_[id];
    Escalate(inc, "a step timed out", now_ns);
  }
  if (paused_) return;
  for (auto& [id, inc] : incidents_) {
    if (inc.state() != v1::INCIDENT_HELD || inc.fence_ours() ||
        absl::StartsWith(inc.reason(), "held by operator")) {
      continue;
    }
    // Starts it, or holds it saying the breaker is open (an incident held
    // by a pause now waits for the breaker, and says so).
    Start(inc, now_ns);
  }
}

// ---------------------------------------------------- operator commands

absl::Status IncidentManager::Pause(const std::string& by) {
  paused_ = true;
  paused_by_ = by;
  Log()->warn("remediation paused by {}", by);
  return absl::OkStatus();
}

absl::Status IncidentManager::Resume(const std::string& by, int64_t now_ns) {
  paused_ = false;
  Log()->warn("remediation resumed by {}", by);
  Tick(now_ns);
  return absl::OkStatus();
}

absl::Status IncidentManager::Approve(const std::string& id, const std::string& by,
                                      int64_t now_ns) {
  auto it = incidents_.find(id);
  if (it == incidents_.end()) return absl::NotFoundError(absl::StrCat("no incident ", id));
  v1::RemediationIncident& inc = it->second;
  if (inc.state() == v1::INCIDENT_PLANNED || inc.state() == v1::INCIDENT_HELD) {
    for (auto& s : *inc.mutable_steps()) {
      if (s.outcome() == kPlanned) s.set_outcome(kPending);
      if (s.outcome() == kPending) s.set_by(absl::StrCat(by, " (approved)"));
    }
    inc.set_dry_run(false);
    Log()->warn("incident {} on {}: approved by {}", id, inc.node(), by);
    Start(inc, now_ns);
    return absl::OkStatus();
  }
  if (inc.state() == v1::INCIDENT_ESCALATED) {
    if (open_by_node_.count(inc.node())) {
      return absl::FailedPreconditionError(
          absl::StrCat(inc.node(), " has another incident open: ", open_by_node_[inc.node()]));
    }
    v1::IncidentStep* s = inc.add_steps();
    s->set_step(inc.steps_size() - 1);
    s->set_kind("return");
    s->set_detail(absl::StrCat("returned by ", by));
    s->set_outcome(kPending);
    s->set_by(by);
    inc.set_state(v1::INCIDENT_QUARANTINED);
    open_by_node_[inc.node()] = id;
    Advance(inc, now_ns);
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(
      absl::StrCat("incident ", id, " is ", IncidentStateName(inc.state()),
                   ": only planned, held or escalated incidents can be approved"));
}

absl::Status IncidentManager::Dismiss(const std::string& id, const std::string& by,
                                      int64_t now_ns) {
  auto it = incidents_.find(id);
  if (it == incidents_.end()) return absl::NotFoundError(absl::StrCat("no incident ", id));
  v1::RemediationIncident& inc = it->second;
  if (inc.state() != v1::INCIDENT_PLANNED && inc.state() != v1::INCIDENT_HELD) {
    return absl::FailedPreconditionError(absl::StrCat(
        "incident ", id, " is ", IncidentStateName(inc.state()), ": only planned or held ones can be dismissed"));
  }
  for (auto& s : *inc.mutable_steps()) {
    if (s.outcome() == kPlanned || s.outcome() == kPending) s.set_outcome(kSkipped);
  }
  inc.set_reason(absl::StrCat("dismissed by ", by));
  Finish(inc, v1::INCIDENT_DISMISSED, now_ns);
  return absl::OkStatus();
}

v1::RemediationStatus IncidentManager::Status(const std::string& node, bool include_closed) const {
  v1::RemediationStatus st;
  st.set_mode(ModeName(policy_.mode));
  st.set_paused(paused_);
  st.set_policy(policy_.source);
  st.set_policy_error(policy_error_);
  st.set_fence(FenceKindName(policy_.fence));
  st.set_in_remediation(InRemediation());
  st.set_max_nodes(policy_.breaker.max_nodes);
  st.set_max_percent(policy_.breaker.max_percent);
  bool held_by_breaker = false;
  for (const auto& [id, inc] : incidents_) {
    if (inc.state() == v1::INCIDENT_HELD && absl::StartsWith(inc.reason(), "breaker open")) {
      held_by_breaker = true;
    }
    if (!node.empty() && inc.node() != node) continue;
    if (!include_closed && IsClosed(inc.state())) continue;
    *st.add_incidents() = inc;
  }
  st.set_breaker_open(held_by_breaker || !BreakerAllows());
  return st;
}

void IncidentManager::Save(const v1::RemediationIncident& inc) { hooks_->Persist(inc); }

}  // namespace cmax::remediation
