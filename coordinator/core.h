// The coordinator's domain: registry, scheduler, rendezvous and store, driven
// by one thread. gRPC reactions never touch them directly: they Post() work
// here and return; replies go back through AgentSession::Send, RunWatcher or
// the unary reactor's Finish, none of which block.
//
// Thread: Start() creates the core thread, which owns every member below
// except the queue. Post() is thread-safe.
//
// Sources, one idea each: core.cc (life cycle, the API handlers, the web
// view's snapshots), core_dispatch.cc (the round loop, heartbeats, scheduling
// and applying its changes, agent messages), core_ingest.cc (record ingest,
// its group commit and the per-agent rate limiter), core_report.cc (the
// scorecard thread: building and writing the scorecard files, completing the
// run), core_export.cc (the export thread: a run's records for the Export
// call), core_metrics.cc (the Prometheus exposition), core_schedules.cc (the
// schedules' handlers and their view of the core), core_history.cc (node
// history; its queries run on history_pool.h's threads, not this one).
#ifndef CMAX_COORDINATOR_CORE_H_
#define CMAX_COORDINATOR_CORE_H_

#include <atomic>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/metrics_text.h"
#include "common/task_state.h"
#include "coordinator/clock.h"
#include "coordinator/heartbeat_pacer.h"
#include "coordinator/history_pool.h"
#include "coordinator/registry.h"
#include "coordinator/remediation/incidents.h"
#include "coordinator/rendezvous.h"
#include "coordinator/scheduler.h"
#include "coordinator/schedules.h"
#include "coordinator/slurm_drain.h"
#include "coordinator/slurm_idle.h"
#include "coordinator/store.h"
#include "reports/history.h"
#include "reports/run_data.h"

namespace cmax::coordinator {

struct CoreOptions {
  std::string data_dir;
  int64_t heartbeat_timeout_ms = 15000;
  int64_t ping_interval_ms = 1000;
  // Below this much free space in the data directory new runs are refused.
  int64_t min_free_bytes = 64ll << 20;
  // How far after a barrier's release its ranks start.
  int64_t barrier_lead_ms = 500;
  // Records per second one agent may send on average (burst: twice this).
  // Above it the records are still stored and acknowledged -- refusing them
  // would only make the agent hold them longer, and dropping them would lose
  // results -- but a warning names the agent, at most once per 10 s. What
  // bounds an abusive agent's cost is the 16 MiB message limit and the
  // agent's own cap on unacknowledged records.
  int64_t max_records_per_second = 20000;
  // --slurm-drain: the scontrol that drains the nodes whose verdict is fail
  // when a run ends (coordinator/slurm_drain.h). Empty: off.
  std::string slurm_scontrol;
  // --remediation-policy: the fault loop's policy file
  // (coordinator/remediation/policy.h). Empty: the defaults (dry-run, no
  // fence, no rules: every incident is planned as "escalate").
  std::string remediation_policy;
  // What fences run (a path, or a name looked up on PATH).
  std::string scontrol = "scontrol";
  std::string kubectl = "kubectl";
  // --verify-plan: the plan a repaired node must pass before it returns;
  // empty: the built-in verify-gpu.yaml or verify-cpu.yaml by its GPUs.
  std::string verify_plan;
  // POSTs the policy's escalate.webhook (remediation/webhook_http.h, set by
  // main); empty: an escalated incident's webhook step says it is not sent.
  remediation::WebhookPoster webhook_poster;
  // The sinfo that schedules with --only-idle ask (a path, or a name looked
  // up on PATH at each slot; coordinator/slurm_idle.h).
  std::string slurm_sinfo = "sinfo";
  // --keep-runs-for: the records of runs that ended longer ago than this
  // are dropped on the store's own thread (Store::StartRetention); their
  // runs, tasks and scorecards stay. 0: kept for ever. Checked every
  // retention_every_ns (0: a tenth of keep_runs_for_ns, within 1 s to 1 h).
  int64_t keep_runs_for_ns = 0;
  int64_t retention_every_ns = 0;
  // History and fleet queries (GetHistory, /fleet, /nodes/NAME): threads
  // that run them, each with its own read-only store connection, and how
  // many distinct queries may wait for one before callers are told "busy,
  // retry" (coordinator/history_pool.h).
  int history_threads = 2;
  int history_queue = 8;
  // Schedules' bounds (Schedules::Limits): --min-schedule-period (shorter
  // periods are refused; tests lower it) and --max-schedules.
  int64_t min_schedule_every_ns = 3600LL * 1000000000LL;
  int max_schedules = 64;
  // Tests and the chaos run only: installed as the store's fault hook
  // (Store::SetFaultHookForTesting). Empty: none.
  Store::FaultHook store_fault_for_testing;
};

// Receives the events of one run (cmaxctl watch). Implementations queue and
// return at once. OnEnd is the last call.
class RunWatcher {
 public:
  virtual ~RunWatcher() = default;
  virtual void OnEvent(const v1::RunEvent& event) = 0;
  virtual void OnEnd() = 0;
  // The coordinator is shutting down with the run unfinished: the stream
  // ends with UNAVAILABLE and `reason` (cmaxctl says to watch again).
  virtual void OnShutdown(const std::string& reason) = 0;
  virtual bool closed() const = 0;
};

class CoordinatorCore {
 public:
  // Opens the store in data_dir and restores unfinished runs and the
  // schedules.
  static absl::StatusOr<std::unique_ptr<CoordinatorCore>> Create(const CoreOptions& options);
  ~CoordinatorCore();

