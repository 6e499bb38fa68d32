// InfiniBand and RoCE ports from sysfs: <root>/sys/class/infiniband/<dev>/
// ports/<n>/{state, phys_state, rate, link_layer, counters/*} (Linux
// Documentation/ABI/stable/sysfs-class-infiniband).
//
// Checks: a port not "4: ACTIVE" or not "5: LinkUp" fails; a rate below the
// expectation fails (without one, a port slower than the fastest port of the
// same link layer on the node warns); error counters above zero warn, and a
// counter at the maximum of its legacy width (IBTA PortCounters, as the
// kernel exposes them) is reported as saturated: its true count is unknown.
// Every counter becomes a Measurement (ib_counter) so the run's change can
// be computed from the first and last health run.
#ifndef CMAX_BENCHMARKS_HEALTH_IB_PORTS_H_
#define CMAX_BENCHMARKS_HEALTH_IB_PORTS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "benchmarks/health/health_result.h"
#include "benchmarks/health/thresholds.h"
#include "common/sysroot.h"

namespace cmax::health {

struct IbPort {
  std::string device;  // "mlx5_0"
  int port = 0;
  std::string state;       // "4: ACTIVE"
  std::string phys_state;  // "5: LinkUp"
  std::string rate;        // "400 Gb/sec (4X NDR)"
  std::optional<double> rate_gbps;
  std::string link_layer;  // "InfiniBand" or "Ethernet" (RoCE)
  std::string netdev;      // RoCE: gid_attrs/ndevs/0
  bool roce_v2 = false;    // RoCE: some gid_attrs/types/<i> reads "RoCE v2"
  std::map<std::string, uint64_t> counters;  // counters/<name>
};

// A legacy error counter and its width in bits.
struct IbCounterSpec {
  const char* name;
  int bits;
  const char* meaning;
};
const std::vector<IbCounterSpec>& IbErrorCounters();

std::vector<IbPort> ReadIbPorts(const Sysroot& root);

// "400 Gb/sec (4X NDR)" -> 400; nullopt when unparsable.
std::optional<double> ParseIbRate(const std::string& rate);

void CheckIbPorts(const std::vector<IbPort>& ports, const HealthThresholds& t,
                  HealthResult* result);

}  // namespace cmax::health

#endif  // CMAX_BENCHMARKS_HEALTH_IB_PORTS_H_
