// Simulated nodes for the scale benchmark (benchmarks/scale/README.md): the
// inventory a node reports and the records each suite would write on it,
// shaped like the real suites' records (benchmarks/cuda/gpu_gemm.cc,
// benchmarks/collective_common/runner.cc, benchmarks/health/ib_ports.cc,
// benchmarks/consistency) and every one marked simulated: Measurement and
// Finding carry `simulated = true`, Logs say "simulated", the inventory has
// the fact simulated=true.
//
// Pure and deterministic: the records of (node, suite) are a function of the
// node's index and faults, so an agent can regenerate record `seq` after a
// reconnect instead of holding them, and a test can rebuild what was sent.
#ifndef CMAX_BENCHMARKS_SCALE_SIM_NODE_H_
#define CMAX_BENCHMARKS_SCALE_SIM_NODE_H_

#include <cstdint>
#include <string>

#include "cmax/v1/inventory.pb.h"
#include "cmax/v1/record.pb.h"

namespace cmax::scale {

inline constexpr int kSimGpus = 8;
inline constexpr int kSimIbPorts = 8;

// Fractions of the nodes (0..1) that get each fault, chosen by the node's
// index so the same nodes get it in every run with the same seed.
struct SimFaults {
  double slow_gpu = 0;    // gemm: GPU 3 at 70% of its siblings
  double flap_port = 0;   // health: mlx5_2/1 with link_downed 12 and a warn finding
  double sdc = 0;         // consistency: GPU 5's digest differs, fail finding
  double hang = 0;        // the first task never ends (the coordinator times it out)
  double disconnect = 0;  // the stream drops halfway through the first task; resends
  uint64_t seed = 1;
};

struct SimNode {
  int index = 0;
  std::string name;
  bool slow_gpu = false, flap_port = false, sdc = false, hang = false, disconnect = false;
};

// Node `index` named "<prefix><index, 5 digits>".
SimNode MakeSimNode(int index, const std::string& prefix, const SimFaults& faults);
v1::Inventory SimInventory(const SimNode& node);

// How many records `suite` writes on `node`; suites the simulator does not
// model write 2 (a Log and a not-measured Finding, so nothing is graded).
int64_t SimRecordCount(const SimNode& node, const std::string& suite);
// Record `seq` (0 <= seq < SimRecordCount) of `suite` on `node`.
v1::Record SimRecordAt(const SimNode& node, const std::string& suite, int64_t seq,
                       int64_t time_unix_ns);

}  // namespace cmax::scale

#endif  // CMAX_BENCHMARKS_SCALE_SIM_NODE_H_
