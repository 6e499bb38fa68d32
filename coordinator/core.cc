// The coordinator core's life cycle and its API: opening the store and
// restoring unfinished runs (Create), the core, scorecard and export threads
// (Start, Stop, Post), the handlers behind the gRPC API (agents, submit,
// list, get, cancel, watch) and the web view's snapshots. The round loop and
// dispatch are in core_dispatch.cc, record ingest in core_ingest.cc, the
// scorecard and its files in core_report.cc, export in core_export.cc, the
// metrics in core_metrics.cc.
#include "coordinator/core.h"

#include <algorithm>

#include <pthread.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/logging.h"
#include "common/owned_dir.h"
#include "common/plan_parser.h"
#include "common/plural.h"
#include "common/run_id.h"
#include "common/secrets.h"
#include "common/status_macros.h"
#include "common/time_util.h"
#include "coordinator/await_on_core.h"

namespace cmax::coordinator {
namespace {

std::shared_ptr<spdlog::logger> Log() { return GetLogger("coordinator"); }

// A one-time migration. Before it, RunInfo.tasks_failed counted the tasks
// that could not run (exit code 2) as failures, so `cmaxctl runs` and the
// web view said "26 failed" of a run whose final line said "0 failed, 26
// could not run". Every stored run is counted again from its tasks, the way
// the scheduler counts now (common/task_state.h), in one transaction.
absl::Status RecountStoredRuns(Store& store) {
  constexpr char kKey[] = "run_counts";
  CMAX_ASSIGN_OR_RETURN(std::string done, store.GetMeta(kKey));
  if (done == "broke-apart") return absl::OkStatus();
  CMAX_ASSIGN_OR_RETURN(std::vector<RunRow> runs, store.ListRuns(0, false));
  CMAX_RETURN_IF_ERROR(store.BeginRound());
  int changed = 0;
  for (RunRow& run : runs) {
    CMAX_ASSIGN_OR_RETURN(std::vector<TaskRow> tasks, store.LoadTasks(run.info.run_id()));
    std::vector<v1::TaskInfo> infos;
    infos.reserve(tasks.size());
    for (auto& t : tasks) infos.push_back(std::move(t.info));
    const TaskCounts c = CountTasks(infos);
    if (c.failed == run.info.tasks_failed() &&
        c.could_not_run == run.info.tasks_could_not_run()) {
      continue;
    }
    run.info.set_tasks_failed(c.failed);
    run.info.set_tasks_could_not_run(c.could_not_run);
    CMAX_RETURN_IF_ERROR(store.PutRun(run));
    ++changed;
  }
  CMAX_RETURN_IF_ERROR(store.PutMeta(kKey, "broke-apart"));
  CMAX_RETURN_IF_ERROR(store.CommitRound());
  if (changed > 0) {
    Log()->info("store: {} counted again: a task that could not run is no longer a failure",
                Counted(changed, "stored run", "stored runs"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<CoordinatorCore>> CoordinatorCore::Create(
    const CoreOptions& options) {
  // Its own folder: the database and the reports are trusted as written
  // (common/owned_dir.h).
  CMAX_RETURN_IF_ERROR(EnsureOwnedDir(options.data_dir, "data dir"));
  std::string reports = options.data_dir + "/reports";
  if (mkdir(reports.c_str(), 0750) != 0 && errno != EEXIST) {
    return absl::InternalError(absl::StrCat("cannot create ", reports, ": ", strerror(errno)));
  }
  CMAX_ASSIGN_OR_RETURN(std::unique_ptr<Store> store,
                        Store::Open(options.data_dir + "/cmax.db"));
  if (options.store_fault_for_testing) {
    store->SetFaultHookForTesting(options.store_fault_for_testing);
  }
  CMAX_RETURN_IF_ERROR(RecountStoredRuns(*store));
  std::unique_ptr<CoordinatorCore> core(new CoordinatorCore(options, std::move(store)));
  // Restore: unfinished runs go on; their nodes must come back within the
  // heartbeat timeout, counted from now.
  const int64_t now = MonotonicNs();
  CMAX_ASSIGN_OR_RETURN(std::vector<AgentRow> agents, core->store_->LoadAgents());
  for (const auto& a : agents) core->registry_.AddRemembered(a.node, a.inventory, now);
  CMAX_ASSIGN_OR_RETURN(std::vector<RunRow> runs,
                        core->store_->ListRuns(0, /*unfinished_only=*/true));
  for (auto& run : runs) {
    CMAX_ASSIGN_OR_RETURN(std::vector<TaskRow> tasks, core->store_->LoadTasks(run.info.run_id()));
    Log()->info("resuming run {} ({} tasks)", run.info.run_id(), tasks.size());
    // Rendezvous state lives in memory and does not survive a restart: the
    // groups of running tasks are reopened empty. Requests that were waiting
    // are re-sent by the agents after they reconnect, so a barrier in
    // progress still completes; a key set before the restart is gone, so a
    // rank that asks for it times out and the group fails cleanly (and is
    // retried where the plan allows). Keys are process-lifetime values (an
    // NCCL unique id, a listening address), which is why they are not made
    // durable: a group that has already exchanged them runs on unaffected.
    for (const auto& t : tasks) {
      auto st = t.info.state();
      if (!t.assignment.group().empty() &&
          (st == v1::TASK_ASSIGNED || st == v1::TASK_RUNNING)) {
        core->rendezvous_.Open(t.assignment.group(), t.assignment.world_size());
      }
    }
    core->scheduler_.Restore(std::move(run), std::move(tasks));
  }
  core->schedules_.SetLimits({options.min_schedule_every_ns, options.max_schedules});
  CMAX_RETURN_IF_ERROR(core->schedules_.Load());
  core->ReconcileScheduleRuns();
  CMAX_RETURN_IF_ERROR(core->InitRemediation());
  // History is evidence, not state the runs need: a failure here is logged
  // and the coordinator starts.
  if (auto s = core->BackfillHistory(); !s.ok()) {
    Log()->error("history: backfill from earlier runs failed: {}", s.ToString());
  }
  if (options.keep_runs_for_ns > 0) {
    constexpr int64_t kSecond = 1000000000;
    const int64_t every =
        options.retention_every_ns > 0
            ? options.retention_every_ns
            : std::clamp<int64_t>(options.keep_runs_for_ns / 10, kSecond, 3600 * kSecond);
    CMAX_RETURN_IF_ERROR(core->store_->StartRetention(options.keep_runs_for_ns, every,
                                                      options.data_dir + "/reports"));
    Log()->info("retention: the records of runs that ended more than {} s ago are dropped, "
                "and the scorecards of scheduled runs (checked every {} s); runs, tasks and "
                "the scorecards of runs submitted by hand stay",
                options.keep_runs_for_ns / kSecond, every / kSecond);
  }
  return core;
}

CoordinatorCore::CoordinatorCore(CoreOptions options, std::unique_ptr<Store> store)
    : options_(std::move(options)),
      db_path_(options_.data_dir + "/cmax.db"),
      store_(std::move(store)),
      registry_(options_.heartbeat_timeout_ms * 1000000),
      rendezvous_([this](const std::string& node,
                         int64_t unix_ns) { return registry_.ToAgentClock(node, unix_ns); },
                  options_.barrier_lead_ms * 1000000),
      pacer_(HeartbeatPacer::Limits{.base_period_ms = options_.ping_interval_ms}) {
  if (!options_.slurm_scontrol.empty()) {
    slurm_ = std::make_unique<SlurmDrainer>(options_.slurm_scontrol);
  }
}

CoordinatorCore::~CoordinatorCore() { Stop(); }

void CoordinatorCore::Start() {
  // Debian's Abseil checks every Mutex acquisition for lock-order cycles
  // (a debug aid); with a mutex or two per agent stream that graph costs
  // more than the work at 10,000 agents (perf: GraphCycles::GetId).
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  // Named so that per-thread CPU can be read from /proc/PID/task/*/stat
  // (benchmarks/scale: the core thread's CPU per record during ingest).
  scorecard_thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "cmax-scorecard");
    ScorecardLoop();
  });
  history_pool_.Start();
  export_thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "cmax-export");
    ExportLoop();
  });
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "cmax-core");
    Loop();
  });
}

