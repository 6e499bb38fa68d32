#include "coordinator/scheduler.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/numbers.h"
#include "absl/strings/match.h"
#include "absl/strings/strip.h"
#include "common/suite_catalog.h"
#include "common/task_state.h"
#include "common/time_util.h"
#include "coordinator/rank_claims.h"
#include "re2/re2.h"

namespace cmax::coordinator {

namespace {

// Plan-level expectations fill a suite's parameters of the same meaning
// unless the suite sets them itself.
void ApplyExpectations(const v1::Expectations& e, const SuiteInfo& info,
                       std::map<std::string, std::string>* params) {
  auto has = [&](const char* name) {
    return std::any_of(info.params.begin(), info.params.end(),
                       [&](const ParamSpec& p) { return p.name == name; });
  };
  auto fill = [&](const char* name, const std::string& value) {
    if (!value.empty() && has(name) && !params->count(name)) (*params)[name] = value;
  };
  if (e.gpus_per_node() > 0) fill("expect-gpus", absl::StrCat(e.gpus_per_node()));
  fill("expect-gpu-model", e.gpu_model());
  if (e.min_cpu_cores() > 0) fill("min-cpu-cores", absl::StrCat(e.min_cpu_cores()));
  if (e.min_memory_gib() > 0) fill("min-memory-gib", absl::StrCat(e.min_memory_gib()));
  fill("tenancy", e.tenancy());
}

absl::StatusOr<std::vector<std::string>> SelectNodes(const v1::NodeSelector& sel,
                                                     const std::vector<std::string>& connected) {
  std::vector<std::string> out;
  if (!sel.names().empty()) {
    for (const auto& n : sel.names()) {
      if (std::find(connected.begin(), connected.end(), n) == connected.end()) {
        return absl::FailedPreconditionError(
            absl::StrCat("node '", n, "' named by the plan is not connected"));
      }
      out.push_back(n);
    }
  } else if (!sel.name_regex().empty()) {
    RE2 re(sel.name_regex());
    for (const auto& n : connected) {
      if (RE2::FullMatch(n, re)) out.push_back(n);
    }
  } else {
    out = connected;
  }
  return out;
}

// Disjoint pairs in rounds (circle method). Up to eight nodes every pair
// meets (n-1 rounds), so one noisy pairing cannot blame a healthy node; on
// larger fleets three rounds (four with a bye), so every node meets at least
// two different partners. A round's pairs run at the same time.
std::vector<std::vector<std::pair<std::string, std::string>>> PairRounds(
    std::vector<std::string> nodes) {
  std::vector<std::vector<std::pair<std::string, std::string>>> rounds;
  if (nodes.size() < 2) return rounds;
  if (nodes.size() % 2) nodes.push_back("");  // a bye
  const size_t n = nodes.size();
  size_t wanted = n <= 8 ? n - 1 : (nodes.back().empty() ? 4 : 3);
  for (size_t r = 0; r < n - 1 && rounds.size() < wanted; ++r) {
    std::vector<std::pair<std::string, std::string>> round;
    for (size_t i = 0; i < n / 2; ++i) {
      const std::string& a = nodes[i];
      const std::string& b = nodes[n - 1 - i];
      if (!a.empty() && !b.empty()) round.emplace_back(std::min(a, b), std::max(a, b));
    }
    rounds.push_back(round);
    // Rotate all but the first.
    std::rotate(nodes.begin() + 1, nodes.end() - 1, nodes.end());
  }
  return rounds;
}

// Barrier start lead: the instant T every node is told to start is this far
// ahead of the assignment, so the assignment reaches every node before T.
// 10 round trips of the slowest agent of the group leave room for a send
// queued behind records and a retransmission or two; the 2 s floor covers
// agents whose round trip is not measured yet (no Pong so far) and a busy
// coordinator thread. Chosen here, not measured: the start records
// (cmax_task_start) show how late each node really started.
constexpr int64_t kMinBarrierLeadNs = 2'000'000'000;
constexpr int kBarrierLeadRoundTrips = 10;

v1::Scope ScopeOf(const RunRow* run, const TaskRow& task) {
  if (!run || task.info.suite_index() < 0 || task.info.suite_index() >= run->plan.suites_size()) {
    return v1::SCOPE_UNSPECIFIED;
  }
  const v1::SuiteSpec& spec = run->plan.suites(task.info.suite_index());
  if (spec.scope() != v1::SCOPE_UNSPECIFIED) return spec.scope();
  const SuiteInfo* info = FindSuite(spec.suite());
  return info && !info->scopes.empty() ? info->scopes.front() : v1::SCOPE_UNSPECIFIED;
}

// "rank 3 on gpu-7 crashed (exit code 139)": why a group task ended, from
// the end status of the rank that ended it first.
std::string RankEndReason(const std::string& node, const v1::TaskStatus& s) {
  std::string head = absl::StrCat("rank ", s.rank(), " on ", node, " ");
  std::string msg = s.message();
  switch (s.state()) {
    case v1::TASK_FAILED: {
      if (s.exit_code() == kCouldNotRunExit) {
        absl::string_view rest = msg;
        // The agent says "could not run: <suite's last line>", and the suite's
        // line often starts "not measured:": say it once.
        for (const char* verdict : {"could not run", "not measured"}) {
          rest = absl::StripLeadingAsciiWhitespace(rest);
          if (absl::ConsumePrefix(&rest, verdict)) absl::ConsumePrefix(&rest, ":");
        }
        rest = absl::StripLeadingAsciiWhitespace(rest);
        return absl::StrCat(head, "could not run", rest.empty() ? "" : ": ", rest);
      }
      std::string code = s.signal() > 0 ? absl::StrCat("signal ", s.signal())
                                        : absl::StrCat("exit code ", s.exit_code());
      absl::StrAppend(&head, "crashed (", code, ")");
      // The agent's "crashed: <how>" repeats the code; other messages
      // (rejected, rendezvous, ...) say something new.
      if (!msg.empty() && !absl::StartsWith(msg, "crashed")) absl::StrAppend(&head, ": ", msg);
      return head;
    }
    case v1::TASK_TIMED_OUT:
      return absl::StrCat(head, "hung", msg.empty() ? "" : " (", msg, msg.empty() ? "" : ")");
    default:
      return absl::StrCat(head, TaskStateName(s.state()), msg.empty() ? "" : ": ", msg);
  }
}

// kAuto's backstop: a full pass at most this often (wall clock).
constexpr int64_t kFullPassEveryNs = 10'000'000'000;

// Ranks a group task puts on `node` (SuiteSpec.ranks_per_node): a number,
// "gpus" (the node's GPU count from its inventory, at least 1), or 1.
int LocalRanks(const std::string& ranks_per_node, const Registry& registry,
               const std::string& node) {
  if (ranks_per_node == "gpus") {
    const AgentEntry* e = registry.Find(node);
    return std::max(1, e ? e->inventory.gpu_count() : 1);
  }
  int v = 1;
  if (!ranks_per_node.empty() && absl::SimpleAtoi(ranks_per_node, &v) && v > 0) return v;
  return 1;
}

// "not measured: needs 2 nodes, the run has 1"; when the entry selects fewer
// nodes than the run has, it says so ("the entry selects 1 of the run's 3"),
// so the user knows whether to add nodes or widen the entry's selection.
std::string TooFewNodesMessage(int needed, int selected, int connected) {
  std::string has = selected == connected
                        ? absl::StrCat("the run has ", selected)
                        : absl::StrCat("the entry selects ", selected, " of the run's ", connected);
  return absl::StrCat("not measured: needs ", needed, " nodes, ", has);
}

// Why a plan entry over `nodes` cannot measure anything, or "" when it can:
// a pair needs two nodes; a gang or barrier the plan entry's min_nodes and
// the suite's min_ranks (connectivity: 2), counted with the entry's ranks per
// node, so one node with two ranks is enough for it and one with one rank is
// not.
std::string TooFewNodes(const SuiteInfo& info, const v1::SuiteSpec& spec, v1::Scope scope,
                        const std::vector<std::string>& nodes, int connected,
                        const Registry& registry) {
  const int have = static_cast<int>(nodes.size());
  if (scope == v1::SCOPE_PAIRS) return have < 2 ? TooFewNodesMessage(2, have, connected) : "";
  if (scope != v1::SCOPE_GANG && scope != v1::SCOPE_BARRIER) return "";
  if (have < spec.min_nodes()) return TooFewNodesMessage(spec.min_nodes(), have, connected);
  int world = 0, most = 1;
  for (const auto& n : nodes) {
    const int local = LocalRanks(spec.ranks_per_node(), registry, n);
    world += local;
    most = std::max(most, local);
  }
  if (world >= info.min_ranks) return "";
  // In nodes when more nodes are what it takes (the usual case: one rank a
  // node); in ranks when these nodes could hold enough with more of them.
  const int nodes_needed = (info.min_ranks + most - 1) / most;
  if (nodes_needed > have) return TooFewNodesMessage(nodes_needed, have, connected);
  return absl::StrCat("not measured: needs ", info.min_ranks, " ranks, its ", have,
                      " nodes have ", world, " (ranks_per_node)");
}

}  // namespace

absl::StatusOr<RunRow*> Scheduler::CreateRun(const v1::Plan& plan, const Registry& registry,
                                             int64_t now_unix_ns, const std::string& run_id,
                                             Changes* changes,
                                             const std::vector<std::string>* only_nodes) {
  std::vector<std::string> connected = registry.ConnectedNodes();
  if (only_nodes) {
    const std::set<std::string> allowed(only_nodes->begin(), only_nodes->end());
    std::erase_if(connected, [&](const std::string& n) { return !allowed.count(n); });
    if (connected.empty()) {
      return absl::FailedPreconditionError("none of the run's nodes is connected");
    }
  }
  if (connected.empty()) return absl::FailedPreconditionError("no agent is connected");
  auto run = std::make_unique<RunRow>();
  run->plan = plan;
  run->info.set_run_id(run_id);
  run->info.set_plan_name(plan.name());
  run->info.set_state("running");
  run->info.set_created_unix_ns(now_unix_ns);
  std::set<std::string> all_nodes;
  std::vector<std::unique_ptr<TaskRow>> created;

  for (int i = 0; i < plan.suites_size(); ++i) {
    const v1::SuiteSpec& spec = plan.suites(i);
    const SuiteInfo* info = FindSuite(spec.suite());
    if (!info) return absl::InvalidArgumentError(absl::StrCat("unknown suite ", spec.suite()));
    std::map<std::string, std::string> params(spec.params().begin(), spec.params().end());
    ApplyExpectations(plan.expect(), *info, &params);
    auto args = BuildSuiteArgs(*info, params);
    if (!args.ok()) return args.status();
    auto nodes = SelectNodes(spec.nodes(), connected);
    if (!nodes.ok()) return nodes.status();
    if (nodes->empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("suite ", i, " (", spec.suite(), ") selects no connected node"));
    }
    v1::Scope scope = spec.scope() == v1::SCOPE_UNSPECIFIED ? info->scopes.front() : spec.scope();
    const std::string name = spec.name().empty() ? spec.suite() : spec.name();

    auto make_task = [&](const std::string& suffix, std::vector<std::string> task_nodes,
                         bool group) {
      auto t = std::make_unique<TaskRow>();
      t->nodes = std::move(task_nodes);
      t->retries = spec.retries();
      t->exclusive = info->exclusive;
      auto& ti = t->info;
      ti.set_task_id(absl::StrCat(run_id, ".", i, ".", suffix));
      ti.set_run_id(run_id);
      ti.set_suite(spec.suite());
      ti.set_name(name);
      ti.set_node(absl::StrJoin(t->nodes, ","));
      ti.set_state(v1::TASK_PENDING);
      ti.set_suite_index(i);
      auto& a = t->assignment;
      a.set_task_id(ti.task_id());
      a.set_run_id(run_id);
      a.set_suite(spec.suite());
      for (const auto& arg : *args) a.add_args(arg);
      a.set_timeout_seconds(spec.timeout_seconds() > 0 ? spec.timeout_seconds()
                                                        : info->default_timeout_s);
      for (const auto& [k, v] : spec.env()) (*a.mutable_env())[k] = v;
      if (group) {
        a.set_group(ti.task_id());
        a.set_launcher(spec.launcher().empty() ? "agents" : spec.launcher());
      }
      for (const auto& n : t->nodes) all_nodes.insert(n);
      created.push_back(std::move(t));
    };

    // A group entry that needs more nodes than it has is not refused (a
    // one-node cluster still gets the rest of its evaluation): it gets one
    // task over the nodes it has, ended here before any attempt as "could
    // not run" (exit code 2), which the scorecard shows as not measured,
    // never as a pass or a failure.
    const std::string too_few = TooFewNodes(*info, spec, scope, *nodes,
                                            static_cast<int>(connected.size()), registry);
    if (!too_few.empty()) {
      make_task(ScopeName(scope), *nodes, false);
      auto& ti = created.back()->info;
      ti.set_state(v1::TASK_FAILED);
      ti.set_exit_code(kCouldNotRunExit);
      ti.set_message(too_few);
      ti.set_finished_unix_ns(now_unix_ns);
      continue;
    }

    switch (scope) {
      case v1::SCOPE_NODE:
        for (const auto& n : *nodes) make_task(n, {n}, false);
        break;
      case v1::SCOPE_GANG:
      case v1::SCOPE_BARRIER:
        make_task(scope == v1::SCOPE_GANG ? "gang" : "barrier", *nodes, true);
        break;
      case v1::SCOPE_PAIRS: {
        auto rounds = PairRounds(*nodes);  // not empty: two nodes or more
        int k = 0;
        for (const auto& round : rounds) {
          for (const auto& [a, b] : round) make_task(absl::StrCat("p", k++), {a, b}, true);
        }
        break;
      }
      default:
        return absl::InvalidArgumentError("unknown scope");
    }
  }

