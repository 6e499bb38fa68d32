#include "coordinator/core.h"

#include <malloc.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <fstream>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/atomic_file.h"
#include "common/logging.h"
#include "common/plan_parser.h"
#include "common/time_util.h"
#include "common/version.h"
#include "reports/scorecard.h"

namespace cmax::coordinator {
namespace {

std::shared_ptr<spdlog::logger> Log() { return GetLogger("coordinator"); }

bool IsSafeId(const std::string& id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) return false;
  }
  return id.find("..") == std::string::npos;
}

}  // namespace

absl::StatusOr<std::unique_ptr<CoordinatorCore>> CoordinatorCore::Create(
    const CoreOptions& options) {
  if (mkdir(options.data_dir.c_str(), 0750) != 0 && errno != EEXIST) {
    return absl::InternalError(
        absl::StrCat("cannot create data dir ", options.data_dir, ": ", strerror(errno)));
  }
  std::string reports = options.data_dir + "/reports";
  if (mkdir(reports.c_str(), 0750) != 0 && errno != EEXIST) {
    return absl::InternalError(absl::StrCat("cannot create ", reports, ": ", strerror(errno)));
  }
  auto store = Store::Open(options.data_dir + "/cmax.db");
  if (!store.ok()) return store.status();
  if (options.store_fault_for_testing) {
    (*store)->SetFaultHookForTesting(options.store_fault_for_testing);
  }
  std::unique_ptr<CoordinatorCore> core(new CoordinatorCore(options, std::move(*store)));
  // Restore: unfinished runs go on; their nodes must come back within the
  // heartbeat timeout, counted from now.
  const int64_t now = MonotonicNs();
  auto agents = core->store_->LoadAgents();
  if (!agents.ok()) return agents.status();
  for (const auto& a : *agents) core->registry_.AddRemembered(a.node, a.inventory, now);
  auto runs = core->store_->ListRuns(0, /*unfinished_only=*/true);
  if (!runs.ok()) return runs.status();
  for (auto& run : *runs) {
    auto tasks = core->store_->LoadTasks(run.info.run_id());
    if (!tasks.ok()) return tasks.status();
    Log()->info("resuming run {} ({} tasks)", run.info.run_id(), tasks->size());
    // Rendezvous state lives in memory and does not survive a restart: the
    // groups of running tasks are reopened empty. Requests that were waiting
    // are re-sent by the agents after they reconnect, so a barrier in
    // progress still completes; a key set before the restart is gone, so a
    // rank that asks for it times out and the group fails cleanly (and is
    // retried where the plan allows). Keys are process-lifetime values (an
    // NCCL unique id, a listening address), which is why they are not made
    // durable: a group that has already exchanged them runs on unaffected.
    for (const auto& t : *tasks) {
      auto st = t.info.state();
      if (!t.assignment.group().empty() &&
          (st == v1::TASK_ASSIGNED || st == v1::TASK_RUNNING)) {
        core->rendezvous_.Open(t.assignment.group(), t.assignment.world_size());
      }
    }
    core->scheduler_.Restore(std::move(run), std::move(*tasks));
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
                  options_.barrier_lead_ms * 1000000) {
  ping_period_ms_ = options_.ping_interval_ms;
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
  scorecard_thread_ = std::thread([this] { ScorecardLoop(); });
  thread_ = std::thread([this] { Loop(); });
}

void CoordinatorCore::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
  {
    absl::MutexLock lock(&scorecard_mu_);
    scorecard_stop_ = true;
  }
  if (scorecard_thread_.joinable()) scorecard_thread_.join();
  if (slurm_) slurm_->Stop();
}

void CoordinatorCore::Post(std::function<void()> fn) {
  absl::MutexLock lock(&mu_);
  queue_.push_back(std::move(fn));
}

void CoordinatorCore::Loop() {
  for (;;) {
    std::deque<std::function<void()>> work;
    {
      absl::MutexLock lock(&mu_);
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) {
        return !queue_.empty() || stopping_;
      };
      mu_.AwaitWithTimeout(absl::Condition(&ready), absl::Milliseconds(100));
      if (stopping_) return;
      work.swap(queue_);
    }
    // The whole round is one store transaction (Store::BeginRound): the
    // tasks, runs, agents and records it writes cost one fsync (group
    // commit). Whatever says "durable" to someone -- record acks, status
    // acks, assignments -- waits in deferred_ until EndRound has committed.
    // The pending record batches point into `work`: FlushIngest runs before
    // it goes.
    if (auto st = store_->BeginRound(); !st.ok()) {
      Log()->error("store: cannot begin a transaction: {}", st.ToString());
    }
    batching_ = true;
    for (auto& fn : work) fn();
    FlushIngest();
    FlushAgents();
    Tick();
    batching_ = false;
    EndRound();
  }
}

