// The fault loop's state machine: a finding from a node's passive watch (or a
// run) opens an incident; the operator's policy (policy.h) says what happens
// next. Every step is stored with its times (v1::RemediationIncident), so time to
// detect, to quarantine and to repair are measured, not estimated.
//
//   finding >= policy level, from the node itself (its authenticated stream)
//     │  the node has an open incident: the finding is added to it, nothing else
//     ▼
//   dry-run ──▶ PLANNED: fence, steps and return recorded as "planned";
//     │          nothing is done. approve: runs it as below; dismiss: DISMISSED
//   enforce
//     │  paused, or the breaker open (max_nodes / max_percent of the fleet in
//     │  remediation), or an operator's own drain or cordon on the node
//     ▼                                      ▲ resume / capacity freed / approve
//   HELD ────────────────────────────────────┘
//     ▼
//   QUARANTINED: fenced (Slurm drain, Kubernetes cordon + taint, or none)
//     ▼ each step in order, on the node's agent (RemediationAction)
//   REMEDIATING: collect, restart_unit, reset_gpu, reboot (done when the
//     │          node's agent is back)
//     ▼ verify
//   VERIFYING: a run of the health suite and a short burn-in on the node
//     ▼ the node's verdict passes           any failure, timeout, flapping
//   RETURNED (cmax's fence lifted)          ESCALATED (fenced; a person decides:
//                                           the escalate command gets the JSON,
//                                           the webhook a POST of it)
//
// Guards: dry-run unless the policy says enforce; a node failing the same
// check `flap.count` times within `flap.window` is escalated, never returned;
// cmax lifts only the fences it set; results count only from the incident's
// own node; a coordinator restarted mid-remediation escalates what was
// under way (a person decides) rather than guess.
//
// Thread: owned by the coordinator's core thread; not thread-safe. Fence,
// lift, the escalate command and the webhook run on the manager's worker
// thread and their results are taken up by Tick(): the webhook's outcome
// closes its own step (kind "webhook").
#ifndef CMAX_COORDINATOR_REMEDIATION_INCIDENTS_H_
#define CMAX_COORDINATOR_REMEDIATION_INCIDENTS_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "cmax/v1/incident.pb.h"
#include "cmax/v1/service.pb.h"
#include "coordinator/remediation/fence.h"
#include "coordinator/remediation/policy.h"
#include "coordinator/remediation/webhook.h"

namespace cmax::remediation {

// What the manager needs of the coordinator (called on the core thread).
class IncidentHooks {
 public:
  virtual ~IncidentHooks() = default;
  virtual int FleetSize() = 0;
  virtual bool Connected(const std::string& node) = 0;
  virtual int GpuCount(const std::string& node) = 0;
  // Queues the action on the node's stream; false when it is not connected.
  virtual bool SendAction(const std::string& node, const v1::RemediationAction& action) = 0;
  // Starts the verify run on `node` alone; its run id, or why not.
  virtual absl::StatusOr<std::string> StartVerifyRun(const std::string& node,
                                                     const std::string& incident_id) = 0;
  virtual void Persist(const v1::RemediationIncident& incident) = 0;
};

struct IncidentOptions {
  absl::Duration step_timeout = absl::Minutes(10);
  absl::Duration reboot_timeout = absl::Minutes(20);
  absl::Duration verify_timeout = absl::Minutes(60);
  size_t max_findings = 20;      // kept per incident
  std::string escalations_dir;   // where the escalate command's JSON files go
  // POSTs the escalate webhook (webhook_http.h); empty: the webhook step
  // records that this coordinator cannot send it.
  WebhookPoster webhook_poster;
  WebhookRetry webhook_retry;
};

// The phases measured per closed incident (for /metrics and the CLI).
struct IncidentTimings {
  double detect_s = -1;      // detected - signal
  double quarantine_s = -1;  // quarantined - detected
  double repair_s = -1;      // returned - detected
};
IncidentTimings TimingsOf(const v1::RemediationIncident& incident);
// "planned", "held", ... as cmaxctl prints them.
std::string IncidentStateName(v1::IncidentState state);
bool IsClosed(v1::IncidentState state);

class IncidentManager {
 public:
  IncidentManager(IncidentHooks* hooks, Policy policy, std::unique_ptr<Fencer> fencer,
                  IncidentOptions options = {});
  ~IncidentManager();
  IncidentManager(const IncidentManager&) = delete;
  IncidentManager& operator=(const IncidentManager&) = delete;

