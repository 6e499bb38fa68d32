// Schedules: recurring runs of a stored plan (cmaxctl schedule add/list/
// pause/resume/remove), kept in the store so they survive restarts.
//
// A schedule's slots are created + k * every (schedule_terms.h). At each
// Tick the component looks at every schedule:
//
//              slot due, in window,          wave's run
//              nothing in progress           ended, nodes left
//   ┌──────┐ ───────────────────────▶ ┌──────────────┐ ◀──────┐
//   │ idle │                          │ pass: wave k │ ───────┘
//   └──────┘ ◀─────────────────────── └──────────────┘
//      │ ▲     last wave's run ended,        │ --only-idle: before each wave
//      │ │     or nothing left to run        ▼ ask Slurm (probing), then run
//      │ │                              the idle nodes, drop the busy ones
//      ▼ │
//   paused (pause / resume): no slot starts; resume's first slot is the
//   first one after it
//
//  - A slot starts a "pass": the connected nodes --nodes selects, cut into
//    waves of at most --max-nodes-at-once (all in one wave without it). Each
//    wave is one run started through the path a submitted run takes
//    (ScheduleRunner::StartRun: CoordinatorCore::StartRun); the next wave
//    starts when that run has ended. So a schedule never has two runs at
//    once.
//  - A slot that comes due while a pass is still going is skipped, and
//    recorded as skipped with the reason (the run still going).
//  - Slots missed while the coordinator was not running are run once: the
//    next slot is always the first one after now (NextSlotAfter), and the
//    skip is recorded ("N slots missed ... run once"). Right after a
//    restart a due slot waits until the agents are back
//    (ScheduleRunner::Settling), so it is not run on none or a few.
//  - --window: a slot due outside the daily window (UTC) waits for its
//    next opening; a pass's later waves are not held to the window (they
//    follow the previous wave at once).
//  - --only-idle: before each wave the component asks (AskIdle) which of
//    the nodes still to run are idle in Slurm; only those run, the others
//    are left for the next slot (recorded). Slurm not measured (sinfo not
//    found, failed, timed out): the slot (or the rest of the pass) is
//    skipped with Slurm's reason, never treated as all idle.
//  - A run that cannot start (its plan names a node outside the wave, the
//    disk is full, ...) ends the pass, counted as a failure.
//  - Pause keeps the current run going and drops the pass's later waves;
//    remove does the same and forgets the schedule (its runs stay in the
//    store).
//  - Bounds (Limits; cmax-coordinator --min-schedule-period, --max-schedules):
//    a schedule more frequent than the minimum period, or one more than the
//    cap, is refused at Add; a stored one under the minimum (added before,
//    or under a lower flag) is paused at Load with the reason recorded, and
//    resuming it is refused. Each schedule records who added it (added_by).
//
// Every change is written to the store at once (Store::PutSchedule), inside
// the core's round transaction where there is one.
//
// Thread: owned by the coordinator core thread (core.h); not thread-safe.
// Time comes from the injected Clock only, so tests drive it by hand.
#ifndef CMAX_COORDINATOR_SCHEDULES_H_
#define CMAX_COORDINATOR_SCHEDULES_H_

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cmax/v1/run.pb.h"
#include "cmax/v1/schedule.pb.h"
#include "coordinator/clock.h"
#include "coordinator/schedule_terms.h"
#include "coordinator/slurm_idle.h"
#include "coordinator/store.h"

namespace cmax::coordinator {

// What the component needs of the coordinator (the core implements it;
// tests give a fake). Called on the core thread.
class ScheduleRunner {
 public:
  virtual ~ScheduleRunner() = default;
  // The nodes whose agents are connected now.
  virtual std::vector<std::string> ConnectedNodes() = 0;
  // Starts a run of `plan` on exactly `nodes` (connected ones), as a
  // submitted run starts. The run id, or why it could not start.
  virtual absl::StatusOr<std::string> StartRun(const v1::Plan& plan,
                                               const std::vector<std::string>& nodes,
                                               const std::string& schedule_id) = 0;
  // True while the coordinator has just started and agents it knew are
  // still reconnecting: due slots wait (they are neither started on the few
  // nodes back yet nor skipped).
  virtual bool Settling() = 0;
  // Asks Slurm for the state of `nodes`; the answer comes back later
  // through Schedules::OnIdleAnswer(schedule_id, ask, answer), on the core
  // thread.
  virtual void AskIdle(const std::string& schedule_id, int64_t ask,
                       const std::vector<std::string>& nodes) = 0;
};

class Schedules {
 public:
  static constexpr int kMaxSkipsKept = 20;