void CoordinatorCore::Tick() {
  const int64_t mono = MonotonicNs();
  const int64_t now = NowUnixNs();
  // Heartbeats: every connected agent is pinged once a period, spread over
  // the period (a slice every round) rather than all in one burst. The
  // period is --ping interval until that would be more than
  // kMaxPingsPerSecond, then grows with the fleet (at 50,000 agents, 20 s),
  // and the loss timeout with it (at least 3 periods). A pong is also the
  // clock sample; any message counts as heard.
  if (mono - ping_period_checked_ns_ >= 1000000000) {
    ping_period_checked_ns_ = mono;
    connected_ = registry_.ConnectedCount();
    const int64_t wanted_ms = static_cast<int64_t>(connected_) * 1000 / kMaxPingsPerSecond;
    ping_period_ms_ = std::max<int64_t>(options_.ping_interval_ms,
                                        std::min<int64_t>(wanted_ms, kMaxPingPeriodMs));
    // The loss timeout follows the period up at once, and down by at most
    // a second a second: agents pinged on the longer period must not turn
    // lost because the fleet shrank (streams ending) in the meantime.
    const int64_t target_ns =
        std::max<int64_t>(options_.heartbeat_timeout_ms, 3 * ping_period_ms_) * 1000000;
    registry_.set_timeout_ns(
        std::max(target_ns, registry_.timeout_ns() - 1000000000));
  }
  if (last_ping_ns_ == 0) last_ping_ns_ = mono;
  ping_credit_ += static_cast<double>(connected_) * static_cast<double>(mono - last_ping_ns_) /
                  (static_cast<double>(ping_period_ms_) * 1e6);
  ping_credit_ = std::min(ping_credit_, static_cast<double>(connected_));
  last_ping_ns_ = mono;
  if (ping_credit_ >= 1) {
    const size_t n = static_cast<size_t>(ping_credit_);
    ping_credit_ -= static_cast<double>(n);
    v1::CoordinatorMessage ping;
    for (const auto& node : registry_.NextToPing(n)) {
      ping.mutable_ping()->set_t1_ns(NowUnixNs());
      SendNow(node, ping);  // not deferred: the round trip times the clock offset
    }
  }
  Changes changes;
  // The sweeps over every agent and task: five times a second, not every
  // round (rounds come with every pong, thousands a second at scale).
  if (mono - last_sweep_ns_ >= 200000000) {
    last_sweep_ns_ = mono;
    for (const auto& node : registry_.ExpireSilent(mono)) {
      Log()->warn("agent {} lost: nothing heard for {} ms", node,
                  registry_.timeout_ns() / 1000000);
      const AgentEntry* e = registry_.Find(node);
      if (e && e->session) e->session->Close("heartbeat timeout");
      scheduler_.OnNodeLost(node, now, &changes);
    }
    scheduler_.ExpireOverdue(now, 60ll * 1000000000, &changes);
    std::vector<RendezvousOut> replies;
    rendezvous_.Expire(now, &replies);
    for (auto& r : replies) {
      v1::CoordinatorMessage m;
      *m.mutable_rendezvous() = r.reply;
      SendTo(r.node, m);
    }
  }
  for (auto it = run_persist_.begin(); it != run_persist_.end();) {
    RunRow* r = scheduler_.FindRun(it->first);
    if (!r) {
      it = run_persist_.erase(it);
      continue;
    }
    if (it->second.dirty && mono - it->second.written_ns >= kRunPersistEveryNs) {
      PersistRun(*r, /*now=*/true);
    }
    ++it;
  }
  // Scheduling costs a pass over every task: once a round when something
  // that can free a node or a task happened in it (a status, a Hello, a
  // stream that ended, a loss, an expiry), and at least once a second.
  if (schedule_pending_ || !changes.tasks.empty() || mono - last_schedule_ns_ >= 1000000000) {
    schedule_pending_ = false;
    last_schedule_ns_ = mono;
    scheduler_.Schedule(registry_, now, &changes);
  }
  Apply(changes);
}

void CoordinatorCore::SendTo(const std::string& node, const v1::CoordinatorMessage& message) {
  if (store_->in_round()) {
    deferred_.push_back({node, nullptr, nullptr, message});
    return;
  }
  SendNow(node, message);
}

void CoordinatorCore::SendNow(const std::string& node, const v1::CoordinatorMessage& message) {
  const AgentEntry* e = registry_.Find(node);
  if (e && e->session && e->state == AgentState::kConnected) e->session->Send(message);
}

bool CoordinatorCore::Apply(Changes& changes) {
  std::vector<const TaskRow*> rows;
  for (const auto& id : changes.tasks) {
    if (const TaskRow* t = scheduler_.FindTask(id)) rows.push_back(t);
  }
  bool persisted = true;
  if (rows.empty()) {
    // nothing to persist (PutTasks would open and close an empty transaction)
  } else if (auto s = store_->PutTasks(rows); !s.ok()) {
    Log()->error("persisting tasks: {}", s.ToString());
    persisted = false;
  }
  for (const auto& id : changes.runs) {
    if (RunRow* r = scheduler_.FindRun(id)) {
      scheduler_.RefreshCounters(r);
      PersistRun(*r, /*now=*/false);
    }
  }
  // Rendezvous groups live exactly as long as their task runs.
  for (const TaskRow* t : rows) {
    const std::string& group = t->assignment.group();
    if (group.empty()) continue;
    auto s = t->info.state();
    if ((s == v1::TASK_ASSIGNED || s == v1::TASK_RUNNING) && !rendezvous_.IsOpen(group)) {
      rendezvous_.Open(group, t->assignment.world_size());
    } else if ((IsTerminal(s) || s == v1::TASK_PENDING) && rendezvous_.IsOpen(group)) {
      std::vector<RendezvousOut> replies;
      rendezvous_.Close(group, &replies);
      for (auto& r : replies) {
        v1::CoordinatorMessage m;
        *m.mutable_rendezvous() = r.reply;
        SendTo(r.node, m);
      }
    }
  }
  for (const auto& o : changes.out) SendTo(o.node, o.message);
  for (const TaskRow* t : rows) {
    RunRow* run = scheduler_.FindRun(t->info.run_id());
    if (!run) continue;
    v1::RunEvent ev;
    *ev.mutable_run() = run->info;
    *ev.mutable_task() = t->info;
    Broadcast(run->info.run_id(), ev);
  }
  for (const auto& run_id : changes.finished_runs) FinishRun(run_id);
  return persisted;
}