void CoordinatorCore::BeginShutdown() {
  shutting_down_.store(true);
  Post([this] {
    const std::string reason = "the coordinator is shutting down; its successor resumes the run";
    Log()->info("shutting down: no agent or task is declared lost from here on; {} agent "
                "stream(s) closed so they reconnect to the next coordinator, unfinished runs "
                "resume there",
                sessions_.size());
    for (auto& [raw, session] : sessions_) session->Close(reason);
    for (auto& [run_id, list] : watchers_) {
      for (auto& w : list) {
        if (!w->closed()) w->OnShutdown(reason);
      }
    }
    watchers_.clear();
  });
}

void CoordinatorCore::Stop() {
  history_pool_.Stop();  // its waiters get UNAVAILABLE
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
  // After the core thread: nothing queues an export any more.
  {
    absl::MutexLock lock(&export_mu_);
    export_stop_ = true;
  }
  if (export_thread_.joinable()) export_thread_.join();
  {
    absl::MutexLock lock(&scorecard_mu_);
    scorecard_stop_ = true;
  }
  if (scorecard_thread_.joinable()) scorecard_thread_.join();
  if (slurm_) slurm_->Stop();
  idle_probe_.Stop();
}

void CoordinatorCore::Post(std::function<void()> fn) {
  absl::MutexLock lock(&mu_);
  queue_.push_back(std::move(fn));
}