  run->nodes.assign(all_nodes.begin(), all_nodes.end());
  run->info.set_tasks_total(static_cast<int>(created.size()));
  RunRow* out = run.get();
  runs_[run_id] = std::move(run);
  run_order_.push_back(run_id);
  changes->runs.insert(run_id);
  for (auto& t : created) {
    changes->tasks.insert(t->info.task_id());
    Adopt(std::move(t));  // the same id twice: a node named twice
  }
  tasks_of_.erase(run_id);
  // Every entry needed more nodes than the run has: nothing will ever be
  // assigned, so the run ends now (and gets its scorecard, which says why).
  MaybeFinishRun(run_id, now_unix_ns, changes);
  return out;
}

void Scheduler::Restore(RunRow run, std::vector<TaskRow> tasks) {
  std::string id = run.info.run_id();
  runs_[id] = std::make_unique<RunRow>(std::move(run));
  run_order_.push_back(id);
  std::sort(run_order_.begin(), run_order_.end(), [&](const std::string& a, const std::string& b) {
    return runs_[a]->info.created_unix_ns() < runs_[b]->info.created_unix_ns();
  });
  for (auto& t : tasks) Adopt(std::make_unique<TaskRow>(std::move(t)));
  tasks_of_.erase(id);
}

void Scheduler::Adopt(std::unique_ptr<TaskRow> task) {
  TaskRow* row = task.get();
  std::unique_ptr<TaskRow>& slot = tasks_[row->info.task_id()];
  if (slot) Unindex(slot.get());
  slot = std::move(task);
  Index(row);
}

