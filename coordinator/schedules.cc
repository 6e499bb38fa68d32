#include "coordinator/schedules.h"

#include <algorithm>
#include <climits>
#include <set>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "common/plural.h"
#include "common/secrets.h"
#include "common/time_util.h"

namespace cmax::coordinator {
namespace {

std::shared_ptr<spdlog::logger> Log() { return GetLogger("schedules"); }

// Where a schedule's slots count from (schedule.proto, anchor_unix_ns).
int64_t Anchor(const v1::ScheduleInfo& info) {
  return info.anchor_unix_ns() != 0 ? info.anchor_unix_ns() : info.created_unix_ns();
}

// At most this many node names in a recorded reason; the rest are counted.
constexpr size_t kNamesInReason = 8;

std::string NamesText(const std::vector<std::string>& names) {
  std::vector<std::string> shown(names.begin(),
                                 names.begin() + std::min(names.size(), kNamesInReason));
  std::string out = absl::StrJoin(shown, ", ");
  if (names.size() > shown.size()) {
    absl::StrAppend(&out, " and ", names.size() - shown.size(), " more");
  }
  return out;
}

// Why a schedule of `every_ns` is not allowed under `limits` (empty: it is).
std::string TooFrequent(int64_t every_ns, const Schedules::Limits& limits) {
  if (every_ns >= limits.min_every_ns) return "";
  return absl::StrCat("every ", PeriodText(every_ns),
                      " is more often than this coordinator allows: the minimum period is ",
                      PeriodText(limits.min_every_ns),
                      " (cmax-coordinator --min-schedule-period)");
}

}  // namespace

std::string PeriodText(int64_t ns) {
  static constexpr std::pair<const char*, int64_t> kUnits[] = {
      {"d", kDayNs}, {"h", 60 * kMinuteNs}, {"m", kMinuteNs}};
  for (const auto& [unit, size] : kUnits) {
    if (ns >= size && ns % size == 0) return absl::StrCat(ns / size, unit);
  }
  if (ns % kNsPerSecond == 0) return absl::StrCat(ns / kNsPerSecond, "s");
  return absl::StrCat(static_cast<double>(ns) / kNsPerSecond, "s");
}

std::string RunOutcome(const v1::RunInfo& run, bool* failed) {
  *failed = run.state() != "completed" || run.nodes_failed() > 0;
  return absl::StrCat(run.state().empty() ? "unknown" : run.state(), "; tier ",
                      run.tier().empty() ? "none" : run.tier(), "; ",
                      Counted(run.nodes_failed(), "node", "nodes"), " failed");
}

Schedules::Schedules(Store* store, const Clock* clock, ScheduleRunner* runner)
    : store_(store), clock_(clock), runner_(runner) {}

absl::Status Schedules::Load() {
  auto rows = store_->LoadSchedules();
  if (!rows.ok()) return rows.status();
  entries_.clear();
  for (auto& info : *rows) {
    Entry e;
    auto terms = ParseScheduleSpec(info.spec());
    if (terms.ok()) {
      e.terms = *terms;
      e.valid = true;
    } else {
      Log()->error("schedule {}: its stored spec does not parse ({}); it starts nothing",
                   info.schedule_id(), std::string(terms.status().message()));
    }
    e.info = std::move(info);
    const std::string id = e.info.schedule_id();
    // Added before the minimum (or under a lower --min-schedule-period):
    // paused, and the list says why, rather than run or dropped unseen.
    if (e.valid && !e.info.paused()) {
      if (const std::string why = TooFrequent(e.terms.every_ns, limits_); !why.empty()) {
        const int64_t now = clock_->NowUnixNs();
        e.info.set_paused(true);
        e.info.clear_pending_nodes();
        e.info.set_probing(false);
        Skip(e, e.info.next_slot_unix_ns(), now, 0,
             absl::StrCat("paused when the coordinator started: ", why,
                          "; remove it and add it again with a longer --every"));
        UpdateNext(e);
        Persist(e);
        Log()->warn("schedule {} paused: {}", id, why);
      }
    }
    entries_[id] = std::move(e);
  }
  if (static_cast<int>(entries_.size()) > limits_.max_schedules) {
    Log()->warn("{} schedules are stored, more than --max-schedules {}: none is added until "
                "some are removed",
                entries_.size(), limits_.max_schedules);
  }
  return absl::OkStatus();
}

std::vector<std::string> Schedules::CurrentRuns() const {
  std::vector<std::string> out;
  for (const auto& [id, e] : entries_) {
    if (!e.info.current_run_id().empty()) out.push_back(e.info.current_run_id());
  }
  return out;
}

absl::StatusOr<v1::ScheduleInfo> Schedules::Add(const v1::ScheduleSpec& spec,
                                                const std::string& added_by) {
  auto terms = ParseScheduleSpec(spec);
  if (!terms.ok()) return terms.status();
  if (const std::string why = TooFrequent(terms->every_ns, limits_); !why.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--every: ", why));
  }
  if (static_cast<int>(entries_.size()) >= limits_.max_schedules) {
    return absl::ResourceExhaustedError(absl::StrCat(
        "this coordinator has ", entries_.size(), " schedules, its limit (cmax-coordinator "
        "--max-schedules ", limits_.max_schedules,
        "): remove one first (cmaxctl schedule list, cmaxctl schedule remove ID)"));
  }
  const int64_t now = clock_->NowUnixNs();
  Entry e;
  e.terms = *terms;
  e.valid = true;
  std::string id;
  do {
    id = absl::StrCat("s", RandomId(3));
  } while (entries_.count(id));
  e.info.set_schedule_id(id);
  *e.info.mutable_spec() = spec;
  e.info.set_created_unix_ns(now);
  e.info.set_added_by(added_by);
  if (e.terms.has_window) {
    // `--every 7d --window 02:00-06:00` means "weekly, at night": the first
    // run is tonight's window (or now, inside it), not a week out, and the
    // later slots keep its time of day.
    e.info.set_anchor_unix_ns(NextInWindow(e.terms.window, now));
    e.info.set_next_slot_unix_ns(e.info.anchor_unix_ns());
  } else {
    e.info.set_anchor_unix_ns(now);
    e.info.set_next_slot_unix_ns(NextSlotAfter(now, e.terms.every_ns, now));
  }
  UpdateNext(e);
  if (auto st = store_->PutSchedule(e.info); !st.ok()) return st;
  Log()->info("schedule {} added by {}: plan '{}' every {}{}{}{}{}", id,
              added_by.empty() ? "(unknown)" : added_by, spec.plan().name(), spec.every(),
              spec.nodes().empty() ? "" : absl::StrCat(" on ", spec.nodes()),
              spec.window().empty() ? "" : absl::StrCat(" in ", spec.window(), " UTC"),
              spec.only_idle() ? ", idle nodes only" : "",
              spec.max_nodes_at_once() > 0
                  ? absl::StrCat(", at most ", spec.max_nodes_at_once(), " nodes at once")
                  : "");
  auto [it, inserted] = entries_.emplace(id, std::move(e));
  return it->second.info;
}

const v1::ScheduleInfo* Schedules::Find(const std::string& id) const {
  auto it = entries_.find(id);
  return it == entries_.end() ? nullptr : &it->second.info;
}

std::vector<v1::ScheduleInfo> Schedules::List() const {
  std::vector<v1::ScheduleInfo> out;
  for (const auto& [id, e] : entries_) out.push_back(e.info);
  std::sort(out.begin(), out.end(), [](const v1::ScheduleInfo& a, const v1::ScheduleInfo& b) {
    return std::make_pair(a.created_unix_ns(), a.schedule_id()) <
           std::make_pair(b.created_unix_ns(), b.schedule_id());
  });
  return out;
}

absl::StatusOr<v1::ScheduleInfo> Schedules::Pause(const std::string& id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return absl::NotFoundError(absl::StrCat("no schedule '", id, "'"));
  Entry& e = it->second;
  if (e.info.paused()) return e.info;
  const int64_t now = clock_->NowUnixNs();
  e.info.set_paused(true);
  if (e.info.pending_nodes_size() > 0 || e.info.probing()) {
    Skip(e, e.info.pass_slot_unix_ns(), now, 0,
         absl::StrCat("paused: ", Counted(e.info.pending_nodes_size(), "node", "nodes"),
                      " of the slot left unrun (",
                      NamesText({e.info.pending_nodes().begin(), e.info.pending_nodes().end()}),
                      ")"));
    e.info.clear_pending_nodes();
    e.info.set_probing(false);
    e.asked = 0;
  }
  UpdateNext(e);
  Persist(e);
  Log()->info("schedule {} paused{}", id,
              e.info.current_run_id().empty()
                  ? ""
                  : absl::StrCat(": its run ", e.info.current_run_id(), " goes on"));
  return e.info;
}

absl::StatusOr<v1::ScheduleInfo> Schedules::Resume(const std::string& id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return absl::NotFoundError(absl::StrCat("no schedule '", id, "'"));
  Entry& e = it->second;
  if (!e.info.paused()) return e.info;
  if (e.valid) {
    if (const std::string why = TooFrequent(e.terms.every_ns, limits_); !why.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("schedule ", id, " cannot resume: ", why,
                       "; remove it and add it again with a longer --every"));
    }
  }
  const int64_t now = clock_->NowUnixNs();
  e.info.set_paused(false);
  e.info.set_next_slot_unix_ns(NextSlotAfter(Anchor(e.info), e.terms.every_ns, now));
  UpdateNext(e);
  Persist(e);
  Log()->info("schedule {} resumed: next slot {}", id,
              FormatRfc3339(e.info.next_start_unix_ns()));
  return e.info;
}