  void Start();
  // The first step of a graceful stop (SIGTERM, `systemctl restart`), before
  // the gRPC server drains: from here on nothing is declared lost, expired
  // or assigned (the agents keep their tasks and give them to the next
  // process, which resumes the runs), agent streams are closed so the
  // agents start dialling the successor, and watchers are told the run goes
  // on. Records and statuses still arriving are stored as usual.
  void BeginShutdown();
  void Stop();
  // Runs `fn` on the core thread. Thread-safe.
  void Post(std::function<void()> fn);

  // --- Everything below runs on the core thread (call through Post). ---
  // `received_unix_ns`: when the stream read it (a pong's t4: the clock
  // sample must not include the wait for the core's round); 0: now.
  void HandleAgentMessage(const std::shared_ptr<AgentSession>& session,
                          const v1::AgentMessage& message, int64_t received_unix_ns = 0);
  void HandleStreamEnded(const std::shared_ptr<AgentSession>& session);

  v1::ListAgentsResponse HandleListAgents();
  absl::StatusOr<v1::SubmitRunResponse> HandleSubmitRun(const v1::SubmitRunRequest& request);
  absl::StatusOr<v1::ListRunsResponse> HandleListRuns(const v1::ListRunsRequest& request);
  absl::StatusOr<v1::GetRunResponse> HandleGetRun(const std::string& run_id);
  absl::StatusOr<v1::CancelRunResponse> HandleCancelRun(const std::string& run_id);
  absl::StatusOr<v1::GetReportResponse> HandleGetReport(const v1::GetReportRequest& request);
  // Registers a watcher: it gets the current state at once, then every change.
  absl::Status HandleWatchRun(const std::string& run_id, std::shared_ptr<RunWatcher> watcher);
  // Export: `done` gets every stored record of the run, read on the export
  // thread through its own read-only store connection (it sees what is
  // committed), never on the core thread; or the run lookup's error
  // (NOT_FOUND), or UNAVAILABLE when the coordinator stops first. `done` is
  // called once, on the export thread; without a started core (tests
  // calling the handlers directly), in place.
  using ExportDone = std::function<void(absl::StatusOr<std::vector<v1::ExportedRecord>>)>;
  void HandleExport(const std::string& run_id, ExportDone done);
  // Schedules (schedules.h); each answers once its change is durable.
  // `added_by`: who asked, as the service authenticated them ("certificate
  // CN" or "token"), stored with the schedule and shown by its list.
  absl::StatusOr<v1::AddScheduleResponse> HandleAddSchedule(const v1::AddScheduleRequest& request,
                                                            std::string added_by);
  v1::ListSchedulesResponse HandleListSchedules();
  absl::StatusOr<v1::UpdateScheduleResponse> HandleUpdateSchedule(
      const v1::UpdateScheduleRequest& request);