void Scheduler::Index(TaskRow* task) {
  const auto s = task->info.state();
  Count(task, counts_[task->info.run_id()], +1);
  for (const auto& n : task->nodes) {
    NodeTasks& nt = node_tasks_[n];
    nt.tasks.push_back(task);
    if (Holds(s)) ++nt.busy;
    changed_nodes_.insert(n);  // a new task: the next Schedule looks at it
  }
  if (Holds(s)) active_[task->info.task_id()] = task;
}

void Scheduler::Unindex(TaskRow* task) {
  const auto s = task->info.state();
  if (auto it = counts_.find(task->info.run_id()); it != counts_.end()) {
    RunCounts& c = it->second;
    Count(task, c, -1);
    if (c.total <= 0) counts_.erase(it);
  }
  for (const auto& n : task->nodes) {
    auto it = node_tasks_.find(n);
    if (it == node_tasks_.end()) continue;
    auto& v = it->second.tasks;
    v.erase(std::remove(v.begin(), v.end(), task), v.end());
    if (Holds(s)) --it->second.busy;
    // A node that ran a task of the dropped run may free a pending one.
    if (Holds(s)) changed_nodes_.insert(n);
    if (v.empty()) node_tasks_.erase(it);
  }
  active_.erase(task->info.task_id());
}

// What a task counts as: 0 not ended, 1 ended (completed, cancelled), 2
// could not run, 3 broke. Kept in the task so that taking it out of the
// counts takes out what was put in, whatever its exit code says since.
namespace {
constexpr int8_t kCountedOpen = 0, kCountedEnded = 1, kCountedCouldNotRun = 2,
                 kCountedBroke = 3;
int8_t OutcomeOf(const v1::TaskInfo& t) {
  if (!IsTerminal(t.state())) return kCountedOpen;
  if (TaskCouldNotRun(t)) return kCountedCouldNotRun;
  if (TaskBroke(t)) return kCountedBroke;
  return kCountedEnded;
}
}  // namespace