absl::StatusOr<v1::ScheduleInfo> Schedules::Remove(const std::string& id) {
  auto it = entries_.find(id);
  if (it == entries_.end()) return absl::NotFoundError(absl::StrCat("no schedule '", id, "'"));
  if (auto st = store_->DeleteSchedule(id); !st.ok()) return st;
  v1::ScheduleInfo info = std::move(it->second.info);
  entries_.erase(it);
  Log()->info("schedule {} removed{}", id,
              info.current_run_id().empty()
                  ? ""
                  : absl::StrCat(": its run ", info.current_run_id(), " goes on"));
  return info;
}

bool Schedules::PassActive(const Entry& e) const {
  return !e.info.current_run_id().empty() || e.info.pending_nodes_size() > 0 || e.info.probing();
}

void Schedules::UpdateNext(Entry& e) {
  if (e.info.paused() || !e.valid) {
    e.info.set_next_start_unix_ns(0);
    return;
  }
  e.info.set_next_start_unix_ns(StartOfSlot(e.terms, e.info.next_slot_unix_ns()));
}

void Schedules::Persist(const Entry& e) {
  if (auto st = store_->PutSchedule(e.info); !st.ok()) {
    Log()->error("schedule {}: cannot store its state: {}", e.info.schedule_id(), st.ToString());
  }
}