  // The fault loop (coordinator/remediation/incidents.h): its state, and
  // the admin's commands (`by`: who asked, as the service authenticated
  // them). Each answers once its change is durable.
  absl::StatusOr<v1::RemediationStatus> HandleGetRemediation(
      const v1::GetRemediationRequest& request);
  absl::StatusOr<v1::RemediationStatus> HandleUpdateRemediation(
      const v1::UpdateRemediationRequest& request, const std::string& by);

  // A node's history (its runs and their nodes are read), or without a node
  // the fleet's (every summary is read) (docs/history.md); NOT_FOUND for a
  // node no finished run had, INVALID_ARGUMENT for a bad node name. In
  // place on the core's connection: for tests calling the handlers
  // directly; the gRPC call and the web view use QueryHistory.
  absl::StatusOr<v1::GetHistoryResponse> HandleGetHistory(
      const v1::GetHistoryRequest& request);

  // --- History off the core thread (history_pool.h; any thread, never
  // posts to the core). `done` gets HandleGetHistory's answer, computed on
  // a history thread from its own read-only store connection and shared
  // with every caller asking the same (node, or fleet) meanwhile; at once
  // INVALID_ARGUMENT for a bad node name, RESOURCE_EXHAUSTED ("busy,
  // retry") when options_.history_queue queries wait already, UNAVAILABLE
  // before Start or after Stop. Returns the ticket for AbandonHistory, 0
  // when `done` was already called. ---
  uint64_t QueryHistory(const v1::GetHistoryRequest& request, HistoryPool::Done done);
  // The caller has gone (HistoryPool::Abandon): true when `done` will not
  // be called. The last caller gone drops or stops the query.
  bool AbandonHistory(uint64_t ticket);

  const std::string& db_path() const { return db_path_; }

  // The Prometheus exposition (--metrics-listen): agents by state, runs and
  // tasks by state, records ingested and how long a batch took from its
  // arrival on the core thread to its acknowledgement, the store's size,
  // and the last scorecard's tier, grades and node verdicts. Thread-safe:
  // rendered on the core thread; UNAVAILABLE when the core does not answer
  // within `timeout` (it is busy: the scrape fails, the core is not held).
  absl::StatusOr<std::string> RenderMetrics(absl::Duration timeout);

  // --- The web view (coordinator/web): thread-safe snapshots, taken on the
  // core thread like RenderMetrics; UNAVAILABLE when the core does not answer
  // within `timeout`. ---
  absl::StatusOr<v1::ListAgentsResponse> SnapshotAgents(absl::Duration timeout);
  // The latest `limit` runs, newest first (the store's order).
  absl::StatusOr<v1::ListRunsResponse> SnapshotRuns(int limit, absl::Duration timeout);
  // A run and its tasks; NOT_FOUND for an unknown one, INVALID_ARGUMENT for
  // an id that IsSafeId refuses.
  absl::StatusOr<v1::GetRunResponse> SnapshotRun(const std::string& run_id,
                                                 absl::Duration timeout);
  // QueryHistory's answer (`node` empty: the fleet's), waited for at most
  // `timeout`; then UNAVAILABLE and the query is abandoned (dropped or
  // stopped when nobody else waits for it). Never waits on the core thread.
  absl::StatusOr<v1::GetHistoryResponse> SnapshotHistory(const std::string& node,
                                                         absl::Duration timeout);

