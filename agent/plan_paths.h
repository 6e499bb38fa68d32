// The agent's own check of the paths an assignment names, before it spawns
// the suite: the parameters its declaration marks as a file to read
// (ParamSpec::PathUse::kReadsFile) or a storage directory (kStorageDir), against the agent's --allow-read and
// --storage-roots (common/allowed_files.h). The suite checks again when it
// opens them (the check that counts: realpath at the time of use).
#ifndef CMAX_AGENT_PLAN_PATHS_H_
#define CMAX_AGENT_PLAN_PATHS_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cmax/v1/service.pb.h"

namespace cmax::agent {

// OK, or the reason (naming the flag and path, never a file's content).
absl::Status ValidatePlanPaths(const v1::TaskAssignment& assignment,
                               const std::vector<std::string>& allow_read,
                               const std::vector<std::string>& storage_roots);

}  // namespace cmax::agent

#endif  // CMAX_AGENT_PLAN_PATHS_H_