void Schedules::Skip(Entry& e, int64_t slot_ns, int64_t now, int64_t slots,
                     const std::string& reason) {
  e.info.set_slots_skipped(e.info.slots_skipped() + slots);
  v1::ScheduleSkip* s = e.info.add_skipped();
  s->set_slot_unix_ns(slot_ns);
  s->set_at_unix_ns(now);
  s->set_reason(reason);
  s->set_slots(static_cast<int32_t>(std::min<int64_t>(slots, INT32_MAX)));
  auto* list = e.info.mutable_skipped();
  if (list->size() > kMaxSkipsKept) list->DeleteSubrange(0, list->size() - kMaxSkipsKept);
  Log()->info("schedule {}: slot {} {}: {}", e.info.schedule_id(), FormatRfc3339(slot_ns),
              slots > 0 ? "skipped" : "in part", reason);
}

void Schedules::OnRunEnded(const v1::RunInfo& run) { ended_.push_back(run); }

void Schedules::HandleEnded(const v1::RunInfo& run, int64_t now) {
  for (auto& [id, e] : entries_) {
    if (e.info.current_run_id() != run.run_id()) continue;
    bool failed = false;
    e.info.set_last_run_id(run.run_id());
    e.info.set_last_outcome(RunOutcome(run, &failed));
    e.info.set_last_failed(failed);
    e.info.set_last_ended_unix_ns(run.finished_unix_ns() > 0 ? run.finished_unix_ns() : now);
    if (failed) e.info.set_failures(e.info.failures() + 1);
    e.info.clear_current_run_id();
    e.info.clear_current_nodes();
    Log()->info("schedule {}: run {} (wave {} of {}) ended: {}", id, run.run_id(), e.info.wave(),
                e.info.waves(), e.info.last_outcome());
    if (e.info.paused()) {
      EndPass(e);
    } else {
      NextWave(e, now);
    }
    Persist(e);
  }
}