void CoordinatorCore::Broadcast(const std::string& run_id, const v1::RunEvent& event) {
  auto it = watchers_.find(run_id);
  if (it == watchers_.end()) return;
  auto& list = it->second;
  list.erase(std::remove_if(list.begin(), list.end(),
                            [](const std::shared_ptr<RunWatcher>& w) { return w->closed(); }),
             list.end());
  for (auto& w : list) w->OnEvent(event);
}

void CoordinatorCore::HandleAgentMessage(const std::shared_ptr<AgentSession>& session,
                                         const v1::AgentMessage& message) {
  const int64_t mono = MonotonicNs();
  const int64_t now = NowUnixNs();
  if (message.has_hello()) {
    FlushIngest();
    const v1::Hello& hello = message.hello();
    if (!IsValidNodeName(hello.node_name())) {
      Log()->warn("refusing agent from {}: invalid node name", session->peer());
      session->Close("invalid node name: use 1-64 of [A-Za-z0-9_.-]");
      return;
    }
    AgentSession* replaced = registry_.OnHello(hello, session.get(), mono, now);
    sessions_[session.get()] = session;
    if (replaced) {
      replaced->Close("replaced by a newer connection of the same node");
      sessions_.erase(replaced);
      failed_sessions_.erase(replaced);
    }
    Log()->info("agent {} connected from {} ({} GPUs, {} held tasks)", hello.node_name(),
                session->peer(), hello.inventory().gpu_count(), hello.held_size());
    AgentRow row;
    row.node = hello.node_name();
    row.inventory = hello.inventory();
    row.addresses.assign(hello.addresses().begin(), hello.addresses().end());
    row.last_seen_ns = now;
    // In the loop, the Hellos of one round are persisted in one transaction
    // (FlushAgents); the agent row is a cache of its last Hello, which the
    // agent sends again on every connection.
    pending_agents_.push_back(std::move(row));
    if (!batching_) FlushAgents();
    v1::CoordinatorMessage welcome;
    welcome.mutable_welcome()->set_coordinator_version(kCmaxVersion);
    welcome.mutable_welcome()->set_heartbeat_interval_ms(static_cast<int>(ping_period_ms_));
    session->Send(welcome);
    v1::CoordinatorMessage ping;
    ping.mutable_ping()->set_t1_ns(NowUnixNs());
    session->Send(ping);
    Changes changes;
    scheduler_.OnHello(hello.node_name(), hello, &changes);
    // In the loop, Tick schedules once for the whole round.
    if (batching_) {
      schedule_pending_ = true;
    } else {
      scheduler_.Schedule(registry_, now, &changes);
    }
    Apply(changes);
    return;
  }
  const std::string node = registry_.NodeOf(session.get());
  if (node.empty()) {
    session->Close("the first message must be Hello");
    return;
  }
  registry_.OnHeard(session.get(), mono, now);
  // A stream whose records could not be stored is closing: an end status on
  // it must not overtake the records it follows (the agent sends both again
  // on its next stream, records first).
  if (failed_sessions_.count(session.get()) && !message.has_pong()) return;
  // A status (or anything else) must see this stream's earlier records
  // stored and acknowledged, as it did when each batch was its own commit.
  if (!message.has_records() && !message.has_pong()) FlushIngest();
  switch (message.msg_case()) {
    case v1::AgentMessage::kPong:
      registry_.OnPong(session.get(), message.pong(), NowUnixNs());
      break;
    case v1::AgentMessage::kRecords:
      OnRecords(session.get(), node, message.records());
      break;
    case v1::AgentMessage::kStatus:
      OnStatus(session.get(), node, message.status());
      break;
    case v1::AgentMessage::kRendezvous: {
      std::vector<RendezvousOut> replies;
      const auto& req = message.rendezvous();
      TaskRow* t = scheduler_.FindTask(req.group());
      if (t && std::find(t->nodes.begin(), t->nodes.end(), node) == t->nodes.end()) {
        RendezvousOut o;
        o.node = node;
        o.reply.set_request_id(req.request_id());
        o.reply.set_error("this node is not part of the group");
        replies.push_back(o);
      } else {
        rendezvous_.Handle(node, req, now, &replies);
      }
      for (auto& r : replies) {
        v1::CoordinatorMessage m;
        *m.mutable_rendezvous() = r.reply;
        SendTo(r.node, m);
      }
      break;
    }
    default:
      Log()->warn("agent {}: ignoring an empty or unknown message", node);
  }
}

