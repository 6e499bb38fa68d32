// The coordinator core's round loop and dispatch: the loop that runs posted
// work as one store transaction per round (Loop, EndRound, Checkpoint), the
// heartbeats, sweeps and scheduling of each round (Tick), applying what the
// scheduler changed (Apply: persisting tasks and runs, rendezvous groups,
// assignments, watcher events), the agents' messages other than records
// (HandleAgentMessage, OnStatus, HandleStreamEnded) and the sends that wait
// for the round's commit (SendTo, SendAck). Record ingest is in
// core_ingest.cc, the scorecard in core_report.cc. Core thread only.
#include "coordinator/core.h"

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/time_util.h"
#include "common/version.h"

namespace cmax::coordinator {
namespace {

std::shared_ptr<spdlog::logger> Log() { return GetLogger("coordinator"); }

constexpr size_t kMaxStatusMessageBytes = 2048;
constexpr size_t kMaxStderrTailBytes = 8192;

// Cuts `s` to at most `max` bytes on a UTF-8 character boundary (a string
// field must stay valid UTF-8), marking the cut.
void ClipUtf8(std::string* s, size_t max) {
  if (s->size() <= max) return;
  constexpr std::string_view kMark = " [clipped]";
  size_t n = max - kMark.size();
  while (n > 0 && (static_cast<unsigned char>((*s)[n]) & 0xc0) == 0x80) --n;
  s->resize(n);
  s->append(kMark);
}

}  // namespace

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
      // What arrives within kMinRoundGapNs of the last round's start joins
      // the next round (a wait that only a stop ends early).
      const int64_t since = MonotonicNs() - round_start_ns_;
      if (!queue_.empty() && since < kMinRoundGapNs) {
        auto stop = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stopping_; };
        mu_.AwaitWithTimeout(absl::Condition(&stop), absl::Nanoseconds(kMinRoundGapNs - since));
        if (stopping_) return;
      }
      work.swap(queue_);
    }
    round_start_ns_ = MonotonicNs();
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
  // period grows with the fleet within the pings' budgets and is told to
  // the agents in every ping (heartbeat_pacer.h: 1 s up to 2,500 agents,
  // 50 s at 50,000); the loss timeout is at least 3 periods. A pong is
  // also the clock sample; any message counts as heard.
  if (mono - ping_period_checked_ns_ >= 1000000000) {
    ping_period_checked_ns_ = mono;
    connected_ = registry_.ConnectedCount();
    const int64_t period_ms = pacer_.Resize(connected_, mono);
    // The loss timeout follows the period up at once, and down by at most
    // a second a second: agents pinged on the longer period must not turn
    // lost because the fleet shrank (streams ending) in the meantime.
    const int64_t target_ns =
        std::max<int64_t>(options_.heartbeat_timeout_ms, 3 * period_ms) * 1000000;
    registry_.set_timeout_ns(
        std::max(target_ns, registry_.timeout_ns() - 1000000000));
  }
  if (const size_t n = pacer_.Owed(connected_, mono); n > 0) {
    v1::CoordinatorMessage ping;
    ping.mutable_ping()->set_interval_ms(static_cast<int32_t>(pacer_.period_ms()));
    for (const auto& node : registry_.NextToPing(n)) {
      ping.mutable_ping()->set_t1_ns(NowUnixNs());
      SendNow(node, ping);  // not deferred: the round trip times the clock offset
    }
  }
  Changes changes;
  // The sweeps over every agent and task: five times a second, not every
  // round (rounds come with every pong, thousands a second at scale). The
  // one over every agent for silence once a second: the loss timeout is at
  // least --heartbeat-timeout (15 s by default), so a silent agent is lost
  // within a second of it; five sweeps a second over 50,000 agents were
  // ~4 % of a core idle (docs/scale.md).
  // Shutting down (BeginShutdown): the agents are about to be cut off by
  // this process, not lost, and their tasks go on; no sweep, no scheduling.
  const bool shutting_down = shutting_down_.load();
  if (!shutting_down && mono - last_sweep_ns_ >= 200000000) {
    last_sweep_ns_ = mono;
    if (mono - last_silence_sweep_ns_ >= 1000000000) {
      last_silence_sweep_ns_ = mono;
      const std::vector<std::string> lost = registry_.ExpireSilent(mono);
      for (const auto& node : lost) {
        Log()->warn("agent {} lost: nothing heard for {} ms", node,
                    registry_.timeout_ns() / 1000000);
        const AgentEntry* e = registry_.Find(node);
        if (e && e->session) e->session->Close("heartbeat timeout");
      }
      scheduler_.OnNodesLost(lost, now, &changes);
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
  // Scheduling: once a round when something that can free a node or a task
  // happened in it (a status, a Hello, a stream that ended, a loss, an
  // expiry), and at least once a second. It looks at the pending tasks of
  // the nodes that changed (Scheduler::Schedule), with a pass over every
  // task at most every 10 s as a backstop.
  if (!shutting_down &&
      (schedule_pending_ || !changes.tasks.empty() || mono - last_schedule_ns_ >= 1000000000)) {
    schedule_pending_ = false;
    last_schedule_ns_ = mono;
    scheduler_.Schedule(registry_, now, &changes);
  }
  Apply(changes);
  // Schedules (schedules.h): slots due, next waves, five times a second;
  // never while shutting down (the successor starts them).
  if (!shutting_down && mono - last_schedules_tick_ns_ >= 200000000) {
    last_schedules_tick_ns_ = mono;
    schedules_.Tick();
    // The fault loop: fence results, held incidents, step timeouts.
    incidents_->Tick(now);
  }
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
                                         const v1::AgentMessage& message,
                                         int64_t received_unix_ns) {
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
    incidents_->OnConnected(hello.node_name(), now);
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
    welcome.mutable_welcome()->set_heartbeat_interval_ms(static_cast<int>(pacer_.period_ms()));
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
      registry_.OnPong(session.get(), message.pong(),
                       received_unix_ns > 0 ? received_unix_ns : NowUnixNs());
      break;
    case v1::AgentMessage::kRecords:
      OnRecords(session.get(), node, message.records());
      break;
    case v1::AgentMessage::kStatus:
      OnStatus(session.get(), node, message.status());
      break;
    case v1::AgentMessage::kWatch:
      OnWatch(session.get(), node, message.watch());
      break;
    case v1::AgentMessage::kRemediation:
      // The node is the stream's own: a result for another node's incident
      // is refused by the manager.
      incidents_->OnResult(node, message.remediation(), now);
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

void CoordinatorCore::OnStatus(AgentSession* session, const std::string& node,
                               const v1::TaskStatus& sent) {
  // What an agent says is stored, shown and printed: its message and stderr
  // tail are clipped at ingest (the agent sends at most 4 KiB of stderr).
  v1::TaskStatus status = sent;
  ClipUtf8(status.mutable_message(), kMaxStatusMessageBytes);
  ClipUtf8(status.mutable_stderr_tail(), kMaxStderrTailBytes);
  Changes changes;
  const int64_t now = NowUnixNs();
  scheduler_.OnStatus(node, status, now, &changes);
  if (TaskRow* t = scheduler_.FindTask(status.task_id());
      t && IsTerminal(status.state()) && IsTerminal(t->info.state())) {
    auto n = store_->CountRecords(t->info.task_id(), t->info.attempt());
    if (n.ok()) t->info.set_records(*n);
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
    // A full disk fails every round (several a second): said once, then at
    // most every 10 s with how many failed since.
    const int64_t mono = MonotonicNs();
    ++failed_rounds_;
    if (failed_rounds_logged_ns_ == 0 || mono - failed_rounds_logged_ns_ >= 10'000'000'000) {
      Log()->error("store: committing this round failed: {}; its acknowledgements are withheld "
                   "and those agents' streams closed so they resend{}",
                   std::string(committed.message()),
                   failed_rounds_ > 1 ? absl::StrCat(" (", failed_rounds_ - 1,
                                                     " more rounds failed since the last message)")
                                      : "");
      failed_rounds_logged_ns_ = mono;
      failed_rounds_ = 0;
    }
  } else if (failed_rounds_logged_ns_ != 0 && store_->last_round_committed_writes()) {
    Log()->info("store: writes succeed again; the agents resend what was not acknowledged");
    failed_rounds_logged_ns_ = 0;
    failed_rounds_ = 0;
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

}  // namespace cmax::coordinator
