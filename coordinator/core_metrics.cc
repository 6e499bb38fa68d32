// The coordinator core's Prometheus exposition (--metrics-listen): agents,
// runs and tasks by state, record ingest counters and latency, the store's
// size, the schedules' health and the last scorecard's tier, grades and
// verdicts, rendered on the core thread (RenderMetrics waits for it with a
// timeout).
#include <sys/stat.h>

#include <algorithm>

#include "common/median.h"
#include "common/version.h"
#include "coordinator/core.h"

namespace cmax::coordinator {
namespace {

// A category grade as a number for dashboards: A 4 .. D 1, F 0; none for
// "not measured" (a missing sample, never a zero that reads as a grade).
std::optional<double> GradePoints(const std::string& grade) {
  if (grade == "A") return 4;
  if (grade == "B") return 3;
  if (grade == "C") return 2;
  if (grade == "D") return 1;
  if (grade == "F") return 0;
  return std::nullopt;
}

int64_t FileBytes(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 ? static_cast<int64_t>(st.st_size) : 0;
}

}  // namespace

absl::StatusOr<std::string> CoordinatorCore::RenderMetrics(absl::Duration timeout) {
  struct Reply {
    absl::Mutex mu;
    bool done ABSL_GUARDED_BY(mu) = false;
    std::string text ABSL_GUARDED_BY(mu);
  };
  auto reply = std::make_shared<Reply>();
  Post([this, reply] {
    std::string text = MetricsText();
    absl::MutexLock lock(&reply->mu);
    reply->text = std::move(text);
    reply->done = true;
  });
  absl::MutexLock lock(&reply->mu);
  auto done = [r = reply.get()]() ABSL_SHARED_LOCKS_REQUIRED(r->mu) { return r->done; };
  if (!reply->mu.AwaitWithTimeout(absl::Condition(&done), timeout)) {
    return absl::UnavailableError("the coordinator core did not answer in time");
  }
  return std::move(reply->text);
}

// The fault loop: watch records, incidents by state, and the measured
// phases of closed incidents by finding class (check id).
void CoordinatorCore::RemediationMetrics(cmax::MetricsText* m) {
  m->Family("cmax_watch_records_stored_total", "counter",
            "records of the nodes' passive watch stored since the coordinator started");
  m->Sample(static_cast<double>(watch_records_));
  std::map<std::string, int> states;
  struct Phase {
    double sum = 0;
    int count = 0;
  };
  std::map<std::pair<std::string, std::string>, Phase> phases;  // (phase, check)
  for (const auto& [id, inc] : incidents_->incidents()) {
    ++states[remediation::IncidentStateName(inc.state())];
    const remediation::IncidentTimings t = remediation::TimingsOf(inc);
    for (const auto& [name, v] : {std::pair{"detect", t.detect_s}, {"quarantine", t.quarantine_s},
                                  {"repair", t.repair_s}}) {
      if (v < 0) continue;
      Phase& p = phases[{name, inc.check_id()}];
      p.sum += v;
      ++p.count;
    }
  }
  m->Family("cmax_incidents", "gauge", "incidents of the fault loop in the store, by state");
  for (const char* s : {"planned", "held", "quarantined", "remediating", "verifying", "returned",
                        "escalated", "dismissed"}) {
    m->Sample(states[s], {{"state", s}});
  }
  m->Family("cmax_remediation_paused", "gauge", "1 while an admin has paused the fault loop");
  m->Sample(incidents_->paused() ? 1 : 0);
  m->Family("cmax_incident_phase_seconds_total", "counter",
            "seconds summed over the incidents' measured phases: detect (signal to "
            "coordinator), quarantine (to fenced), repair (to returned), by finding class");
  for (const auto& [key, p] : phases) {
    m->Sample(p.sum, {{"phase", key.first}, {"check", key.second}});
  }
  m->Family("cmax_incident_phases_timed_total", "counter",
            "incidents whose phase was measured (divide the seconds by it for the mean)");
  for (const auto& [key, p] : phases) {
    m->Sample(p.count, {{"phase", key.first}, {"check", key.second}});
  }
}

std::string CoordinatorCore::MetricsText() {
  cmax::MetricsText m;
  m.Family("cmax_build_info", "gauge", "cmax version of this coordinator");
  m.Sample(1, {{"version", kCmaxVersion}});

  std::map<std::string, int> agents = {{"connected", 0}, {"busy", 0}, {"disconnected", 0},
                                       {"lost", 0}};
  std::set<std::string> busy;
  std::map<std::string, int> runs, tasks;
  for (RunRow* run : scheduler_.Runs()) {
    ++runs[run->info.state()];
    for (TaskRow* t : scheduler_.TasksOf(run->info.run_id())) {
      ++tasks[TaskStateName(t->info.state())];
      if (t->info.state() == v1::TASK_ASSIGNED || t->info.state() == v1::TASK_RUNNING) {
        busy.insert(t->nodes.begin(), t->nodes.end());
      }
    }
  }
  for (const AgentEntry* e : registry_.All()) {
    std::string state = AgentStateName(e->state);
    if (e->state == AgentState::kConnected && busy.count(e->node)) state = "busy";
    ++agents[state];
  }
  m.Family("cmax_agents", "gauge", "agents known to the coordinator, by state");
  for (const auto& [state, n] : agents) m.Sample(n, {{"state", state}});
  m.Family("cmax_runs_active", "gauge", "runs not yet ended, by state");
  for (const auto& [state, n] : runs) m.Sample(n, {{"state", state}});
  m.Family("cmax_runs_ended_total", "counter",
           "runs that ended since the coordinator started, by final state");
  for (const auto& [state, n] : runs_ended_) m.Sample(static_cast<double>(n), {{"state", state}});
  m.Family("cmax_tasks", "gauge", "tasks of the runs not yet ended, by state");
  for (const auto& [state, n] : tasks) m.Sample(n, {{"state", state}});

  m.Family("cmax_records_stored_total", "counter", "records stored and acknowledged");
  m.Sample(static_cast<double>(records_stored_));
  m.Family("cmax_records_duplicate_total", "counter",
           "records resent by agents that the store already held (acknowledged again)");
  m.Sample(static_cast<double>(records_duplicate_));
  m.Family("cmax_records_refused_total", "counter",
           "records of unknown tasks or of tasks not on the sending node (dropped)");
  m.Sample(static_cast<double>(records_refused_));
  m.Family("cmax_record_batch_ingest_seconds", "histogram",
           "time from a record batch's arrival on the core thread until it is stored and "
           "acknowledged");
  m.Write(batch_seconds_);
  RemediationMetrics(&m);
  m.Family("cmax_store_bytes", "gauge", "size of the SQLite store (database and WAL files)");
  m.Sample(static_cast<double>(FileBytes(db_path_) + FileBytes(db_path_ + "-wal")));
  {
    // History queries (history_pool.h): off this thread; counted there.
    const HistoryPool::Counts h = history_pool_.counts();
    m.Family("cmax_history_queries_total", "counter",
             "history and fleet queries (GetHistory, /fleet, /nodes/NAME) by outcome: run on "
             "a history thread, shared (a caller joined one in flight), busy (refused: too "
             "many at once), dropped (every caller gone before it started), cancelled "
             "(every caller gone while it ran: stopped)");
    m.Sample(static_cast<double>(h.run), {{"outcome", "run"}});
    m.Sample(static_cast<double>(h.shared), {{"outcome", "shared"}});
    m.Sample(static_cast<double>(h.busy), {{"outcome", "busy"}});
    m.Sample(static_cast<double>(h.dropped), {{"outcome", "dropped"}});
    m.Sample(static_cast<double>(h.cancelled), {{"outcome", "cancelled"}});
    m.Family("cmax_history_queries_in_flight", "gauge",
             "history queries now running on a history thread or waiting for one");
    m.Sample(h.running, {{"state", "running"}});
    m.Sample(h.queued, {{"state", "queued"}});
  }
  if (options_.keep_runs_for_ns > 0) {
    const Store::RetentionStats r = store_->retention_stats();
    m.Family("cmax_store_retention_keep_seconds", "gauge",
             "--keep-runs-for: runs that ended longer ago than this lose their records");
    m.Sample(static_cast<double>(options_.keep_runs_for_ns / 1000000000));
    m.Family("cmax_store_retention_passes_total", "counter", "retention passes, by outcome");
    m.Sample(static_cast<double>(r.passes - r.failed_passes), {{"outcome", "ok"}});
    m.Sample(static_cast<double>(r.failed_passes), {{"outcome", "failed"}});
    m.Family("cmax_store_retention_runs_pruned_total", "counter",
             "runs whose records retention dropped (their scorecards stay)");
    m.Sample(static_cast<double>(r.runs_pruned));
    m.Family("cmax_store_retention_records_dropped_total", "counter",
             "records retention dropped");
    m.Sample(static_cast<double>(r.records_dropped));
    m.Family("cmax_store_retention_pages_freed_total", "counter",
             "database pages retention gave back to the file system");
    m.Sample(static_cast<double>(r.pages_freed));
    m.Family("cmax_store_retention_scorecards_dropped_total", "counter",
             "scorecard folders of scheduled runs retention deleted");
    m.Sample(static_cast<double>(r.scorecards_dropped));
  }

  const std::vector<v1::ScheduleInfo> schedules = schedules_.List();
  if (!schedules.empty()) {
    auto family = [&](const char* name, const char* type, const char* help,
                      const std::function<std::optional<double>(const v1::ScheduleInfo&)>& value) {
      m.Family(name, type, help);
      for (const auto& sc : schedules) {
        if (auto v = value(sc)) {
          m.Sample(*v, {{"schedule", sc.schedule_id()}, {"plan", sc.spec().plan().name()}});
        }
      }
    };
    // Whole seconds: a fraction is written with 9 significant digits
    // (FormatValue), which would round a Unix time to tens of seconds.
    auto seconds = [](int64_t ns) -> std::optional<double> {
      if (ns <= 0) return std::nullopt;
      return static_cast<double>(ns / 1000000000);
    };
    family("cmax_schedule_paused", "gauge", "1 when the schedule is paused, else 0",
           [](const v1::ScheduleInfo& sc) { return sc.paused() ? 1.0 : 0.0; });
    family("cmax_schedule_last_run_timestamp_seconds", "gauge",
           "when the schedule last started a run (or tried to); no sample before its first",
           [&](const v1::ScheduleInfo& sc) { return seconds(sc.last_started_unix_ns()); });
    family("cmax_schedule_next_run_timestamp_seconds", "gauge",
           "when the schedule's next slot starts (its window considered); no sample while "
           "paused",
           [&](const v1::ScheduleInfo& sc) { return seconds(sc.next_start_unix_ns()); });
    family("cmax_schedule_last_run_failed", "gauge",
           "1 when the schedule's last run failed (not completed, a node failed, or it could "
           "not start), 0 when it did not; no sample before one ended",
           [](const v1::ScheduleInfo& sc) -> std::optional<double> {
             if (sc.last_outcome().empty()) return std::nullopt;
             return sc.last_failed() ? 1.0 : 0.0;
           });
    family("cmax_schedule_runs_total", "counter", "runs the schedule started",
           [](const v1::ScheduleInfo& sc) { return static_cast<double>(sc.runs_started()); });
    family("cmax_schedule_failures_total", "counter",
           "the schedule's runs that failed or could not start",
           [](const v1::ScheduleInfo& sc) { return static_cast<double>(sc.failures()); });
    family("cmax_schedule_skipped_slots_total", "counter",
           "slots the schedule skipped (started no run for), each with its reason in "
           "`cmaxctl schedule list`",
           [](const v1::ScheduleInfo& sc) { return static_cast<double>(sc.slots_skipped()); });
  }

  // Node history (docs/history.md): from every stored run, not only this
  // process's.
  {
    int open = 0;
    for (const auto& [node, h] : node_health_) open += h.incident.has_open;
    m.Family(
        "cmax_incidents_open", "gauge",
        "nodes with an open incident: rejected by a run, and what failed not yet measured again "
        "and passed");
    m.Sample(open);
    m.Family("cmax_node_incident_open", "gauge",
             "1 while the node's incident is open, else 0 (nodes some run measured)");
    for (const auto& [node, h] : node_health_) {
      m.Sample(h.incident.has_open ? 1.0 : 0.0, {{"node", node}});
    }
    m.Family(
        "cmax_node_incident_opened_timestamp_seconds", "gauge",
        "when the node's open incident opened (the rejecting run's end); no sample when "
        "none is open");
    for (const auto& [node, h] : node_health_) {
      if (h.incident.has_open) {
        m.Sample(static_cast<double>(h.incident.open.opened_unix_ns() / 1000000000), {{"node", node}});
      }
    }
    m.Family(
        "cmax_node_last_accepted_timestamp_seconds", "gauge",
        "when a run last accepted the node (its end); time since: time() minus this; no "
        "sample before its first acceptance");
    for (const auto& [node, h] : node_health_) {
      if (h.last_accept_ns > 0) {
        m.Sample(static_cast<double>(h.last_accept_ns / 1000000000), {{"node", node}});
      }
    }
    m.Family(
        "cmax_incidents_closed_total", "counter",
        "incidents closed (a node rejected, then what failed measured again and passed) in the "
        "store");
    m.Sample(static_cast<double>(repair_hours_.size()));
    if (!repair_hours_.empty()) {
      std::vector<double> sorted = repair_hours_;
      std::sort(sorted.begin(), sorted.end());
      m.Family("cmax_time_to_repair_hours", "gauge",
               "time to repair of the closed incidents (close minus open), quantiles by "
               "linear "
               "interpolation; no sample before one closed");
      m.Sample(SortedQuantile(sorted, 0.5), {{"quantile", "0.5"}});
      m.Sample(SortedQuantile(sorted, 0.9), {{"quantile", "0.9"}});
    }
  }

  if (last_scorecard_) {
    const LastScorecard& c = *last_scorecard_;
    m.Family("cmax_scorecard_tier", "gauge",
             "tier of the last scorecard written (1 for its tier, labelled with the run)");
    m.Sample(1, {{"run", c.run_id}, {"tier", c.tier}});
    m.Family("cmax_scorecard_category_grade", "gauge",
             "grade per category of the last scorecard (1 for its grade)");
    for (const auto& [cat, grade] : c.grades) {
      m.Sample(1, {{"run", c.run_id}, {"category", cat}, {"grade", grade}});
    }
    m.Family("cmax_scorecard_category_points", "gauge",
             "grade per category of the last scorecard as a number: A 4, B 3, C 2, D 1, F 0; "
             "no sample when not measured");
    for (const auto& [cat, grade] : c.grades) {
      if (auto p = GradePoints(grade)) m.Sample(*p, {{"run", c.run_id}, {"category", cat}});
    }
    m.Family("cmax_scorecard_node_verdict", "gauge",
             "verdict per node of the last scorecard (1 for its verdict)");
    for (const auto& [node, verdict] : c.verdicts) {
      m.Sample(1, {{"run", c.run_id}, {"node", node}, {"verdict", verdict}});
    }
  }
  return m.text();
}

}  // namespace cmax::coordinator