void Scheduler::Count(TaskRow* task, RunCounts& c, int sign) {
  const int8_t as = sign > 0 ? OutcomeOf(task->info) : task->counted_as;
  c.total += sign;
  if (as != kCountedOpen) c.ended += sign;
  if (as == kCountedCouldNotRun) c.could_not_run += sign;
  if (as == kCountedBroke) c.failed += sign;
  task->counted_as = sign > 0 ? as : kCountedOpen;
}

void Scheduler::SetState(TaskRow* task, v1::TaskState state) {
  const auto old = task->info.state();
  if (old == state) return;
  RunCounts& c = counts_[task->info.run_id()];
  Count(task, c, -1);
  task->info.set_state(state);
  Count(task, c, +1);
  const int held = static_cast<int>(Holds(state)) - static_cast<int>(Holds(old));
  // Only a task that stops holding its nodes, ends, or waits again (a
  // retry) can make a pending task ready: PENDING -> ASSIGNED -> RUNNING
  // makes none.
  const bool frees = !Holds(state);
  for (const auto& n : task->nodes) {
    if (held != 0) node_tasks_[n].busy += held;
    if (frees) changed_nodes_.insert(n);
  }
  if (Holds(state)) {
    active_[task->info.task_id()] = task;
  } else if (Holds(old)) {
    active_.erase(task->info.task_id());
  }
}

void Scheduler::NodeChanged(const std::string& node) { changed_nodes_.insert(node); }

bool Scheduler::ReadyIndexed(const TaskRow& task, const Registry& registry) const {
  for (const auto& n : task.nodes) {
    if (!registry.IsConnected(n)) return false;
    auto it = node_tasks_.find(n);
    if (it == node_tasks_.end()) continue;
    if (it->second.busy > 0) return false;
    // An earlier entry of the same run still open on this node.
    for (const TaskRow* t : it->second.tasks) {
      if (t->info.suite_index() < task.info.suite_index() &&
          !IsTerminal(t->info.state()) && t->info.run_id() == task.info.run_id()) {
        return false;
      }
    }
  }
  return true;
}

void Scheduler::Assign(TaskRow* task, const Registry& registry, int64_t now_unix_ns,
                       Changes* changes) {
  RunRow* run = FindRun(task->info.run_id());
  const std::string& id = task->info.task_id();
  task->info.set_attempt(task->info.attempt() + 1);
  SetState(task, v1::TASK_ASSIGNED);
  task->info.set_started_unix_ns(now_unix_ns);
  // A new attempt: nothing of the previous one's outcome stays in the fields
  // that describe the latest attempt (the history is in earlier_attempts).
  task->info.set_message("");
  task->info.set_exit_code(-1);  // none yet
  task->info.clear_stderr_tail();
  task->info.clear_finished_unix_ns();
  task->info.clear_blamed_nodes();
  task->info.clear_start_at_unix_ns();
  task->assignment.set_attempt(task->info.attempt());
  rank_ends_.erase(id);
  start_at_agent_.erase(id);
  local_sizes_.erase(id);
  const bool group = !task->assignment.group().empty();

  // Rank layout: contiguous ranks per node, in node order.
  std::vector<int> local_sizes;
  for (const auto& n : task->nodes) {
    int local = 1;
    if (group && run) {
      local = LocalRanks(run->plan.suites(task->info.suite_index()).ranks_per_node(), registry, n);
    }
    local_sizes.push_back(local);
  }
  int world = 0;
  for (int l : local_sizes) world += l;
  if (group) local_sizes_[id] = local_sizes;
  if (ScopeOf(run, *task) == v1::SCOPE_BARRIER) {
    // One instant T in the coordinator's clock for the whole group, given to
    // each node in its own clock: T + (agent clock - coordinator clock).
    double max_rtt_ns = 0;
    for (const auto& n : task->nodes) {
      const AgentEntry* e = registry.Find(n);
      if (e && e->rtt_ns > max_rtt_ns) max_rtt_ns = e->rtt_ns;
    }
    const int64_t lead = std::max<int64_t>(
        kMinBarrierLeadNs, static_cast<int64_t>(kBarrierLeadRoundTrips * max_rtt_ns));
    const int64_t start_at = now_unix_ns + lead;
    task->info.set_start_at_unix_ns(start_at);
    for (const auto& n : task->nodes) start_at_agent_[id][n] = registry.ToAgentClock(n, start_at);
  }
  task->assignment.set_world_size(world);
  task->assignment.clear_peer_addresses();
  for (const auto& n : task->nodes) {
    const AgentEntry* e = registry.Find(n);
    task->assignment.add_peer_addresses(e && !e->addresses.empty() ? e->addresses.front() : "");
  }

  if (group && task->assignment.launcher() == "mpirun") {
    // mpirun starts every rank from the group's first node (docs/mpirun.md):
    // one assignment, one end status; the other nodes are held, not sent.
    task->assignment.set_local_world_size(local_sizes.front());
    Outbound o;
    o.node = task->nodes.front();
    v1::TaskAssignment* a = o.message.mutable_assign();
    *a = task->assignment;
    a->clear_ranks();
    a->set_start_at_agent_ns(StartAtAgent(id, o.node));
    changes->out.push_back(std::move(o));
    changes->tasks.insert(task->info.task_id());
    return;
  }
  int first_rank = 0;
  for (size_t i = 0; i < task->nodes.size(); ++i) {
    Outbound o;
    o.node = task->nodes[i];
    v1::TaskAssignment* a = o.message.mutable_assign();
    *a = task->assignment;
    a->clear_ranks();
    a->set_start_at_agent_ns(StartAtAgent(id, o.node));
    if (group) {
      a->set_local_world_size(local_sizes[i]);
      for (int l = 0; l < local_sizes[i]; ++l) {
        auto* r = a->add_ranks();
        r->set_rank(first_rank + l);
        r->set_local_rank(l);
      }
    }
    first_rank += local_sizes[i];
    changes->out.push_back(std::move(o));
  }
  changes->tasks.insert(task->info.task_id());
}

