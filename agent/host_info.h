// What the agent tells the coordinator about its node in Hello: the
// inventory (gathered by a child process, never NVML in the agent) and the
// addresses other nodes can reach it at.
//
// Thread: free functions; called from the agent's start-up thread.
#ifndef CMAX_AGENT_HOST_INFO_H_
#define CMAX_AGENT_HOST_INFO_H_

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cmax/v1/inventory.pb.h"

namespace cmax::agent {

// Runs `<bench_dir>/cmax-bench hostcheck --inventory [--root=ROOT]` with
// `timeout` and parses its one JSON line as a cmax.v1.Inventory (unknown
// fields ignored). When that fails or times out, returns MinimalInventory
// with facts["inventory_error"] = the reason. `root` empty: "/".
v1::Inventory GatherInventory(const std::string& bench_dir, const std::string& root,
                              std::chrono::milliseconds timeout);

// Inventory read by the agent itself: hostname (gethostname), CPU count
// (processor lines of ROOT/proc/cpuinfo) and facts["cpu_model"] (its model
// name, or the Arm core named from implementer and part: common/cpuinfo.h),
// memory (MemTotal of ROOT/proc/meminfo) and kernel
// (ROOT/proc/sys/kernel/osrelease).
v1::Inventory MinimalInventory(const std::string& root);

// Parses the inventory child's output: the last non-empty line that parses
// as an Inventory. INVALID_ARGUMENT with the reason otherwise.
absl::StatusOr<v1::Inventory> ParseInventoryOutput(const std::string& out);

// Every address of an interface that is up, except loopback and IPv6
// link-local (which needs an interface scope a peer does not know);
// loopback addresses only when there is nothing else.
std::vector<std::string> ReachableAddresses();

// Parses the agent's --advertise list, "ADDR[,ADDR...]": each entry an IPv4
// or IPv6 literal (inet_pton) or a host name (RFC 1123: dot-separated labels
// of letters, digits and '-', 1-63 characters each, not starting or ending
// with '-', at most 253 in all, the last label not all digits). Surrounding
// spaces are trimmed; a repeated entry is kept once. INVALID_ARGUMENT naming
// the entry otherwise, and for an empty list.
absl::StatusOr<std::vector<std::string>> ParseAdvertiseList(const std::string& list);

}  // namespace cmax::agent

#endif  // CMAX_AGENT_HOST_INFO_H_