 private:
  CoordinatorCore(CoreOptions options, std::unique_ptr<Store> store);
  // The one way a run starts: a submitted plan (SubmitRun, `only_nodes`
  // null) or a schedule's wave (`only_nodes`: its nodes, `schedule_id` its
  // id). Checks the plan and the free disk, creates and persists the run
  // and its tasks, schedules them, and commits before it returns.
  absl::StatusOr<v1::SubmitRunResponse> StartRun(const v1::Plan& plan,
                                                 const std::vector<std::string>* only_nodes,
                                                 const std::string& schedule_id);
  // After Create: the schedules' runs that ended while no coordinator
  // followed them are reported to Schedules::OnRunEnded.
  void ReconcileScheduleRuns();
  void Loop();
  void Tick();
  // Persists, broadcasts and sends what a scheduler call changed. False when
  // the tasks could not be persisted (the caller then acknowledges nothing).
  bool Apply(Changes& changes);
  // In a round (Loop), deferred until EndRound; otherwise sent now.
  void SendTo(const std::string& node, const v1::CoordinatorMessage& message);
  void SendNow(const std::string& node, const v1::CoordinatorMessage& message);
  // An ack (records or status): only once what it acknowledges is durable.
  void SendAck(const std::shared_ptr<AgentSession>& keep, AgentSession* session,
               const v1::CoordinatorMessage& message);
  // Commits the round's transaction, then sends what waited for it (acks
  // are withheld and their streams closed when the commit failed) and hands
  // finished runs to the scorecard thread.
  void EndRound();
  void Checkpoint();  // EndRound and begin the next round at once
  void OnRecords(AgentSession* session, const std::string& node, const v1::RecordBatch& batch);
  void OnStatus(AgentSession* session, const std::string& node, const v1::TaskStatus& status);
  // The passive watch's records from `node` (its own stream): stored once
  // each, acknowledged once durable, findings handed to the incidents.
  void OnWatch(AgentSession* session, const std::string& node, const v1::WatchBatch& batch);
  absl::Status InitRemediation();
  void RemediationMetrics(cmax::MetricsText* m);
  // Stores every pending record batch in one transaction, then acknowledges
  // them (group commit); on failure closes their streams unacknowledged.
  void FlushIngest();
  void FlushAgents();  // persists the pending Hellos' agent rows
  // PutRun now when the run's state changed (or `now`), else marks it for
  // Tick within kRunPersistEveryNs.
  void PersistRun(const RunRow& run, bool now);
  // A run ended: its scorecard is built from a read-only store connection
  // on the scorecard thread (heartbeats, acks and other runs go on meanwhile),
  // then CompleteRun records it here. Without a started core (tests calling
  // the handlers directly) it is built in place.
  void FinishRun(const std::string& run_id);
  struct BuiltScorecard {
    std::string run_id, dir;
    v1::Scorecard card;
    bool written = false;
    bool aborted = false;  // the coordinator stopped while it was built
    std::vector<v1::NodeRunSummary> summaries;  // stored by CompleteRun
  };
  // History (core_history.cc). AddHistory: any thread, touches no member;
  // summarises the card's nodes and adds the cluster's history, read from
  // `store` (may be null), to the card. BackfillHistory (Create): runs that
  // ended before summaries were kept, and runs whose summaries are older than
  // reports::kSummaryVersion, are summarised from their scorecard.json; then
  // node_health_ is filled from the whole history.
  void AddHistory(Store* store, int64_t finished_unix_ns, BuiltScorecard* built);
  absl::Status BackfillHistory();
  void NoteSummaries(const std::vector<v1::NodeRunSummary>& summaries);  // oldest first
  struct NodeHealth {
    int64_t last_accept_ns = 0;  // 0: never accepted
    reports::IncidentState incident;  // closed by the same rule as `cmaxctl history`
  };
  std::map<std::string, NodeHealth> node_health_;  // core thread
  std::vector<double> repair_hours_;               // closed incidents' time to repair
  // Scans the run's records from `store` into `data`, builds, renders and
  // writes the scorecard files. Any thread; touches no member but options_.
  BuiltScorecard BuildScorecardFiles(reports::RunData data, Store* store,
                                     const std::function<bool()>& stopping);
  void CompleteRun(BuiltScorecard built);  // core thread
  void ScorecardLoop();                    // the scorecard thread
  void ExportLoop();                       // the export thread
  void Broadcast(const std::string& run_id, const v1::RunEvent& event);
  v1::RunEvent RunEventFor(const RunRow& run);
  std::string NewRunId();
  std::string MetricsText();  // core thread