  // Incidents stored by an earlier coordinator. Those that were under way
  // are escalated ("the coordinator restarted during remediation").
  void Load(std::vector<v1::RemediationIncident> stored, int64_t now_ns);
  // A reloaded policy (and its fencer); incidents under way keep their steps.
  void SetPolicy(Policy policy, std::unique_ptr<Fencer> fencer);
  void SetPolicyError(std::string error) { policy_error_ = std::move(error); }
  const Policy& policy() const { return policy_; }
  bool paused() const { return paused_; }

  // A finding `node` sent about itself. `signal_ns` when the node saw the
  // signal, `now_ns` when the coordinator has it (both coordinator clock).
  void OnFinding(const std::string& node, const v1::Finding& finding, int64_t signal_ns,
                 int64_t now_ns);
  // A step's result from `node`'s agent; one for another node's incident is
  // refused (logged) and changes nothing.
  void OnResult(const std::string& node, const v1::RemediationResult& result, int64_t now_ns);
  // The node's agent said Hello (after a reboot: the reboot step is done).
  void OnConnected(const std::string& node, int64_t now_ns);
  // A run ended; `verdicts`: node -> (verdict, first reason).
  void OnRunEnded(const std::string& run_id,
                  const std::map<std::string, std::pair<std::string, std::string>>& verdicts,
                  int64_t now_ns);
  // Takes up the worker's results, starts held incidents the breaker now
  // allows, times out steps.
  void Tick(int64_t now_ns);

  absl::Status Pause(const std::string& by);
  absl::Status Resume(const std::string& by, int64_t now_ns);
  // A planned or held incident runs its steps; an escalated one is returned.
  absl::Status Approve(const std::string& incident_id, const std::string& by, int64_t now_ns);
  absl::Status Dismiss(const std::string& incident_id, const std::string& by, int64_t now_ns);

  v1::RemediationStatus Status(const std::string& node, bool include_closed) const;
  const std::map<std::string, v1::RemediationIncident>& incidents() const { return incidents_; }
  // Worker jobs still under way (tests wait for them to settle).
  bool WorkerIdle() const;

 private:
  enum class Job { kFence, kLift, kEscalate, kWebhook };
  struct WorkResult {
    std::string incident_id;
    Job job;
    absl::Status status;
    std::string detail;  // FenceState::Describe() where known
  };
  v1::RemediationIncident& Open(const std::string& node, const v1::Finding& f, int64_t signal_ns,
                     int64_t now_ns);
  void Plan(v1::RemediationIncident& inc, const Rule* rule);
  void Start(v1::RemediationIncident& inc, int64_t now_ns);
  void Advance(v1::RemediationIncident& inc, int64_t now_ns);
  void RunStep(v1::RemediationIncident& inc, v1::IncidentStep& step, int64_t now_ns);
  void Escalate(v1::RemediationIncident& inc, const std::string& why, int64_t now_ns);
  void Finish(v1::RemediationIncident& inc, v1::IncidentState state, int64_t now_ns);
  void Take(const WorkResult& r, int64_t now_ns);
  void TakeHook(v1::RemediationIncident& inc, const WorkResult& r, int64_t now_ns);
  void AddWebhookStep(v1::RemediationIncident& inc, int64_t now_ns);
  std::function<WorkResult()> WebhookJob(const v1::RemediationIncident& inc);
  void Post(const v1::RemediationIncident& inc, Job job);
  void WorkerLoop();
  bool BreakerAllows() const;
  int InRemediation() const;
  int FlapCount(const v1::RemediationIncident& inc) const;
  void Save(const v1::RemediationIncident& inc);
  v1::IncidentStep* Current(v1::RemediationIncident& inc);

  IncidentHooks* hooks_;
  Policy policy_;
  std::string policy_error_;
  std::shared_ptr<Fencer> fencer_;
  IncidentOptions options_;
  bool paused_ = false;
  std::string paused_by_;
  std::map<std::string, v1::RemediationIncident> incidents_;  // by id
  std::map<std::string, std::string> open_by_node_;
  std::map<std::string, std::string> by_verify_run_;
  std::map<std::string, int64_t> step_deadline_;   // incident -> ns
  int64_t sequence_ = 0;

  mutable absl::Mutex mu_;
  std::deque<std::function<WorkResult()>> jobs_ ABSL_GUARDED_BY(mu_);
  std::vector<WorkResult> done_ ABSL_GUARDED_BY(mu_);
  int busy_ ABSL_GUARDED_BY(mu_) = 0;
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  std::thread worker_;
};

}  // namespace cmax::remediation

#endif  // CMAX_COORDINATOR_REMEDIATION_INCIDENTS_H_