  // What an operator may add. The defaults are production's; tests lower
  // the period (cmax-coordinator --min-schedule-period 1s).
  struct Limits {
    int64_t min_every_ns = 3600 * kNsPerSecond;  // --min-schedule-period
    int max_schedules = 64;                       // --max-schedules
  };

  // `store`, `clock` and `runner` must outlive the object.
  Schedules(Store* store, const Clock* clock, ScheduleRunner* runner);
  // Before Load.
  void SetLimits(const Limits& limits) { limits_ = limits; }
  const Limits& limits() const { return limits_; }

  // Reads the stored schedules (after a restart). A schedule whose stored
  // spec no longer parses is kept as it is but never starts (logged).
  absl::Status Load();
  // The runs the schedules wait for (for the core to look up after a
  // restart: a run that is not running any more is reported to OnRunEnded).
  std::vector<std::string> CurrentRuns() const;

  // INVALID_ARGUMENT (nothing stored) when the spec or its plan is bad or
  // its period is shorter than Limits::min_every_ns; RESOURCE_EXHAUSTED
  // when Limits::max_schedules are there already. `added_by` (who asked,
  // as the service authenticated them) is stored with it.
  absl::StatusOr<v1::ScheduleInfo> Add(const v1::ScheduleSpec& spec,
                                       const std::string& added_by = "");
  // NOT_FOUND for an unknown id. Pause and resume of a schedule already
  // in that state are no-ops. Resume's next slot is the first after now;
  // resuming one shorter than the minimum period is INVALID_ARGUMENT.
  absl::StatusOr<v1::ScheduleInfo> Pause(const std::string& id);
  absl::StatusOr<v1::ScheduleInfo> Resume(const std::string& id);
  absl::StatusOr<v1::ScheduleInfo> Remove(const std::string& id);
  std::vector<v1::ScheduleInfo> List() const;  // oldest first
  const v1::ScheduleInfo* Find(const std::string& id) const;

  // Starts what is due: slots, next waves, asks owed. Call often (the core:
  // five times a second); a call with nothing due costs O(schedules).
  void Tick();
  // A run ended (its final RunInfo, once its scorecard is built). Handled
  // at the next Tick.
  void OnRunEnded(const v1::RunInfo& run);
  // Slurm's answer to AskIdle. A stale one (its schedule removed, paused,
  // or asked again since) is dropped.
  void OnIdleAnswer(const std::string& schedule_id, int64_t ask, const SlurmNodeStates& answer);

 private:
  struct Entry {
    v1::ScheduleInfo info;
    ScheduleTerms terms;
    bool valid = false;       // the spec parsed
    int64_t asked = 0;        // the AskIdle outstanding (in memory); 0: none
  };
  bool PassActive(const Entry& e) const;
  void StartPass(Entry& e, int64_t slot_ns, int64_t now);
  // Runs the next wave of the pass, or asks Slurm first; ends the pass when
  // nothing is left.
  void NextWave(Entry& e, int64_t now);
  void RunWave(Entry& e, std::vector<std::string> nodes, int64_t now);
  void EndPass(Entry& e);
  void HandleEnded(const v1::RunInfo& run, int64_t now);
  // Records a skip: `slots` whole slots (0: nodes of a slot left out).
  void Skip(Entry& e, int64_t slot_ns, int64_t now, int64_t slots, const std::string& reason);
  void UpdateNext(Entry& e);
  void Persist(const Entry& e);

  Store* store_;
  const Clock* clock_;
  ScheduleRunner* runner_;
  Limits limits_;
  std::map<std::string, Entry> entries_;  // by id
  std::deque<v1::RunInfo> ended_;         // OnRunEnded, for the next Tick
  int64_t next_ask_ = 1;
};

// A period as the flags take it: "1h", "90s", "7d".
std::string PeriodText(int64_t ns);

// "completed; tier Gold; 0 nodes failed" and whether it counts as a failure
// (not completed, or a node failed).
std::string RunOutcome(const v1::RunInfo& run, bool* failed);

}  // namespace cmax::coordinator

#endif  // CMAX_COORDINATOR_SCHEDULES_H_