  CoreOptions options_;
  std::string db_path_;
  std::unique_ptr<Store> store_;
  Registry registry_;
  Scheduler scheduler_;
  Rendezvous rendezvous_;
  std::map<std::string, std::vector<std::shared_ptr<RunWatcher>>> watchers_;
  std::map<AgentSession*, std::shared_ptr<AgentSession>> sessions_;  // keeps them alive
  // Sessions whose records could not be stored: nothing more from them is
  // stored, acknowledged or applied (a later ack would cover the gap; an end
  // status would overtake its records), and they are closed so the agent
  // reconnects and resends from its last ack.
  std::set<AgentSession*> failed_sessions_;
  // Per node: token bucket for max_records_per_second.
  struct RecordBudget {
    double tokens = 0;
    int64_t refilled_ns = 0;
    int64_t over = 0;          // records over the limit since the last warning
    int64_t warned_ns = 0;
  };
  std::map<std::string, RecordBudget> record_budgets_;
  // Heartbeat pacing (Tick): the period and the pings owed
  // (heartbeat_pacer.h); the fleet size when it was last sized.
  HeartbeatPacer pacer_;
  size_t connected_ = 0;
  int64_t ping_period_checked_ns_ = 0;
  // Group commit (core thread): record batches of one loop round wait here
  // for FlushIngest. `rows` point into the messages of that round.
  struct PendingIngest {
    std::shared_ptr<AgentSession> session;  // keeps it alive until the acks
    AgentSession* raw = nullptr;
    std::string node;
    std::vector<RecordToStore> rows;
    std::map<std::tuple<std::string, int, int>, int64_t> next;  // acks to send
    std::vector<v1::Finding> findings;
    int refused = 0;
    int64_t arrived_ns = 0;
  };
  static constexpr size_t kMaxPendingRows = 50000;
  bool batching_ = false;
  bool schedule_pending_ = true;   // Tick: Schedule this round
  int64_t last_schedule_ns_ = 0;
  int64_t last_sweep_ns_ = 0;
  int64_t last_silence_sweep_ns_ = 0;  // Registry::ExpireSilent, once a second
  // Loop: rounds start at least kMinRoundGapNs apart, so that thousands of
  // pongs a second (50,000 agents) wake the core a few hundred times a
  // second, not once each (docs/scale.md).
  static constexpr int64_t kMinRoundGapNs = 2000000;
  int64_t round_start_ns_ = 0;
  struct RunPersist {
    std::string state;
    int64_t written_ns = 0;
    bool dirty = false;
  };
  static constexpr int64_t kRunPersistEveryNs = 1000000000;
  std::map<std::string, RunPersist> run_persist_;
  std::vector<PendingIngest> pending_ingest_;
  size_t pending_rows_ = 0;
  std::vector<AgentRow> pending_agents_;
  struct Deferred {
    std::string node;                       // SendTo; empty for an ack
    std::shared_ptr<AgentSession> keep;     // an ack: its stream, kept alive
    AgentSession* session = nullptr;
    v1::CoordinatorMessage message;
  };
  std::vector<Deferred> deferred_;
  std::vector<reports::RunData> scorecard_ready_;  // handed over by EndRound
  // Metrics (core thread).
  uint64_t records_stored_ = 0;      // new records stored and acknowledged
  uint64_t records_duplicate_ = 0;   // resent records the store already held
  uint64_t records_refused_ = 0;     // of unknown tasks, tasks not on that node, forged ranks
  Histogram batch_seconds_{{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5,
                            1, 2.5}};
  std::map<std::string, uint64_t> runs_ended_;  // by final state, since start
  struct LastScorecard {
    std::string run_id, tier;
    std::vector<std::pair<std::string, std::string>> grades;    // category, grade
    std::vector<std::pair<std::string, std::string>> verdicts;  // node, verdict
  };
  std::optional<LastScorecard> last_scorecard_;
  std::unique_ptr<SlurmDrainer> slurm_;  // --slurm-drain; null when off
  // The fault loop: its view of this core (core_remediation.cc) and the
  // state machine.
  class IncidentHooksImpl final : public remediation::IncidentHooks {
   public:
    explicit IncidentHooksImpl(CoordinatorCore* core) : core_(core) {}
    int FleetSize() override;
    bool Connected(const std::string& node) override;
    int GpuCount(const std::string& node) override;
    bool SendAction(const std::string& node, const v1::RemediationAction& action) override;
    absl::StatusOr<std::string> StartVerifyRun(const std::string& node,
                                               const std::string& incident_id) override;
    void Persist(const v1::RemediationIncident& incident) override;

