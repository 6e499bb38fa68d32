// cmaxctl schedule add|list|pause|resume|remove: recurring runs kept by the
// coordinator (coordinator/schedules.h). The plan file is read and parsed
// here at `add`, as `cmaxctl run --plan` reads one, and the parsed plan is
// what the coordinator stores.
#ifndef CMAX_COORDINATOR_CTL_SCHEDULE_H_
#define CMAX_COORDINATOR_CTL_SCHEDULE_H_

#include <string>
#include <vector>

#include "cmax/v1/service.pb.h"
#include "coordinator/ctl/client.h"

namespace cmax::ctl {

// Exit codes: 0 done, 2 usage, a bad plan, duration, window or selector
// (nothing stored), an unknown id; 3 coordinator unreachable; 1 otherwise.
int CmdSchedule(Client& client, const std::vector<std::string>& args);

// `schedule list` as text: a line per schedule (id, plan, every, window,
// state, next slot, last run and its outcome), then how it selects nodes
// and its counts, its run in progress and its latest skipped slots with
// their reasons.
std::string ScheduleListText(const v1::ListSchedulesResponse& list);

}  // namespace cmax::ctl

#endif  // CMAX_COORDINATOR_CTL_SCHEDULE_H_
