// The coordinator core's record ingest: a batch of records from an agent is
// checked against its tasks (unknown tasks, tasks not on the sending node and
// records whose wire rank or `rank` label is not one the scheduler assigned
// to the sending node, rank_claims.h, are acknowledged but not stored, and
// logged with the node, task and claim), counted against the node's record budget
// (the --max-records-per-second token bucket: over it the records are still
// stored, and a warning names the agent at most once per 10 s), and queued
// for the round's group commit (FlushIngest), which stores every pending
// batch in one call and then acknowledges them, or closes their streams
// unacknowledged when the store failed. Core thread only.
#include "coordinator/core.h"

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/time_util.h"
#include "coordinator/rank_claims.h"

namespace cmax::coordinator {
namespace {

std::shared_ptr<spdlog::logger> Log() { return GetLogger("coordinator"); }

}  // namespace

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
    NodeRanks ranks;  // what the sending node holds of the task
    int forged = 0;   // records refused for their rank claims
    std::string first_forged;  // why the first of them was refused
  };
  std::map<std::string, TaskMeta> meta;
  std::vector<RecordToStore> rows;
  std::map<std::tuple<std::string, int, int>, int64_t> next;
  std::vector<v1::Finding> findings;
  int refused = 0;
  // A batch holds runs of records of one (task, attempt, rank): the last
  // record's lookups are reused while they match (no map search and no key
  // copy per record).
  TaskMeta* last_meta = nullptr;
  const std::string* last_meta_task = nullptr;
  int64_t* last_next = nullptr;
  const std::tuple<std::string, int, int>* last_key = nullptr;
  for (const auto& r : batch.records()) {
    bool inserted = false;
    if (last_meta == nullptr || *last_meta_task != r.task_id()) {
      auto [it, fresh] = meta.try_emplace(r.task_id());
      inserted = fresh;
      last_meta = &it->second;
      last_meta_task = &it->first;
    }
    TaskMeta& m = *last_meta;
    if (inserted) {
      if (const TaskRow* t = scheduler_.FindTask(r.task_id())) {
        m = {t->info.run_id(), t->info.suite(), t->nodes, IsTerminal(t->info.state()), true};
        m.ranks = RanksOf(*t, scheduler_.LocalSizes(*t), node);
      } else if (auto st = store_->GetTask(r.task_id()); st.ok()) {
        m = {st->info.run_id(), st->info.suite(), st->nodes, true, true};
        m.ranks = RanksOf(*st, LocalSizesOf(*st, nullptr), node);
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
    if (last_next == nullptr || std::get<1>(*last_key) != r.attempt() ||
        std::get<2>(*last_key) != r.rank() || std::get<0>(*last_key) != r.task_id()) {
      auto [it, fresh] = next.try_emplace(std::make_tuple(r.task_id(), r.attempt(), r.rank()), 0);
      last_next = &it->second;
      last_key = &it->first;
    }
    *last_next = std::max(*last_next, r.seq() + 1);
    if (!m.known || std::find(m.nodes.begin(), m.nodes.end(), node) == m.nodes.end() ||
        r.seq() < 0) {
      ++refused;  // acknowledged so the agent can drop it, but not stored
      continue;
    }
    // A record speaks for the ranks its node holds, never for another's.
    if (std::string why = RankClaimError(m.ranks, r); !why.empty()) {
      ++refused;
      if (m.forged++ == 0) m.first_forged = std::move(why);
      continue;
    }
    rows.push_back({&r, m.run_id, node, m.suite, m.ended});
    if (r.record().has_finding() && r.record().finding().severity() >= v1::SEVERITY_WARN) {
      v1::Finding f = r.record().finding();
      (*f.mutable_labels())["node"] = node;
      findings.push_back(std::move(f));
    }
  }
  int forged = 0;
  for (const auto& [task_id, m] : meta) {
    if (m.forged == 0) continue;
    forged += m.forged;
    Log()->warn("agent {}: refused {} records of task {} that claim a rank it does not hold "
                "(the first {})",
                node, m.forged, task_id, m.first_forged);
  }
  if (refused > forged) {
    Log()->warn("agent {}: dropped {} records of unknown tasks or tasks not on this node", node,
                refused - forged);
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

}  // namespace cmax::coordinator
