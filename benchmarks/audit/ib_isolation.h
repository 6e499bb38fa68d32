// InfiniBand and RoCE isolation checks.
//
//   P_Key table (InfiniBand link layer only): a table holding only the default
//     full-membership key 0xffff means tenants are not partitioned: WARN by
//     default, FAIL when the fabric is shared between tenants, INFO when the
//     cluster has a single tenant. RoCE ports also show just 0xffff, which
//     says nothing, so they are not judged on it.
//   M_Key (smpquery portinfo, where installed and permitted): protect bits 0
//     fail; level 1 warns; level >= 2 passes. A query dropped without answer
//     counts as protected only when a NodeInfo query to the same port
//     succeeds; no permission (umad) or a VF without QP0 is UNKNOWN.
//   opensm.conf (when readable): m_key, m_key_protection_level, sm_key, sa_key.
//   RoCE: GID types and whether RoCE GIDs sit on VLAN devices (INFO: isolation
//     may live in the switch or DPU).
#ifndef CMAX_BENCHMARKS_AUDIT_IB_ISOLATION_H_
#define CMAX_BENCHMARKS_AUDIT_IB_ISOLATION_H_

#include <string>
#include <vector>

#include "benchmarks/audit/check_result.h"
#include "benchmarks/audit/collectors.h"
#include "common/sysroot.h"

namespace cmax::audit {

enum class Tenancy { kUnspecified, kShared, kSingle };

// Parsed `smpquery portinfo` output ("Mkey:....0x0", "ProtectBits:....0").
struct PortInfoKeys {
  bool has_mkey = false;
  uint64_t mkey = 0;
  bool has_protect_bits = false;
  int protect_bits = 0;
  int lease_period = -1;
};
PortInfoKeys ParseSmpPortInfo(const std::string& text);

// Every port under /sys/class/infiniband, plus opensm.conf.
std::vector<CheckResult> CheckInfiniband(const Sysroot& root, Tenancy tenancy,
                                         const CommandRunner& commands);

}  // namespace cmax::audit

#endif  // CMAX_BENCHMARKS_AUDIT_IB_ISOLATION_H_