void Schedules::Tick() {
  const int64_t now = clock_->NowUnixNs();
  while (!ended_.empty()) {
    v1::RunInfo run = std::move(ended_.front());
    ended_.pop_front();
    HandleEnded(run, now);
  }
  for (auto& [id, e] : entries_) {
    if (!e.valid) continue;
    // A pass whose Slurm question was lost with a restart asks again.
    if (e.info.probing() && e.asked == 0 && !e.info.paused()) {
      e.asked = next_ask_++;
      runner_->AskIdle(id, e.asked,
                       {e.info.pending_nodes().begin(), e.info.pending_nodes().end()});
    }
    const int64_t slot = e.info.next_slot_unix_ns();
    // Paused: no slot at all (Resume picks the first one after its call).
    if (e.info.paused() || now < slot) continue;
    if (e.terms.has_window && !InWindow(e.terms.window, now)) continue;  // waits for the window
    if (runner_->Settling()) continue;  // the agents are still coming back
    // Every slot from `slot` up to now is due: one start for all of them.
    const int64_t next = NextSlotAfter(Anchor(e.info), e.terms.every_ns, now);
    const int64_t missed = (next - slot) / e.terms.every_ns - 1;
    e.info.set_next_slot_unix_ns(next);
    UpdateNext(e);
    if (missed > 0 && !e.terms.has_window) {
      Skip(e, slot, now, missed,
           absl::StrCat(Counted(missed, "slot", "slots"),
                        " missed while the coordinator was down or held up: run once now"));
    }
    if (PassActive(e)) {
      Skip(e, slot, now, 1,
           e.info.current_run_id().empty()
               ? "the previous slot is still waiting for Slurm's answer"
               : absl::StrCat("the previous run ", e.info.current_run_id(), " (wave ",
                              e.info.wave(), " of ", e.info.waves(), ") is still going"));
    } else {
      StartPass(e, slot, now);
    }
    Persist(e);
  }
}

void Schedules::StartPass(Entry& e, int64_t slot_ns, int64_t now) {
  std::vector<std::string> missing;
  std::vector<std::string> nodes =
      SelectScheduleNodes(e.terms.nodes, runner_->ConnectedNodes(), &missing);
  if (nodes.empty()) {
    Skip(e, slot_ns, now, 1,
         missing.empty() ? absl::StrCat("no connected node matches --nodes '",
                                        e.info.spec().nodes().empty() ? "all"
                                                                      : e.info.spec().nodes(),
                                        "'")
                         : absl::StrCat("none of the nodes is connected: ", NamesText(missing)));
    return;
  }
  e.info.set_pass_slot_unix_ns(slot_ns);
  e.info.set_wave(0);
  const int n = static_cast<int>(nodes.size());
  const int per = e.terms.max_nodes_at_once > 0 ? e.terms.max_nodes_at_once : n;
  e.info.set_waves((n + per - 1) / per);
  if (!missing.empty()) {
    Skip(e, slot_ns, now, 0, absl::StrCat("not connected, left for the next slot: ",
                                       NamesText(missing)));
  }
  for (auto& node : nodes) e.info.add_pending_nodes(std::move(node));
  NextWave(e, now);
}

void Schedules::NextWave(Entry& e, int64_t now) {
  if (e.info.pending_nodes_size() == 0) {
    EndPass(e);
    return;
  }
  if (e.terms.only_idle) {
    e.info.set_probing(true);
    e.asked = next_ask_++;
    runner_->AskIdle(e.info.schedule_id(), e.asked,
                     {e.info.pending_nodes().begin(), e.info.pending_nodes().end()});
    return;
  }
  std::vector<std::string> pending(e.info.pending_nodes().begin(), e.info.pending_nodes().end());
  RunWave(e, std::move(pending), now);
}