void CoordinatorCore::OnRecords(AgentSession* session, const std::string& node,
                                const v1::RecordBatch& batch) {
  const int64_t arrived_ns = MonotonicNs();
  {
    const int64_t mono = MonotonicNs();
    const double rate = static_cast<double>(options_.max_records_per_second);
    RecordBudget& b = record_budgets_[node];
    if (b.refilled_ns == 0) b.tokens = 2 * rate;
    b.tokens = std::min(2 * rate, b.tokens + rate * static_cast<double>(mono - b.refilled_ns) / 1e9);
    b.refilled_ns = mono;
    b.tokens -= batch.records_size();
    if (b.tokens < 0) {
      b.over += static_cast<int64_t>(-b.tokens);
      b.tokens = 0;
      if (mono - b.warned_ns >= 10ll * 1000000000) {
        Log()->warn("agent {}: {} records over the limit of {} per second (stored anyway)", node,
                    b.over, options_.max_records_per_second);
        b.over = 0;
        b.warned_ns = mono;
      }
    }
  }
  struct TaskMeta {
    std::string run_id, suite;
    std::vector<std::string> nodes;
    bool ended = false;
    bool known = false;
  };
  std::map<std::string, TaskMeta> meta;
  std::vector<RecordToStore> rows;
  std::map<std::tuple<std::string, int, int>, int64_t> next;
  std::vector<v1::Finding> findings;
  int refused = 0;
  for (const auto& r : batch.records()) {
    auto [it, inserted] = meta.try_emplace(r.task_id());
    TaskMeta& m = it->second;
    if (inserted) {
      if (const TaskRow* t = scheduler_.FindTask(r.task_id())) {
        m = {t->info.run_id(), t->info.suite(), t->nodes, IsTerminal(t->info.state()), true};
      } else if (auto st = store_->GetTask(r.task_id()); st.ok()) {
        m = {st->info.run_id(), st->info.suite(), st->nodes, true, true};
      } else if (!absl::IsNotFound(st.status())) {
        // Only a definite "no such task" may be acknowledged and dropped.
        // Any other failure (a busy database, an I/O error) says nothing
        // about the task: acknowledge nothing of this batch, and close the
        // stream (a later cumulative ack would cover these records), so the
        // agent reconnects and resends from its last ack.
        Log()->error("agent {}: looking up task {} failed: {}; closing its stream so it "
                     "resends",
                     node, r.task_id(), st.status().ToString());
        failed_sessions_.insert(session);
        session->Close(absl::StrCat("the coordinator could not look up task ", r.task_id(),
                                    ": ", st.status().message()));
        return;
      }
    }
    auto key = std::make_tuple(r.task_id(), r.attempt(), r.rank());
    next[key] = std::max(next[key], r.seq() + 1);
    if (!m.known || std::find(m.nodes.begin(), m.nodes.end(), node) == m.nodes.end() ||
        r.seq() < 0) {
      ++refused;  // acknowledged so the agent can drop it, but not stored
      continue;
    }
    rows.push_back({&r, m.run_id, node, m.suite, m.ended});
    if (r.record().has_finding() && r.record().finding().severity() >= v1::SEVERITY_WARN) {
      v1::Finding f = r.record().finding();
      (*f.mutable_labels())["node"] = node;
      findings.push_back(std::move(f));
    }
  }
  if (refused) {
    Log()->warn("agent {}: dropped {} records of unknown tasks or tasks not on this node", node,
                refused);
  }
  PendingIngest p;
  p.session = sessions_.count(session) ? sessions_[session] : nullptr;
  p.raw = session;
  p.node = node;
  p.rows = std::move(rows);
  p.next = std::move(next);
  p.findings = std::move(findings);
  p.refused = refused;
  p.arrived_ns = arrived_ns;
  pending_rows_ += p.rows.size();
  pending_ingest_.push_back(std::move(p));
  // Inside the loop, batches wait for one transaction at the end of the
  // loop's round (or before anything that must see them stored).
  if (!batching_ || pending_rows_ >= kMaxPendingRows) FlushIngest();
}

void CoordinatorCore::PersistRun(const RunRow& run, bool now) {
  // A run's row holds its plan and node list (80 KB at 10,000 nodes):
  // written when its state changes, else at most once a second (Tick), so
  // a status does not rewrite it. Restore recounts from the tasks.
  RunPersist& p = run_persist_[run.info.run_id()];
  const int64_t mono = MonotonicNs();
  if (!scorecard_thread_.joinable()) now = true;  // no loop (tests): no Tick to flush it
  if (!now && p.state == run.info.state() && p.written_ns != 0 &&
      mono - p.written_ns < kRunPersistEveryNs) {
    p.dirty = true;
    return;
  }
  if (auto s = store_->PutRun(run); !s.ok()) {
    Log()->error("persisting run: {}", s.ToString());
    p.dirty = true;
    return;
  }
  p.state = run.info.state();
  p.written_ns = mono;
  p.dirty = false;
}