v1::ListAgentsResponse CoordinatorCore::HandleListAgents() {
  v1::ListAgentsResponse resp;
  std::map<std::string, std::string> running;
  for (RunRow* run : scheduler_.Runs()) {
    for (TaskRow* t : scheduler_.TasksOf(run->info.run_id())) {
      auto s = t->info.state();
      if (s != v1::TASK_ASSIGNED && s != v1::TASK_RUNNING) continue;
      for (const auto& n : t->nodes) running[n] = t->info.task_id();
    }
  }
  for (const AgentEntry* e : registry_.All()) {
    auto* a = resp.add_agents();
    a->set_node_name(e->node);
    std::string state = AgentStateName(e->state);
    if (e->state == AgentState::kConnected && running.count(e->node)) {
      state = "busy";
      a->set_running_task(running[e->node]);
    }
    a->set_state(state);
    a->set_last_heartbeat_unix_ns(e->last_heard_unix_ns);
    a->set_clock_offset_ms(e->offset_ns / 1e6);
    a->set_rtt_ms(e->rtt_ns < 0 ? -1 : e->rtt_ns / 1e6);
    *a->mutable_inventory() = e->inventory;
    for (const auto& addr : e->addresses) a->add_addresses(addr);
  }
  return resp;
}

std::string CoordinatorCore::NewRunId() {
  int64_t now = NowUnixNs();
  time_t secs = static_cast<time_t>(now / 1000000000);
  tm utc;
  gmtime_r(&secs, &utc);
  return absl::StrFormat("r%04d%02d%02d-%02d%02d%02d-%s", utc.tm_year + 1900, utc.tm_mon + 1,
                         utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, RandomId(2));
}

absl::StatusOr<v1::SubmitRunResponse> CoordinatorCore::HandleSubmitRun(
    const v1::SubmitRunRequest& request) {
  return StartRun(request.plan(), nullptr, "");
}