void Schedules::OnIdleAnswer(const std::string& schedule_id, int64_t ask,
                             const SlurmNodeStates& answer) {
  auto it = entries_.find(schedule_id);
  if (it == entries_.end()) return;
  Entry& e = it->second;
  if (ask != e.asked || !e.info.probing()) return;
  const int64_t now = clock_->NowUnixNs();
  e.asked = 0;
  e.info.set_probing(false);
  const int64_t slot = e.info.pass_slot_unix_ns();
  std::vector<std::string> pending(e.info.pending_nodes().begin(), e.info.pending_nodes().end());
  if (!answer.measured) {
    Skip(e, slot, now, e.info.wave() == 0 ? 1 : 0,
         e.info.wave() == 0
             ? answer.reason
             : absl::StrCat(answer.reason, "; ", Counted(static_cast<int64_t>(pending.size()),
                                                        "node", "nodes"),
                            " left for the next slot"));
    e.info.clear_pending_nodes();
    EndPass(e);
    Persist(e);
    return;
  }
  std::vector<std::string> idle, busy;
  for (const auto& n : pending) {
    auto s = answer.states.find(n);
    if (s != answer.states.end() && IsSlurmIdle(s->second)) {
      idle.push_back(n);
    } else {
      const std::string state = s == answer.states.end() ? "not a Slurm node" : s->second;
      busy.push_back(absl::StrCat(n, " (", state, ")"));
    }
  }
  if (!busy.empty()) {
    Skip(e, slot, now, idle.empty() && e.info.wave() == 0 ? 1 : 0,
         absl::StrCat(idle.empty() && e.info.wave() == 0 ? "no selected node is idle in Slurm: "
                                                         : "not idle in Slurm, left for the next "
                                                           "slot: ",
                      NamesText(busy)));
  }
  e.info.clear_pending_nodes();
  for (const auto& n : idle) e.info.add_pending_nodes(n);
  if (idle.empty()) {
    EndPass(e);
  } else {
    RunWave(e, std::move(idle), now);
  }
  Persist(e);
}

void Schedules::RunWave(Entry& e, std::vector<std::string> candidates, int64_t now) {
  // Nodes that went away since the pass began are left for the next slot.
  const std::vector<std::string> connected = runner_->ConnectedNodes();
  const std::set<std::string> up(connected.begin(), connected.end());
  std::vector<std::string> gone;
  std::vector<std::string> ready;
  for (auto& n : candidates) (up.count(n) ? ready : gone).push_back(std::move(n));
  if (!gone.empty()) {
    Skip(e, e.info.pass_slot_unix_ns(), now, ready.empty() && e.info.wave() == 0 ? 1 : 0,
         absl::StrCat("not connected any more, left for the next slot: ", NamesText(gone)));
  }
  const size_t per =
      e.terms.max_nodes_at_once > 0 ? static_cast<size_t>(e.terms.max_nodes_at_once) : ready.size();
  std::vector<std::string> wave(ready.begin(), ready.begin() + std::min(per, ready.size()));
  std::vector<std::string> rest(ready.begin() + wave.size(), ready.end());
  e.info.clear_pending_nodes();
  for (const auto& n : rest) e.info.add_pending_nodes(n);
  if (wave.empty()) {
    EndPass(e);
    return;
  }
  e.info.set_wave(e.info.wave() + 1);
  // Fewer waves than first counted when nodes were dropped, never more.
  e.info.set_waves(e.info.wave() + static_cast<int>((rest.size() + per - 1) / per));
  auto run = runner_->StartRun(e.info.spec().plan(), wave, e.info.schedule_id());
  e.info.set_last_started_unix_ns(now);
  if (!run.ok()) {
    e.info.set_last_run_id("");
    e.info.set_last_outcome(absl::StrCat("could not start: ", run.status().message()));
    e.info.set_last_failed(true);
    e.info.set_last_ended_unix_ns(now);
    e.info.set_failures(e.info.failures() + 1);
    Log()->warn("schedule {}: wave {} of {} could not start: {}{}", e.info.schedule_id(),
                e.info.wave(), e.info.waves(), std::string(run.status().message()),
                rest.empty() ? "" : "; the rest of the slot waits for the next one");
    e.info.clear_pending_nodes();
    EndPass(e);
    return;
  }
  e.info.set_current_run_id(*run);
  for (const auto& n : wave) e.info.add_current_nodes(n);
  e.info.set_runs_started(e.info.runs_started() + 1);
  Log()->info("schedule {}: slot {}: run {} started (wave {} of {}, {}: {})",
              e.info.schedule_id(), FormatRfc3339(e.info.pass_slot_unix_ns()), *run,
              e.info.wave(), e.info.waves(), Counted(static_cast<int64_t>(wave.size()), "node",
                                                      "nodes"),
              NamesText(wave));
}

void Schedules::EndPass(Entry& e) {
  e.info.clear_pending_nodes();
  e.info.clear_current_nodes();
  e.info.set_probing(false);
  e.asked = 0;
}

}  // namespace cmax::coordinator