void Scheduler::Schedule(const Registry& registry, int64_t now_unix_ns, Changes* changes,
                         ScheduleMode mode) {
  if (mode == ScheduleMode::kAuto) {
    // The full pass as a backstop: should a change reach no NodeChanged,
    // the task waits at most 10 s, not forever.
    // A round where most nodes changed (a run just created over the fleet)
    // is cheaper as one full pass than as candidates collected and sorted
    // (cmax-scheduler-cost: 0.29 s against 0.59 s at 50,000 nodes).
    const bool due = last_full_ns_ == 0 || now_unix_ns - last_full_ns_ >= kFullPassEveryNs ||
                     now_unix_ns < last_full_ns_ ||
                     2 * changed_nodes_.size() >= node_tasks_.size() + 1;
    mode = due ? ScheduleMode::kFull : ScheduleMode::kIncremental;
  }
  if (mode == ScheduleMode::kFull) {
    last_full_ns_ = now_unix_ns;
    changed_nodes_.clear();  // the full pass looks at every pending task
    ScheduleFull(registry, now_unix_ns, changes);
  } else {
    ScheduleIncremental(registry, now_unix_ns, changes);
  }
}

void Scheduler::ScheduleIncremental(const Registry& registry, int64_t now_unix_ns,
                                    Changes* changes) {
  // After a pass no pending task is ready (a task passed over can only
  // become less ready later in the pass: assignments make nodes busy). A
  // pending task's readiness depends only on its nodes' connections and on
  // the tasks on its nodes, so only the pending tasks on a node that changed
  // since (a task there freed it or ended, it connected, a task was added)
  // can be ready now. Taken in the full pass's order (run creation order,
  // then TasksOf's: plan index, then task id), they are assigned exactly as
  // the full pass would.
  if (changed_nodes_.empty()) return;
  std::unordered_set<std::string> nodes;
  nodes.swap(changed_nodes_);
  std::vector<TaskRow*> candidates;
  std::unordered_set<const TaskRow*> seen;
  for (const auto& n : nodes) {
    auto it = node_tasks_.find(n);
    if (it == node_tasks_.end() || it->second.busy > 0 || !registry.IsConnected(n)) continue;
    for (TaskRow* t : it->second.tasks) {
      if (t->info.state() != v1::TASK_PENDING) continue;
      if (t->nodes.size() > 1 && !seen.insert(t).second) continue;
      candidates.push_back(t);
    }
  }
  if (candidates.empty()) return;
  std::unordered_map<std::string, size_t> run_pos;
  for (size_t i = 0; i < run_order_.size(); ++i) run_pos.emplace(run_order_[i], i);
  auto pos = [&](const TaskRow* t) {
    auto it = run_pos.find(t->info.run_id());
    return it == run_pos.end() ? run_order_.size() : it->second;
  };
  std::sort(candidates.begin(), candidates.end(), [&](const TaskRow* a, const TaskRow* b) {
    const size_t pa = pos(a), pb = pos(b);
    if (pa != pb) return pa < pb;
    if (a->info.suite_index() != b->info.suite_index()) {
      return a->info.suite_index() < b->info.suite_index();
    }
    return a->info.task_id() < b->info.task_id();
  });
  for (TaskRow* t : candidates) {
    // A run not in run_order_ is not served by the full pass either.
    if (pos(t) == run_order_.size() || t->info.state() != v1::TASK_PENDING) continue;
    if (ReadyIndexed(*t, registry)) Assign(t, registry, now_unix_ns, changes);
  }
}

void Scheduler::ScheduleFull(const Registry& registry, int64_t now_unix_ns, Changes* changes) {
  // Ready() for every pending task, with its two scans of every task done
  // once up front (they made a call tasks x tasks; at 10,000 nodes and 4
  // entries that is 1.6e9 steps a call): the busy nodes, and per run and
  // node the lowest plan index of a task not yet ended.
  std::set<std::string> busy;
  std::map<std::pair<std::string, std::string>, int> open_index;  // (run, node) -> index
  bool any_pending = false;
  for (const auto& [id, t] : tasks_) {
    const auto s = t->info.state();
    if (s == v1::TASK_PENDING) any_pending = true;
    if (s == v1::TASK_ASSIGNED || s == v1::TASK_RUNNING) busy.insert(t->nodes.begin(), t->nodes.end());
    if (IsTerminal(s)) continue;
    for (const auto& n : t->nodes) {
      auto [it, inserted] = open_index.try_emplace({t->info.run_id(), n}, t->info.suite_index());
      if (!inserted) it->second = std::min(it->second, t->info.suite_index());
    }
  }
  if (!any_pending) return;
  for (const auto& run_id : run_order_) {
    for (TaskRow* t : TasksOf(run_id)) {
      if (t->info.state() != v1::TASK_PENDING) continue;
      bool ready = true;
      for (const auto& n : t->nodes) {
        if (!registry.IsConnected(n) || busy.count(n)) {
          ready = false;
          break;
        }
        // An earlier entry of the same run still open on this node.
        auto it = open_index.find({run_id, n});
        if (it != open_index.end() && it->second < t->info.suite_index()) {
          ready = false;
          break;
        }
      }
      if (!ready) continue;
      Assign(t, registry, now_unix_ns, changes);
      const auto s = t->info.state();
      if (s == v1::TASK_ASSIGNED || s == v1::TASK_RUNNING) busy.insert(t->nodes.begin(), t->nodes.end());
    }
  }
}

