// What fence.cc and kube_fence.cc share; not part of the library's API.
#ifndef CMAX_COORDINATOR_REMEDIATION_FENCE_INTERNAL_H_
#define CMAX_COORDINATOR_REMEDIATION_FENCE_INTERNAL_H_

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace cmax::remediation::internal {

// Runs argv (never a shell) under `timeout`; its stdout (at most
// `max_output` bytes) when it exits 0. Errors name the command and the tail
// of its stderr: UNAVAILABLE (could not start, or a non-zero exit),
// NOT_FOUND (a non-zero exit saying "not found"), DEADLINE_EXCEEDED.
absl::StatusOr<std::string> RunFenceCommand(const std::vector<std::string>& argv,
                                            std::chrono::milliseconds timeout,
                                            size_t max_output);

// INVALID_ARGUMENT unless IsFenceableNodeName(node).
absl::Status CheckNodeName(const std::string& node);

}  // namespace cmax::remediation::internal

#endif  // CMAX_COORDINATOR_REMEDIATION_FENCE_INTERNAL_H_