void CoordinatorCore::FlushAgents() {
  if (pending_agents_.empty()) return;
  if (auto s = store_->PutAgents(pending_agents_); !s.ok()) {
    Log()->error("persisting {} agents: {}", pending_agents_.size(), s.ToString());
  }
  pending_agents_.clear();
}

void CoordinatorCore::FlushIngest() {
  if (pending_ingest_.empty()) return;
  std::vector<PendingIngest> pending;
  pending.swap(pending_ingest_);
  pending_rows_ = 0;
  std::vector<const std::vector<RecordToStore>*> groups;
  groups.reserve(pending.size());
  for (const auto& p : pending) groups.push_back(&p.rows);
  auto added = store_->InsertRecordGroups(groups);
  if (!added.ok()) {
    // Not acknowledged, and nothing later on these streams may be either: a
    // cumulative ack for a later batch would cover these. Close the streams;
    // the agents reconnect and resend from their last ack.
    for (const auto& p : pending) {
      if (failed_sessions_.count(p.raw)) continue;
      Log()->error("agent {}: storing {} records failed: {}; closing its stream so it resends",
                   p.node, p.rows.size(), added.status().ToString());
      failed_sessions_.insert(p.raw);
      p.raw->Close(absl::StrCat("the coordinator could not store records: ",
                                added.status().message()));
    }
    return;
  }
  for (size_t i = 0; i < pending.size(); ++i) {
    const PendingIngest& p = pending[i];
    AgentSession* session = p.raw;
    const std::string& node = p.node;
    const auto& rows = p.rows;
    const auto& findings = p.findings;
    const int refused = p.refused;
    const int new_rows = (*added)[i];
    for (const auto& [key, next_seq] : p.next) {
      v1::CoordinatorMessage m;
      auto* ack = m.mutable_ack();
      ack->set_task_id(std::get<0>(key));
      ack->set_attempt(std::get<1>(key));
      ack->set_rank(std::get<2>(key));
      ack->set_next_seq(next_seq);
      SendAck(p.session, session, m);
    }
    if (!findings.empty() && !rows.empty()) {
      RunRow* run = scheduler_.FindRun(rows.front().run_id);
      if (run) {
        for (const auto& f : findings) {
          v1::RunEvent ev;
          *ev.mutable_run() = run->info;
          *ev.mutable_finding() = f;
          ev.set_node(node);
          Broadcast(run->info.run_id(), ev);
        }
      }
    }
    // Records the store already held (resent after a reconnect or restart)
    // are dropped by it; benchmarks/chaos/analyze.py reads these lines. Info
    // level only when there were some, so a steady stream does not flood the
    // log.
    const int received = static_cast<int>(rows.size());
    const int duplicates = received - new_rows;
    records_stored_ += static_cast<uint64_t>(new_rows);
    records_duplicate_ += static_cast<uint64_t>(duplicates);
    records_refused_ += static_cast<uint64_t>(refused);
    batch_seconds_.Observe(static_cast<double>(MonotonicNs() - p.arrived_ns) / 1e9);
    if (duplicates > 0) {
      Log()->info("agent {}: records: {} received, {} new, {} duplicates", node, received,
                  new_rows, duplicates);
    } else {
      Log()->debug("agent {}: records: {} received, {} new, {} duplicates", node, received,
                   new_rows, duplicates);
    }
  }
}

void CoordinatorCore::OnStatus(AgentSession* session, const std::string& node,
                               const v1::TaskStatus& status) {
  Changes changes;
  const int64_t now = NowUnixNs();
  scheduler_.OnStatus(node, status, now, &changes);
  if (TaskRow* t = scheduler_.FindTask(status.task_id());
      t && IsTerminal(status.state()) && IsTerminal(t->info.state())) {
    if (auto n = store_->CountRecords(t->info.task_id()); n.ok()) t->info.set_records(*n);
    changes.tasks.insert(t->info.task_id());
  }
  if (batching_) {
    schedule_pending_ = true;  // Tick schedules once for the whole round
  } else {
    scheduler_.Schedule(registry_, now, &changes);
  }
  const bool persisted = Apply(changes);
  // Acknowledged only once durable: otherwise the agent sends it again.
  if (persisted && IsTerminal(status.state())) {
    v1::CoordinatorMessage m;
    auto* ack = m.mutable_status_ack();
    ack->set_task_id(status.task_id());
    ack->set_attempt(status.attempt());
    ack->set_rank(status.rank());
    SendAck(sessions_.count(session) ? sessions_[session] : nullptr, session, m);
  }
}

void CoordinatorCore::HandleStreamEnded(const std::shared_ptr<AgentSession>& session) {
  FlushIngest();
  schedule_pending_ = true;
  std::string node = registry_.OnStreamEnded(session.get(), MonotonicNs());
  sessions_.erase(session.get());
  failed_sessions_.erase(session.get());
  if (!node.empty()) Log()->info("agent {} disconnected", node);
}