void Scheduler::StopOnNodes(const TaskRow& task, const std::string& reason,
                            const std::string& except, Changes* changes) {
  for (const auto& n : task.nodes) {
    if (n == except) continue;
    Outbound o;
    o.node = n;
    auto* c = o.message.mutable_cancel();
    c->set_task_id(task.info.task_id());
    c->set_attempt(task.info.attempt());
    c->set_reason(reason);
    changes->out.push_back(std::move(o));
  }
}

int64_t Scheduler::StartAtAgent(const std::string& task_id, const std::string& node) const {
  auto it = start_at_agent_.find(task_id);
  if (it == start_at_agent_.end()) return 0;
  auto n = it->second.find(node);
  return n == it->second.end() ? 0 : n->second;
}

void Scheduler::StampStartTimes(const std::string& node, Changes* changes) const {
  for (Outbound& o : changes->out) {
    if (o.node != node || !o.message.has_assign()) continue;
    if (int64_t at = StartAtAgent(o.message.assign().task_id(), node); at > 0) {
      o.message.mutable_assign()->set_start_at_agent_ns(at);
    }
  }
}

void Scheduler::RecordAttempt(TaskRow* task, v1::TaskState state, const std::string& message,
                              int64_t now_unix_ns) {
  v1::AttemptSummary* a = task->info.add_earlier_attempts();
  a->set_attempt(task->info.attempt());
  a->set_state(state);
  a->set_exit_code(task->info.exit_code());
  a->set_message(message);
  a->set_finished_unix_ns(now_unix_ns);
}

void Scheduler::EndTask(TaskRow* task, v1::TaskState state, const std::string& message,
                        int64_t now_unix_ns, Changes* changes) {
  if (now_unix_ns <= 0) now_unix_ns = NowUnixNs();  // callers without a clock (OnHello)
  if (state == v1::TASK_FAILED && task->info.attempt() <= task->retries) {
    // The attempt that ended goes into the history before the task waits
    // for its next one, so the final TaskInfo describes the last attempt.
    RecordAttempt(task, state, message, now_unix_ns);
    SetState(task, v1::TASK_PENDING);
    task->info.set_message(absl::StrCat("attempt ", task->info.attempt(), " failed (", message,
                                        "); retrying"));
    changes->tasks.insert(task->info.task_id());
    return;
  }
  SetState(task, state);
  task->info.set_message(message);
  task->info.set_finished_unix_ns(now_unix_ns);
  changes->tasks.insert(task->info.task_id());
  MaybeFinishRun(task->info.run_id(), now_unix_ns, changes);
}

void Scheduler::OnStatus(const std::string& node, const v1::TaskStatus& status,
                         int64_t now_unix_ns, Changes* changes) {
  TaskRow* task = FindTask(status.task_id());
  if (!task || status.attempt() != task->info.attempt()) return;
  if (std::find(task->nodes.begin(), task->nodes.end(), node) == task->nodes.end()) return;
  v1::TaskInfo& info = task->info;
  if (status.state() == v1::TASK_RUNNING) {
    if (info.state() == v1::TASK_ASSIGNED) {
      SetState(task, v1::TASK_RUNNING);
      changes->tasks.insert(info.task_id());
    }
    return;
  }
  if (!IsTerminal(status.state()) || IsTerminal(info.state()) ||
      info.state() == v1::TASK_PENDING) {
    return;
  }
  const bool group = !task->assignment.group().empty();
  if (!group) {
    info.set_exit_code(status.exit_code());
    info.set_stderr_tail(status.stderr_tail());
    EndTask(task, status.state(), status.message(), now_unix_ns, changes);
    return;
  }
  auto& ends = rank_ends_[info.task_id()];
  ends[status.rank()] = status;
  if (status.state() != v1::TASK_COMPLETED) {
    // The first rank to end badly ends the group and alone is blamed: the
    // statuses of the ranks stopped because of it arrive after the task has
    // ended and are ignored above.
    std::string why = RankEndReason(node, status);
    info.set_exit_code(status.exit_code());
    info.set_stderr_tail(status.stderr_tail());
    info.set_blamed_nodes(node);
    StopOnNodes(*task, why, "", changes);
    EndTask(task, status.state() == v1::TASK_CANCELLED ? v1::TASK_FAILED : status.state(), why,
            now_unix_ns, changes);
    return;
  }
  info.set_exit_code(std::max(info.exit_code(), status.exit_code()));
  const int expected =
      task->assignment.launcher() == "mpirun" ? 1 : task->assignment.world_size();
  if (static_cast<int>(ends.size()) >= expected) {
    EndTask(task, v1::TASK_COMPLETED, "", now_unix_ns, changes);
  }
}

