// Tenant isolation checks: targets a tenant must not reach, the BMC from the
// host, and NCCL tuning variables forced system-wide.
#ifndef CMAX_BENCHMARKS_AUDIT_TENANT_ISOLATION_H_
#define CMAX_BENCHMARKS_AUDIT_TENANT_ISOLATION_H_

#include <chrono>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/audit/check_result.h"
#include "common/sysroot.h"

namespace cmax::audit {

struct HostPort {
  std::string host;
  std::string port;
};
// "10.0.0.1:623", "bmc.example:443", "::1:22" (the last colon splits).
// INVALID_ARGUMENT names the bad item.
absl::StatusOr<std::vector<HostPort>> ParseForbidden(const std::string& list);

// One result per target: a TCP connect that succeeds within `timeout` is
// CRITICAL; refused or unanswered is PASS; an unresolvable name is UNKNOWN.
std::vector<CheckResult> CheckForbiddenTargets(const std::vector<HostPort>& targets,
                                               std::chrono::milliseconds timeout);

// /dev/ipmi0 (or /dev/ipmi/0, /dev/ipmidev/0) usable by this user (by any
// user when running as root): WARN, the BMC is reachable from the tenant.
CheckResult CheckBmcDevice(const Sysroot& root);

// NCCL_ALGO, NCCL_PROTO, NCCL_MIN_NCHANNELS set in /etc/nccl.conf or
// /etc/environment: WARN (ClusterMAX asks providers to leave them unset).
CheckResult CheckNcclSystemEnv(const Sysroot& root);

}  // namespace cmax::audit

#endif  // CMAX_BENCHMARKS_AUDIT_TENANT_ISOLATION_H_