v1::RunEvent CoordinatorCore::RunEventFor(const RunRow& run) {
  v1::RunEvent ev;
  *ev.mutable_run() = run.info;
  return ev;
}

void CoordinatorCore::FinishRun(const std::string& run_id) {
  RunRow* run = scheduler_.FindRun(run_id);
  if (!run || building_.count(run_id)) return;
  reports::RunData data;
  data.run = run->info;
  data.plan = run->plan;
  data.nodes = run->nodes;
  for (TaskRow* t : scheduler_.TasksOf(run_id)) data.tasks.push_back(t->info);
  for (const auto& node : run->nodes) {
    if (const AgentEntry* e = registry_.Find(node)) data.inventories[node] = e->inventory;
  }
  if (!scorecard_thread_.joinable()) {
    CompleteRun(BuildScorecardFiles(std::move(data), store_.get(), [] { return false; }));
    return;
  }
  building_.insert(run_id);
  Log()->info("run {} {}: building its scorecard", run_id, run->info.state());
  // Handed over once this round is committed: the scorecard thread reads
  // the store through its own connection, which sees only committed data.
  scorecard_ready_.push_back(std::move(data));
  if (!store_->in_round()) EndRound();
}

void CoordinatorCore::SendAck(const std::shared_ptr<AgentSession>& keep, AgentSession* session,
                              const v1::CoordinatorMessage& message) {
  if (store_->in_round()) {
    deferred_.push_back({"", keep, session, message});
    return;
  }
  session->Send(message);
}

void CoordinatorCore::EndRound() {
  absl::Status committed = store_->CommitRound();
  if (!committed.ok()) {
    Log()->error("store: committing this round failed: {}; its acknowledgements are withheld "
                 "and those agents' streams closed so they resend",
                 committed.ToString());
  }
  std::vector<Deferred> out;
  out.swap(deferred_);
  for (auto& d : out) {
    if (d.session == nullptr) {
      SendNow(d.node, d.message);  // as Apply always did, stored or not
    } else if (committed.ok()) {
      d.session->Send(d.message);
    } else if (!failed_sessions_.count(d.session)) {
      failed_sessions_.insert(d.session);
      d.session->Close(absl::StrCat("the coordinator could not store what it received: ",
                                    committed.message()));
    }
  }
  if (!scorecard_ready_.empty()) {
    absl::MutexLock lock(&scorecard_mu_);
    for (auto& d : scorecard_ready_) scorecard_jobs_.push_back(std::move(d));
    scorecard_ready_.clear();
  }
}

void CoordinatorCore::Checkpoint() {
  if (!store_->in_round()) return;
  EndRound();
  if (auto st = store_->BeginRound(); !st.ok()) {
    Log()->error("store: cannot begin a transaction: {}", st.ToString());
  }
}

void CoordinatorCore::ScorecardLoop() {
  std::unique_ptr<Store> reader;
  auto stopping = [this] {
    absl::MutexLock lock(&scorecard_mu_);
    return scorecard_stop_;
  };
  for (;;) {
    reports::RunData job;
    {
      absl::MutexLock lock(&scorecard_mu_);
      auto ready = [this]() ABSL_SHARED_LOCKS_REQUIRED(scorecard_mu_) {
        return !scorecard_jobs_.empty() || scorecard_stop_;
      };
      scorecard_mu_.Await(absl::Condition(&ready));
      if (scorecard_stop_) return;
      job = std::move(scorecard_jobs_.front());
      scorecard_jobs_.pop_front();
    }
    if (!reader) {
      auto r = Store::OpenReader(db_path_);
      if (!r.ok()) {
        Log()->error("scorecard thread: {}", r.status().ToString());
      } else {
        reader = std::move(*r);
      }
    }
    // Memory the core thread's arenas freed (record batches, gRPC buffers)
    // is not reused by this thread's arena: give it back first, then after.
    malloc_trim(0);
    BuiltScorecard built = BuildScorecardFiles(std::move(job), reader.get(), stopping);
    malloc_trim(0);
    if (built.aborted) return;
    auto shared = std::make_shared<BuiltScorecard>(std::move(built));
    Post([this, shared] {
      building_.erase(shared->run_id);
      CompleteRun(std::move(*shared));
    });
  }
}

CoordinatorCore::BuiltScorecard CoordinatorCore::BuildScorecardFiles(
    reports::RunData data, Store* store, const std::function<bool()>& stopping) {
  BuiltScorecard built;
  built.run_id = data.run.run_id();
  const std::string& run_id = built.run_id;
  if (store == nullptr) {
    Log()->error("run {}: no store connection to read its records from", run_id);
  } else {
    int64_t scanned = 0;
    auto scan = store->ScanRecords(run_id, [&](const v1::ExportedRecord& r) {
      data.records.push_back(r);
      // Checked now and then: a stop must not wait for a long scan.
      if ((++scanned & 0xffff) == 0 && stopping()) {
        built.aborted = true;
        return false;
      }
      return true;
    });
    if (!scan.ok()) Log()->error("run {}: reading records: {}", run_id, scan.ToString());
    if (built.aborted) return built;
  }
  built.card = reports::BuildScorecard(std::move(data));
  built.dir = absl::StrCat(options_.data_dir, "/reports/", run_id);
  mkdir(built.dir.c_str(), 0750);
  built.written = true;
  const v1::Scorecard& card = built.card;
  for (const auto& [ext, content] :
       std::vector<std::pair<std::string, std::string>>{{"json", reports::RenderJson(card)},
                                                        {"md", reports::RenderMarkdown(card)},
                                                        {"html", reports::RenderHtml(card)},
                                                        {"xml", reports::RenderJunit(card)}}) {
    if (auto s = WriteFileAtomically(absl::StrCat(built.dir, "/scorecard.", ext), content);
        !s.ok()) {
      Log()->error("run {}: writing scorecard: {}", run_id, s.ToString());
      built.written = false;
    }
  }
  return built;
}