void Scheduler::OnHello(const std::string& node, const v1::Hello& hello, Changes* changes) {
  NodeChanged(node);  // connected now: its pending tasks may be ready
  std::set<std::pair<std::string, int>> held;
  for (const auto& h : hello.held()) {
    held.insert({h.task_id(), h.attempt()});
    TaskRow* t = FindTask(h.task_id());
    bool stale = !t || t->info.attempt() != h.attempt() || IsTerminal(t->info.state());
    if (h.running() && stale) {
      Outbound o;
      o.node = node;
      auto* c = o.message.mutable_cancel();
      c->set_task_id(h.task_id());
      c->set_attempt(h.attempt());
      c->set_reason(t ? absl::StrCat("task already ", TaskStateName(t->info.state()))
                      : "unknown task");
      changes->out.push_back(std::move(o));
    }
  }
  // Assignments the agent does not hold: the message was lost with the old
  // stream; send it again (the agent starts a task at most once). The
  // node's own tasks from the node index, in task id order as before.
  std::vector<TaskRow*> mine;
  if (auto nt = node_tasks_.find(node); nt != node_tasks_.end()) {
    for (TaskRow* t : nt->second.tasks) {
      if (Holds(t->info.state())) mine.push_back(t);
    }
  }
  std::sort(mine.begin(), mine.end(), [](const TaskRow* a, const TaskRow* b) {
    return a->info.task_id() < b->info.task_id();
  });
  mine.erase(std::unique(mine.begin(), mine.end()), mine.end());
  for (TaskRow* t : mine) {
    const std::string& id = t->info.task_id();
    auto s = t->info.state();
    auto it = std::find(t->nodes.begin(), t->nodes.end(), node);
    if (it == t->nodes.end() || held.count({id, t->info.attempt()})) continue;
    if (s == v1::TASK_RUNNING && t->nodes.size() == 1) {
      // It ran there but the agent has no trace of it: its files are gone.
      EndTask(t, v1::TASK_FAILED, "the agent restarted and holds no trace of the task", 0,
              changes);
      continue;
    }
    size_t index = static_cast<size_t>(it - t->nodes.begin());
    if (t->assignment.launcher() == "mpirun" && index != 0) continue;
    Outbound o;
    o.node = node;
    *o.message.mutable_assign() = t->assignment;
    if (!t->assignment.group().empty() && t->assignment.launcher() != "mpirun") {
      // Ranks of this node: world_size / nodes when uniform.
      int local = t->assignment.world_size() / static_cast<int>(t->nodes.size());
      auto* a = o.message.mutable_assign();
      a->clear_ranks();
      a->set_local_world_size(local);
      for (int l = 0; l < local; ++l) {
        auto* r = a->add_ranks();
        r->set_rank(static_cast<int>(index) * local + l);
        r->set_local_rank(l);
      }
    }
    changes->out.push_back(std::move(o));
  }
  StampStartTimes(node, changes);  // a resend keeps the task's start instant
}

void Scheduler::OnNodeLost(const std::string& node, int64_t now_unix_ns, Changes* changes) {
  OnNodesLost({node}, now_unix_ns, changes);
}

void Scheduler::OnNodesLost(const std::vector<std::string>& nodes, int64_t now_unix_ns,
                            Changes* changes) {
  if (nodes.empty()) return;
  std::map<std::string, size_t> order;
  for (size_t i = 0; i < nodes.size(); ++i) order.emplace(nodes[i], i);
  std::set<std::string> runs;
  // The lost nodes' tasks from the node index, in task id order as a walk
  // over every task would take them.
  std::vector<TaskRow*> affected;
  for (const auto& n : nodes) {
    auto nt = node_tasks_.find(n);
    if (nt == node_tasks_.end()) continue;
    for (TaskRow* t : nt->second.tasks) {
      if (!IsTerminal(t->info.state())) affected.push_back(t);
    }
  }
  std::sort(affected.begin(), affected.end(), [](const TaskRow* a, const TaskRow* b) {
    return a->info.task_id() < b->info.task_id();
  });
  affected.erase(std::unique(affected.begin(), affected.end()), affected.end());
  for (TaskRow* t : affected) {
    const std::string& id = t->info.task_id();
    if (IsTerminal(t->info.state())) continue;
    const std::string* node = nullptr;
    size_t first = nodes.size();
    for (const std::string& n : t->nodes) {
      auto it = order.find(n);
      if (it != order.end() && it->second < first) {
        first = it->second;
        node = &it->first;
      }
    }
    if (!node) continue;
    std::string why = t->info.state() == v1::TASK_PENDING
                          ? absl::StrCat("agent on ", *node, " lost before the task started")
                          : absl::StrCat("agent on ", *node, " lost (no heartbeat)");
    if (t->info.state() != v1::TASK_PENDING) StopOnNodes(*t, why, *node, changes);
    if (!t->assignment.group().empty()) t->info.set_blamed_nodes(*node);
    SetState(t, v1::TASK_LOST);
    t->info.set_message(why);
    t->info.set_finished_unix_ns(now_unix_ns);
    changes->tasks.insert(id);
    runs.insert(t->info.run_id());
  }
  for (const std::string& run_id : runs) MaybeFinishRun(run_id, now_unix_ns, changes);
}

absl::StatusOr<int> Scheduler::Cancel(const std::string& run_id, int64_t now_unix_ns,
                                      Changes* changes) {
  RunRow* run = FindRun(run_id);
  if (!run) return absl::NotFoundError(absl::StrCat("run '", run_id, "' is not active"));
  run->cancel_requested = true;
  changes->runs.insert(run_id);
  int n = 0;
  for (TaskRow* t : TasksOf(run_id)) {
    if (IsTerminal(t->info.state())) continue;
    if (t->info.state() != v1::TASK_PENDING) StopOnNodes(*t, "run cancelled", "", changes);
    SetState(t, v1::TASK_CANCELLED);
    t->info.set_message("run cancelled");
    t->info.set_finished_unix_ns(now_unix_ns);
    changes->tasks.insert(t->info.task_id());
    ++n;
  }
  MaybeFinishRun(run_id, now_unix_ns, changes);
  return n;
}

