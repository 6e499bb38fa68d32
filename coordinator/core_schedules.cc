// The coordinator core and its schedules (schedules.h): the API handlers
// (add, list, pause/resume/remove), the schedules' view of the core (the
// connected agents, a run started through StartRun, Slurm asked on the idle
// probe's thread with the answer posted back here), and the reconciling of
// a schedule's run after a restart. Schedules::Tick runs in the core's
// Tick (core_dispatch.cc), Schedules::OnRunEnded in CompleteRun
// (core_report.cc). Core thread only.
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/run_id.h"
#include "common/time_util.h"
#include "coordinator/core.h"

namespace cmax::coordinator {
namespace {

std::shared_ptr<spdlog::logger> Log() { return GetLogger("coordinator"); }

}  // namespace

std::vector<std::string> CoordinatorCore::ScheduleHooks::ConnectedNodes() {
  return core_->registry_.ConnectedNodes();
}

bool CoordinatorCore::ScheduleHooks::Settling() {
  // As restored runs wait for their nodes: at most the heartbeat timeout
  // after the start, less when every agent the store remembers is back.
  if (MonotonicNs() - core_->created_mono_ns_ >= core_->registry_.timeout_ns()) return false;
  return core_->registry_.ConnectedCount() < core_->registry_.All().size();
}

absl::StatusOr<std::string> CoordinatorCore::ScheduleHooks::StartRun(
    const v1::Plan& plan, const std::vector<std::string>& nodes, const std::string& schedule_id) {
  auto started = core_->StartRun(plan, &nodes, schedule_id);
  if (!started.ok()) return started.status();
  return started->run_id();
}

void CoordinatorCore::ScheduleHooks::AskIdle(const std::string& schedule_id, int64_t ask,
                                             const std::vector<std::string>&) {
  // sinfo answers for every node; the schedule picks its own out of it.
  CoordinatorCore* core = core_;
  core->idle_probe_.Ask([core, schedule_id, ask](SlurmNodeStates answer) {
    core->Post([core, schedule_id, ask, answer = std::move(answer)] {
      core->schedules_.OnIdleAnswer(schedule_id, ask, answer);
    });
  });
}

void CoordinatorCore::ReconcileScheduleRuns() {
  for (const std::string& run_id : schedules_.CurrentRuns()) {
    if (scheduler_.FindRun(run_id)) continue;  // restored: it goes on
    v1::RunInfo info;
    if (auto stored = store_->GetRun(run_id); stored.ok()) {
      info = stored->info;
    } else {
      info.set_run_id(run_id);
      info.set_state("lost");
      Log()->warn("a schedule's run {} is not in the store ({}): counted as lost", run_id,
                  std::string(stored.status().message()));
    }
    schedules_.OnRunEnded(info);
  }
}

absl::StatusOr<v1::AddScheduleResponse> CoordinatorCore::HandleAddSchedule(
    const v1::AddScheduleRequest& request, std::string added_by) {
  auto added = schedules_.Add(request.spec(), added_by);
  if (!added.ok()) return added.status();
  Checkpoint();  // "added" once it is durable
  v1::AddScheduleResponse resp;
  *resp.mutable_schedule() = std::move(*added);
  return resp;
}

v1::ListSchedulesResponse CoordinatorCore::HandleListSchedules() {
  v1::ListSchedulesResponse resp;
  for (auto& s : schedules_.List()) *resp.add_schedules() = std::move(s);
  return resp;
}

absl::StatusOr<v1::UpdateScheduleResponse> CoordinatorCore::HandleUpdateSchedule(
    const v1::UpdateScheduleRequest& request) {
  const std::string& id = request.schedule_id();
  if (!IsSafeRunId(id)) return absl::InvalidArgumentError("bad schedule id");
  absl::StatusOr<v1::ScheduleInfo> changed;
  switch (request.action()) {
    case v1::SCHEDULE_PAUSE: changed = schedules_.Pause(id); break;
    case v1::SCHEDULE_RESUME: changed = schedules_.Resume(id); break;
    case v1::SCHEDULE_REMOVE: changed = schedules_.Remove(id); break;
    default: return absl::InvalidArgumentError("action must be pause, resume or remove");
  }
  if (!changed.ok()) return changed.status();
  Checkpoint();
  v1::UpdateScheduleResponse resp;
  *resp.mutable_schedule() = std::move(*changed);
  return resp;
}

}  // namespace cmax::coordinator