void CoordinatorCore::CompleteRun(BuiltScorecard built) {
  const std::string& run_id = built.run_id;
  RunRow* run = scheduler_.FindRun(run_id);
  if (!run) return;
  const v1::Scorecard& card = built.card;
  const std::string& dir = built.dir;
  const bool written = built.written;
  int nodes_failed = 0;
  for (const auto& n : card.nodes()) nodes_failed += n.verdict() == "fail";
  LastScorecard last{run_id, card.tier(), {}, {}};
  for (const auto& c : card.categories()) last.grades.emplace_back(c.name(), c.grade());
  for (const auto& n : card.nodes()) last.verdicts.emplace_back(n.node(), n.verdict());
  last_scorecard_ = std::move(last);
  if (slurm_) {
    std::vector<std::pair<std::string, std::string>> failed;
    for (const auto& n : card.nodes()) {
      if (n.verdict() != "fail") continue;
      failed.emplace_back(n.node(), n.reasons_size() > 0 ? n.reasons(0) : "verdict fail");
    }
    slurm_->Drain(run_id, std::move(failed));
  }
  ++runs_ended_[run->info.state()];
  run->info.set_tier(card.tier());
  run->info.set_nodes_failed(nodes_failed);
  if (written) run->info.set_report_dir(dir);
  scheduler_.RefreshCounters(run);
  if (auto s = store_->PutRun(*run); !s.ok()) Log()->error("persisting run: {}", s.ToString());
  Log()->info("run {} {}: tier {}, {} of {} tasks failed, {} nodes failed; scorecard in {}",
              run_id, run->info.state(), card.tier(), run->info.tasks_failed(),
              run->info.tasks_total(), nodes_failed, dir);
  v1::RunEvent final_event = RunEventFor(*run);
  Broadcast(run_id, final_event);
  if (auto it = watchers_.find(run_id); it != watchers_.end()) {
    for (auto& w : it->second) w->OnEnd();
    watchers_.erase(it);
  }
  scheduler_.Forget(run_id);
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
  static std::mt19937_64 rng(std::random_device{}());
  int64_t now = NowUnixNs();
  time_t secs = static_cast<time_t>(now / 1000000000);
  tm utc;
  gmtime_r(&secs, &utc);
  return absl::StrFormat("r%04d%02d%02d-%02d%02d%02d-%04x", utc.tm_year + 1900, utc.tm_mon + 1,
                         utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec,
                         static_cast<unsigned>(rng() & 0xffff));
}

absl::StatusOr<v1::SubmitRunResponse> CoordinatorCore::HandleSubmitRun(
    const v1::SubmitRunRequest& request) {
  if (auto s = ValidatePlan(request.plan()); !s.ok()) return s;
  struct statvfs vfs;
  if (statvfs(options_.data_dir.c_str(), &vfs) == 0) {
    int64_t free_bytes = static_cast<int64_t>(vfs.f_bavail) * static_cast<int64_t>(vfs.f_frsize);
    if (free_bytes < options_.min_free_bytes) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "the coordinator's data directory %s has %d MiB free (needs %d MiB): new runs are "
          "refused until space is freed",
          options_.data_dir, free_bytes >> 20, options_.min_free_bytes >> 20));
    }
  }
  Changes changes;
  const std::string run_id = NewRunId();
  auto run = scheduler_.CreateRun(request.plan(), registry_, NowUnixNs(), run_id, &changes);
  if (!run.ok()) return run.status();
  // Persist the whole run before anything is assigned; undo on failure.
  std::vector<const TaskRow*> rows;
  for (TaskRow* t : scheduler_.TasksOf(run_id)) rows.push_back(t);
  absl::Status st = store_->PutRun(**run);
  if (st.ok()) st = store_->PutTasks(rows);
  if (!st.ok()) {
    scheduler_.Forget(run_id);
    return st;
  }
  v1::SubmitRunResponse resp;
  resp.set_run_id(run_id);
  resp.set_tasks(static_cast<int>(rows.size()));
  for (const auto& n : (*run)->nodes) resp.add_nodes(n);
  Log()->info("run {} submitted: plan '{}', {} tasks on {} nodes", run_id, request.plan().name(),
              rows.size(), (*run)->nodes.size());
  Changes sched;
  scheduler_.Schedule(registry_, NowUnixNs(), &sched);
  Apply(sched);
  Checkpoint();  // the caller is told "submitted" once it is durable
  return resp;
}