void Scheduler::ExpireOverdue(int64_t now_unix_ns, int64_t grace_ns, Changes* changes) {
  // Only the tasks holding nodes (active_, kept by SetState, in task id
  // order); ending one changes no other task, so they are picked first.
  std::vector<TaskRow*> overdue;
  for (const auto& [id, t] : active_) {
    // A barrier task's clock starts at its start instant, not at assignment.
    int64_t deadline = std::max(t->info.started_unix_ns(), t->info.start_at_unix_ns()) +
                       int64_t{t->assignment.timeout_seconds()} * 1000000000 + grace_ns;
    if (now_unix_ns >= deadline) overdue.push_back(t);
  }
  for (TaskRow* t : overdue) {
    const std::string& id = t->info.task_id();
    std::string why = absl::StrCat("no end status ", grace_ns / 1000000000,
                                   " s after its timeout of ", t->assignment.timeout_seconds(),
                                   " s");
    if (!t->assignment.group().empty()) {
      std::vector<std::string> hung = UnendedNodes(*t);
      if (hung.empty()) hung = t->nodes;
      t->info.set_blamed_nodes(absl::StrJoin(hung, ","));
      if (hung.size() < t->nodes.size()) absl::StrAppend(&why, " on ", absl::StrJoin(hung, ", "));
    }
    StopOnNodes(*t, why, "", changes);
    SetState(t, v1::TASK_TIMED_OUT);
    t->info.set_message(why);
    t->info.set_finished_unix_ns(now_unix_ns);
    changes->tasks.insert(id);
    MaybeFinishRun(t->info.run_id(), now_unix_ns, changes);
  }
}

std::vector<int> Scheduler::LocalSizes(const TaskRow& task) const {
  auto it = local_sizes_.find(task.info.task_id());
  return LocalSizesOf(task, it == local_sizes_.end() ? nullptr : &it->second);
}

std::vector<std::string> Scheduler::UnendedNodes(const TaskRow& task) const {
  const std::string& id = task.info.task_id();
  auto ends_it = rank_ends_.find(id);
  const bool mpirun = task.assignment.launcher() == "mpirun";
  std::vector<std::string> out;
  if (mpirun || ends_it == rank_ends_.end()) return out;  // none ended: caller blames all
  // Ranks are contiguous per node in node order (Assign); after a
  // coordinator restart the layout is not kept and taken as uniform.
  const std::vector<int> sizes = LocalSizes(task);
  int first = 0;
  for (size_t i = 0; i < task.nodes.size(); ++i) {
    for (int r = first; r < first + sizes[i]; ++r) {
      if (!ends_it->second.count(r)) {
        out.push_back(task.nodes[i]);
        break;
      }
    }
    first += sizes[i];
  }
  return out;
}

void Scheduler::MaybeFinishRun(const std::string& run_id, int64_t now_unix_ns,
                               Changes* changes) {
  RunRow* run = FindRun(run_id);
  if (!run || (run->info.state() != "running" && run->info.state() != "pending")) return;
  if (auto c = counts_.find(run_id); c != counts_.end() && c->second.ended < c->second.total) {
    return;  // a task not ended yet
  }
  run->info.set_state(run->cancel_requested ? "cancelled" : "completed");
  run->info.set_finished_unix_ns(now_unix_ns);
  RefreshCounters(run);
  changes->runs.insert(run_id);
  changes->finished_runs.push_back(run_id);
}

void Scheduler::RefreshCounters(RunRow* run) {
  RunCounts c;
  if (auto it = counts_.find(run->info.run_id()); it != counts_.end()) c = it->second;
  run->info.set_tasks_total(c.total);
  run->info.set_tasks_done(c.ended);
  run->info.set_tasks_failed(c.failed);
  run->info.set_tasks_could_not_run(c.could_not_run);
}

std::vector<int> Scheduler::RecountForTest(const std::string& run_id) {
  int total = 0, done = 0, failed = 0, could_not_run = 0;
  for (TaskRow* t : TasksOf(run_id)) {
    ++total;
    if (IsTerminal(t->info.state())) ++done;
    if (TaskBroke(t->info)) ++failed;
    if (TaskCouldNotRun(t->info)) ++could_not_run;
  }
  return {total, done, failed, could_not_run};
}

RunRow* Scheduler::FindRun(const std::string& run_id) {
  auto it = runs_.find(run_id);
  return it == runs_.end() ? nullptr : it->second.get();
}

TaskRow* Scheduler::FindTask(const std::string& task_id) {
  auto it = tasks_.find(task_id);
  return it == tasks_.end() ? nullptr : it->second.get();
}

const std::vector<TaskRow*>& Scheduler::TasksOf(const std::string& run_id) {
  auto [cached, inserted] = tasks_of_.try_emplace(run_id);
  if (!inserted) return cached->second;
  std::vector<TaskRow*>& out = cached->second;
  // Task ids start with the run id followed by '.'.
  std::string prefix = run_id + ".";
  for (auto it = tasks_.lower_bound(prefix);
       it != tasks_.end() && it->first.compare(0, prefix.size(), prefix) == 0; ++it) {
    out.push_back(it->second.get());
  }
  std::stable_sort(out.begin(), out.end(), [](const TaskRow* a, const TaskRow* b) {
    return a->info.suite_index() < b->info.suite_index();
  });
  if (out.empty()) {
    tasks_of_.erase(cached);  // no such run (yet): nothing to cache
    static const std::vector<TaskRow*> kNone;
    return kNone;
  }
  return out;
}

std::vector<RunRow*> Scheduler::Runs() {
  std::vector<RunRow*> out;
  for (const auto& id : run_order_) out.push_back(runs_[id].get());
  return out;
}

void Scheduler::Forget(const std::string& run_id) {
  for (TaskRow* t : TasksOf(run_id)) {
    Unindex(t);
    rank_ends_.erase(t->info.task_id());
    start_at_agent_.erase(t->info.task_id());
    local_sizes_.erase(t->info.task_id());
    tasks_.erase(t->info.task_id());
  }
  tasks_of_.erase(run_id);
  counts_.erase(run_id);
  runs_.erase(run_id);
  run_order_.erase(std::remove(run_order_.begin(), run_order_.end(), run_id), run_order_.end());
}

}  // namespace cmax::coordinator