absl::StatusOr<v1::SubmitRunResponse> CoordinatorCore::StartRun(
    const v1::Plan& plan, const std::vector<std::string>* only_nodes,
    const std::string& schedule_id) {
  CMAX_RETURN_IF_ERROR(ValidatePlan(plan));
  struct statvfs vfs;
  if (statvfs(options_.data_dir.c_str(), &vfs) == 0) {
    int64_t free_bytes = static_cast<int64_t>(vfs.f_bavail) * static_cast<int64_t>(vfs.f_frsize);
    if (free_bytes < options_.min_free_bytes) {
      std::string why = absl::StrFormat(
          "the coordinator's disk is full: its data directory %s has %d MiB free (needs %d "
          "MiB); new runs are refused until space is freed",
          options_.data_dir, free_bytes >> 20, options_.min_free_bytes >> 20);
      Log()->warn("run of plan '{}' refused: {}", plan.name(), why);
      return absl::ResourceExhaustedError(why);
    }
  }
  Changes changes;
  const std::string run_id = NewRunId();
  CMAX_ASSIGN_OR_RETURN(RunRow * run, scheduler_.CreateRun(plan, registry_, NowUnixNs(), run_id,
                                                           &changes, only_nodes));
  // Retention ages out the scorecards of scheduled runs (store_retention.cc).
  if (!schedule_id.empty()) run->info.set_schedule_id(schedule_id);
  // Persist the whole run before anything is assigned; undo on failure.
  std::vector<const TaskRow*> rows;
  for (TaskRow* t : scheduler_.TasksOf(run_id)) rows.push_back(t);
  absl::Status st = store_->PutRun(*run);
  if (st.ok()) st = store_->PutTasks(rows);
  if (!st.ok()) {
    scheduler_.Forget(run_id);
    return st;
  }
  v1::SubmitRunResponse resp;
  resp.set_run_id(run_id);
  resp.set_tasks(static_cast<int>(rows.size()));
  for (const auto& n : run->nodes) resp.add_nodes(n);
  Log()->info("{}{}", RunSubmittedLine(run_id, plan.name(), rows.size(), run->nodes.size()),
              schedule_id.empty() ? "" : absl::StrCat(" (schedule ", schedule_id, ")"));
  Changes sched;
  scheduler_.Schedule(registry_, NowUnixNs(), &sched);
  // A run whose every entry needed more nodes than it has ended in
  // CreateRun (persisted above as such): its scorecard is built now.
  for (const auto& id : changes.finished_runs) sched.finished_runs.push_back(id);
  Apply(sched);
  Checkpoint();  // the caller is told "submitted" once it is durable
  return resp;
}

absl::StatusOr<v1::ListRunsResponse> CoordinatorCore::HandleListRuns(
    const v1::ListRunsRequest& request) {
  CMAX_ASSIGN_OR_RETURN(std::vector<RunRow> runs,
                        store_->ListRuns(request.limit() > 0 ? request.limit() : 50, false));
  v1::ListRunsResponse resp;
  for (auto& r : runs) *resp.add_runs() = r.info;
  return resp;
}

absl::StatusOr<v1::GetRunResponse> CoordinatorCore::HandleGetRun(const std::string& run_id) {
  v1::GetRunResponse resp;
  if (RunRow* run = scheduler_.FindRun(run_id)) {
    *resp.mutable_run() = run->info;
    for (TaskRow* t : scheduler_.TasksOf(run_id)) *resp.add_tasks() = t->info;
    return resp;
  }
  CMAX_ASSIGN_OR_RETURN(RunRow run, store_->GetRun(run_id));
  *resp.mutable_run() = run.info;
  CMAX_ASSIGN_OR_RETURN(std::vector<TaskRow> tasks, store_->LoadTasks(run_id));
  for (auto& t : tasks) *resp.add_tasks() = t.info;
  return resp;
}

