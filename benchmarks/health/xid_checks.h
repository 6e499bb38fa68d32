// Turns Xid / SXid events from the kernel log into findings (one per code and
// GPU, with the catalogue's severity and action, the first lines as
// evidence) and counts (Measurements xid_count and xid_events_total).
//
// Attribution to cmax: an Xid 43 or 45 is what a GPU process killed in the
// middle of its work can leave behind, and cmax kills suites at their
// timeout. The agent appends "<unix_ns> <pid>" to /run/cmax/kills (under the
// root) for every kill. An Xid 43/45 whose time (boot time from /proc/stat
// btime + the kernel timestamp) falls within kKillWindowS after such a kill,
// or whose pid equals a killed pid, is reported as info "caused by cmax".
#ifndef CMAX_BENCHMARKS_HEALTH_XID_CHECKS_H_
#define CMAX_BENCHMARKS_HEALTH_XID_CHECKS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "benchmarks/health/health_result.h"
#include "benchmarks/health/kernel_log.h"
#include "benchmarks/health/pci_gpus.h"
#include "benchmarks/health/xid_catalog.h"
#include "common/sysroot.h"

namespace cmax::health {

inline constexpr double kKillWindowS = 30;

struct KillRecord {
  int64_t unix_ns = 0;
  long pid = -1;
};

// <root>/run/cmax/kills; empty when absent. Malformed lines are skipped.
std::vector<KillRecord> ReadKills(const Sysroot& root);
// Boot time (unix ns) from <root>/proc/stat "btime"; nullopt when unknown.
std::optional<int64_t> ReadBootTimeNs(const Sysroot& root);

struct XidContext {
  std::vector<PciGpu> gpus;                     // PCI order -> index
  std::map<std::string, std::string> uuids;     // normalised PCI -> UUID
  std::vector<KillRecord> kills;
  std::optional<int64_t> boot_unix_ns;
  std::string source;                           // "kmsg" or "journal"
};

void CheckXids(const std::vector<XidEvent>& events, const XidCatalog& catalog,
               const XidContext& context, HealthResult* result);

}  // namespace cmax::health

#endif  // CMAX_BENCHMARKS_HEALTH_XID_CHECKS_H_
