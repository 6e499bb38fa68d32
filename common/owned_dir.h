// The folders a daemon keeps its state in (the coordinator's data dir with
// its database and the token-protected reports, the agent's work dir with
// its spools and task files) must be its own: a folder another local user
// made first under a fixed name, or one others can write, lets them swap
// files the daemon trusts.
#ifndef CMAX_COMMON_OWNED_DIR_H_
#define CMAX_COMMON_OWNED_DIR_H_

#include <string>

#include "absl/status/status.h"

namespace cmax {

// Makes `path` (one level, mode 0750) when it is missing, then checks the
// folder it names (a symbolic link is followed: one another user planted
// leads to their folder, which fails the owner check):
// owned by this process's effective uid or by root (root can replace
// anything anyway), not writable by others, and writable by its group only
// when that group is one of this process's own (Kubernetes' fsGroup makes a
// volume group-writable by the pod's group). FAILED_PRECONDITION saying
// which rule it breaks and how to fix it, e.g. "data dir /tmp/x is owned by
// uid 1001 (this process runs as uid 0): use a folder of its own"; the
// errno's status when it cannot be made or read. `what` names the folder
// ("data dir", "work dir").
absl::Status EnsureOwnedDir(const std::string& path, const std::string& what);

}  // namespace cmax

#endif  // CMAX_COMMON_OWNED_DIR_H_