   private:
    CoordinatorCore* core_;
  };
  IncidentHooksImpl incident_hooks_{this};
  std::unique_ptr<remediation::IncidentManager> incidents_;
  int64_t watch_records_ = 0;  // stored since start (/metrics)
  // Schedules: their view of this core (core_schedules.cc), the clock they
  // read, the component, and the sinfo runner of --only-idle.
  class ScheduleHooks final : public ScheduleRunner {
   public:
    explicit ScheduleHooks(CoordinatorCore* core) : core_(core) {}
    std::vector<std::string> ConnectedNodes() override;
    bool Settling() override;
    absl::StatusOr<std::string> StartRun(const v1::Plan& plan,
                                         const std::vector<std::string>& nodes,
                                         const std::string& schedule_id) override;
    void AskIdle(const std::string& schedule_id, int64_t ask,
                 const std::vector<std::string>& nodes) override;

   private:
    CoordinatorCore* core_;
  };
  SystemClock clock_;
  ScheduleHooks schedule_hooks_{this};
  Schedules schedules_{store_.get(), &clock_, &schedule_hooks_};
  SlurmIdleProbe idle_probe_{options_.slurm_sinfo};
  int64_t last_schedules_tick_ns_ = 0;
  const int64_t created_mono_ns_ = MonotonicNs();  // Settling's clock
  uint64_t run_counter_ = 0;

  absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<bool> shutting_down_{false};  // BeginShutdown; read by Tick
  // Rounds whose commit failed since the last error logged (EndRound), and
  // when that was (0: the store is writing).
  int64_t failed_rounds_ = 0;
  int64_t failed_rounds_logged_ns_ = 0;
  std::thread thread_;

  // Runs whose scorecard is being built (core thread).
  std::set<std::string> building_;
  absl::Mutex scorecard_mu_;
  std::deque<reports::RunData> scorecard_jobs_ ABSL_GUARDED_BY(scorecard_mu_);
  bool scorecard_stop_ ABSL_GUARDED_BY(scorecard_mu_) = false;
  std::thread scorecard_thread_;

  // Export jobs, queued by HandleExport (core thread) for the export thread.
  struct ExportJob {
    std::string run_id;
    ExportDone done;
  };
  absl::Mutex export_mu_;
  std::deque<ExportJob> export_jobs_ ABSL_GUARDED_BY(export_mu_);
  bool export_stop_ ABSL_GUARDED_BY(export_mu_) = false;
  std::thread export_thread_;

  // History queries (core_history.cc): started by Start, stopped by Stop.
  HistoryPool history_pool_{HistoryPool::Options{.db_path = db_path_,
                                                 .threads = options_.history_threads,
                                                 .max_queued = options_.history_queue}};
};

// An artifact record (a bug report, a job file) as stored: its node and task
// as the store has them, and the serialized v1::Record.
struct StoredArtifact {
  std::string node, task_id;
  int64_t seq = 0;
  std::string record;
};
// The RMA bundle's artefacts (docs/history.md): the artifacts of the nodes
// in `rejected` are written to <dir>/artifacts/<node>/<task>-<seq>-<name>,
// every part reduced to [A-Za-z0-9._-] (a name from a node never picks a
// path), so they outlive the records. Returns the files written; a record
// that does not parse is skipped.
std::vector<std::string> WriteRejectedArtifacts(
    const std::string& dir, const std::vector<StoredArtifact>& artifacts,
    const std::set<std::string>& rejected);

// The coordinator's log lines at a run's start and end, in the words and
// counts cmaxctl uses (common/task_state.h, common/plural.h): "run R
// submitted: plan 'quick', 2 tasks on 1 node"; "run R completed: tier not
// rated; 2 tasks: 0 completed, 2 could not run, 0 failed; 0 nodes failed".
std::string RunSubmittedLine(const std::string& run_id, const std::string& plan, size_t tasks,
                             size_t nodes);
std::string RunEndedLine(const std::string& run_id, const std::string& state,
                         const std::string& tier, const TaskCounts& tasks, int nodes_failed);

}  // namespace cmax::coordinator

#endif  // CMAX_COORDINATOR_CORE_H_