absl::StatusOr<v1::CancelRunResponse> CoordinatorCore::HandleCancelRun(const std::string& run_id) {
  if (building_.count(run_id)) {
    return absl::FailedPreconditionError(
        absl::StrCat("run ", run_id, " has already ended (its scorecard is being built)"));
  }
  Changes changes;
  auto n = scheduler_.Cancel(run_id, NowUnixNs(), &changes);
  if (!n.ok()) {
    if (store_->GetRun(run_id).ok()) {
      return absl::FailedPreconditionError(absl::StrCat("run ", run_id, " has already ended"));
    }
    return n.status();
  }
  Log()->info("run {} cancelled: {} tasks stopped", run_id, *n);
  Apply(changes);
  Checkpoint();
  v1::CancelRunResponse resp;
  resp.set_tasks_cancelled(*n);
  return resp;
}

absl::Status CoordinatorCore::HandleWatchRun(const std::string& run_id,
                                             std::shared_ptr<RunWatcher> watcher) {
  CMAX_ASSIGN_OR_RETURN(v1::GetRunResponse current, HandleGetRun(run_id));
  v1::RunEvent first;
  *first.mutable_run() = current.run();
  watcher->OnEvent(first);
  for (const auto& t : current.tasks()) {
    v1::RunEvent ev;
    *ev.mutable_run() = current.run();
    *ev.mutable_task() = t;
    watcher->OnEvent(ev);
  }
  if (!scheduler_.FindRun(run_id)) {
    watcher->OnEnd();
    return absl::OkStatus();
  }
  watchers_[run_id].push_back(std::move(watcher));
  return absl::OkStatus();
}

}  // namespace cmax::coordinator

// --- The web view's snapshots (coordinator/web; await_on_core.h). ---
namespace cmax::coordinator {

std::string RunSubmittedLine(const std::string& run_id, const std::string& plan, size_t tasks,
                             size_t nodes) {
  return absl::StrCat("run ", run_id, " submitted: plan '", plan, "', ",
                      Counted(static_cast<int64_t>(tasks), "task", "tasks"), " on ",
                      Counted(static_cast<int64_t>(nodes), "node", "nodes"));
}

std::string RunEndedLine(const std::string& run_id, const std::string& state,
                         const std::string& tier, const TaskCounts& tasks, int nodes_failed) {
  return absl::StrCat("run ", run_id, " ", state, ": tier ", tier.empty() ? "none" : tier, "; ",
                      Counted(tasks.total, "task", "tasks"), ": ", TaskCountsText(tasks), "; ",
                      Counted(nodes_failed, "node", "nodes"), " failed");
}

absl::StatusOr<v1::ListAgentsResponse> CoordinatorCore::SnapshotAgents(absl::Duration timeout) {
  return AwaitOnCore<v1::ListAgentsResponse>(
      this, [this]() -> absl::StatusOr<v1::ListAgentsResponse> { return HandleListAgents(); },
      timeout);
}

absl::StatusOr<v1::ListRunsResponse> CoordinatorCore::SnapshotRuns(int limit,
                                                                   absl::Duration timeout) {
  return AwaitOnCore<v1::ListRunsResponse>(
      this,
      [this, limit]() -> absl::StatusOr<v1::ListRunsResponse> {
        v1::ListRunsRequest request;
        request.set_limit(limit);
        auto runs = HandleListRuns(request);
        if (!runs.ok()) return runs;
        // A running run's counters as the scheduler has them now (the
        // stored row is only rewritten at some changes).
        for (auto& r : *runs->mutable_runs()) {
          if (RunRow* live = scheduler_.FindRun(r.run_id())) r = live->info;
        }
        return runs;
      },
      timeout);
}

absl::StatusOr<v1::GetRunResponse> CoordinatorCore::SnapshotRun(const std::string& run_id,
                                                                absl::Duration timeout) {
  if (!IsSafeRunId(run_id)) return absl::InvalidArgumentError("bad run id");
  return AwaitOnCore<v1::GetRunResponse>(
      this, [this, run_id]() -> absl::StatusOr<v1::GetRunResponse> { return HandleGetRun(run_id); },
      timeout);
}

}  // namespace cmax::coordinator