absl::StatusOr<v1::ListRunsResponse> CoordinatorCore::HandleListRuns(
    const v1::ListRunsRequest& request) {
  auto runs = store_->ListRuns(request.limit() > 0 ? request.limit() : 50, false);
  if (!runs.ok()) return runs.status();
  v1::ListRunsResponse resp;
  for (auto& r : *runs) *resp.add_runs() = r.info;
  return resp;
}

absl::StatusOr<v1::GetRunResponse> CoordinatorCore::HandleGetRun(const std::string& run_id) {
  v1::GetRunResponse resp;
  if (RunRow* run = scheduler_.FindRun(run_id)) {
    *resp.mutable_run() = run->info;
    for (TaskRow* t : scheduler_.TasksOf(run_id)) *resp.add_tasks() = t->info;
    return resp;
  }
  auto run = store_->GetRun(run_id);
  if (!run.ok()) return run.status();
  *resp.mutable_run() = run->info;
  auto tasks = store_->LoadTasks(run_id);
  if (!tasks.ok()) return tasks.status();
  for (auto& t : *tasks) *resp.add_tasks() = t.info;
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

absl::StatusOr<v1::GetReportResponse> CoordinatorCore::HandleGetReport(
    const v1::GetReportRequest& request) {
  if (!IsSafeId(request.run_id())) return absl::InvalidArgumentError("bad run id");
  std::string fmt = request.format().empty() ? "json" : request.format();
  if (fmt == "markdown") fmt = "md";
  if (fmt == "junit") fmt = "xml";  // scorecard.xml, JUnit XML
  if (fmt != "json" && fmt != "md" && fmt != "html" && fmt != "xml") {
    return absl::InvalidArgumentError("format must be json, md, html or junit");
  }
  auto run = store_->GetRun(request.run_id());
  if (!run.ok()) return run.status();
  std::string path =
      absl::StrCat(options_.data_dir, "/reports/", request.run_id(), "/scorecard.", fmt);
  std::ifstream in(path, std::ios::binary);
  if (!in && fmt == "xml" && std::ifstream(absl::StrCat(options_.data_dir, "/reports/",
                                                       request.run_id(), "/scorecard.json"))) {
    return absl::FailedPreconditionError(absl::StrCat(
        "run ", request.run_id(), " has a scorecard but no JUnit XML (scorecard.xml): it ended "
        "before this coordinator wrote one; use --format json, md or html"));
  }
  if (!in) {
    return absl::FailedPreconditionError(absl::StrCat(
        "run ", request.run_id(), " has no scorecard yet (state ", run->info.state(), ")"));
  }
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  v1::GetReportResponse resp;
  resp.set_content(content);
  resp.set_path(path);
  return resp;
}

absl::Status CoordinatorCore::HandleWatchRun(const std::string& run_id,
                                             std::shared_ptr<RunWatcher> watcher) {
  auto current = HandleGetRun(run_id);
  if (!current.ok()) return current.status();
  v1::RunEvent first;
  *first.mutable_run() = current->run();
  watcher->OnEvent(first);
  for (const auto& t : current->tasks()) {
    v1::RunEvent ev;
    *ev.mutable_run() = current->run();
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
  m.Family("cmax_store_bytes", "gauge", "size of the SQLite store (database and WAL files)");
  m.Sample(static_cast<double>(FileBytes(db_path_) + FileBytes(db_path_ + "-wal")));

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

// --- The web view's snapshots (coordinator/web). ---
namespace cmax::coordinator {
namespace {

// Runs `fn` on the core thread through `post` and waits up to `timeout` for
// its answer. The answer lives in a shared block, so a late one (after the
// wait gave up) writes into memory that is still there.
template <typename T>
absl::StatusOr<T> AwaitOnCore(CoordinatorCore* core, std::function<absl::StatusOr<T>()> fn,
                              absl::Duration timeout) {
  struct Reply {
    absl::Mutex mu;
    bool done ABSL_GUARDED_BY(mu) = false;
    absl::StatusOr<T> value ABSL_GUARDED_BY(mu) = absl::UnknownError("no answer");
  };
  auto reply = std::make_shared<Reply>();
  core->Post([reply, fn = std::move(fn)] {
    absl::StatusOr<T> v = fn();
    absl::MutexLock lock(&reply->mu);
    reply->value = std::move(v);
    reply->done = true;
  });
  absl::MutexLock lock(&reply->mu);
  auto done = [r = reply.get()]() ABSL_SHARED_LOCKS_REQUIRED(r->mu) { return r->done; };
  if (!reply->mu.AwaitWithTimeout(absl::Condition(&done), timeout)) {
    return absl::UnavailableError("the coordinator core did not answer in time");
  }
  return std::move(reply->value);
}

}  // namespace

bool IsSafeRunId(const std::string& id) { return IsSafeId(id); }

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
  if (!IsSafeId(run_id)) return absl::InvalidArgumentError("bad run id");
  return AwaitOnCore<v1::GetRunResponse>(
      this, [this, run_id]() -> absl::StatusOr<v1::GetRunResponse> { return HandleGetRun(run_id); },
      timeout);
}

}  // namespace cmax::coordinator
