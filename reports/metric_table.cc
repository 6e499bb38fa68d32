#include "reports/metric_table.h"

namespace cmax::reports {

const std::vector<FleetMetric>& FleetMetrics() {
  // Grouping keys are the labels the suites put on these metrics; values
  // with different group labels measure different things. busbw_gbps is
  // judged by collective_judge.cc (largest size per run, pairs), not here:
  // a pair's record sits on its rank-0 node, which is not the one to blame.
  static const std::vector<FleetMetric> table = {
      // fp8_fast_accum: FP8 timed with and without fast accumulation (two modes).
      {"gemm_tflops", "Compute", Better::kHigher, {"dtype", "m", "n", "k", "fp8_fast_accum"}},
      // gpu: a copy on one GPU ("0") and on all at once ("all") differ.
      {"memory_bandwidth_gbps", "Compute", Better::kHigher, {"test", "size_bytes", "gpu"}},
      // busbw_gbps is judged by judges/collective_judge.cc (a pair's records
      // sit on its rank-0 node, which is not the one to blame).
      // rtt_ms (connectivity) is judged per node pair by
      // judges/connectivity_judge.cc, which blames the node behind the slow
      // pairs rather than the pair's source.
      // rdma_write_bw_gbps, rdma_read_bw_gbps and rdma_write_lat_us (rdma)
      // are compared across the fleet per rail by judges/rdma_judge.cc: a
      // record sits on the pair's client node, and the judge blames the NIC
      // or the link from the evidence across pairs, not the record's node.
      // job: one fio job's figure ("0", "1", ...) and the node's total ("all").
      {"storage_bandwidth_mbps", "Storage", Better::kHigher, {"pattern", "op", "job"}},
      {"burnin_tflops_mean", "Reliability", Better::kHigher, {}},
  };
  return table;
}

const FleetMetric* FindFleetMetric(const std::string& metric) {
  for (const auto& m : FleetMetrics()) {
    if (m.metric == metric) return &m;
  }
  return nullptr;
}

}  // namespace cmax::reports
