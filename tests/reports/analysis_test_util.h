// Run data for the compare, baseline, cost and rank tests: three nodes with
// eight GPUs each, BF16 GEMM figures per GPU and connectivity round trips.
#ifndef CMAX_TESTS_REPORTS_ANALYSIS_TEST_UTIL_H_
#define CMAX_TESTS_REPORTS_ANALYSIS_TEST_UTIL_H_

#include <string>

#include "tests/reports/scorecard_test_util.h"

namespace cmax::reports::testing {

// gemm_tflops (dtype bf16, 8192^3) per GPU: `tflops`; rtt_ms between every
// pair of nodes: `rtt_ms`. Every category has an evaluated result.
inline RunData GpuRun(double tflops = 800, double rtt_ms = 0.2) {
  RunData d = CleanHostcheckRun();
  EvaluateEveryCategory(&d);
  for (const auto& n : d.nodes) {
    d.inventories[n].set_gpu_count(8);
    d.inventories[n].set_hostname(n);
    for (int g = 0; g < 8; ++g) {
      d.records.push_back(Meas(n, "gemm", "gemm_tflops", tflops, "TFLOP/s",
                               {{"gpu", std::to_string(g)}, {"dtype", "bf16"}, {"m", "8192"},
                                {"n", "8192"}, {"k", "8192"}, {"algos_timed", "12"}}));
    }
    for (const auto& peer : d.nodes) {
      if (peer == n) continue;
      d.records.push_back(
          Meas(n, "connectivity", "rtt_ms", rtt_ms, "ms", {{"src", n}, {"dst", peer}}));
    }
  }
  return d;
}

// Sets every value of `metric` on `node` (and, if given, GPU `gpu`) to
// `value`; as a peer (dst) too when `as_peer`.
inline void SetMetric(RunData* d, const std::string& node, const std::string& metric,
                      double value, const std::string& gpu = "", bool as_peer = false) {
  for (auto& rec : d->records) {
    if (!rec.record().has_measurement()) continue;
    auto* m = rec.mutable_record()->mutable_measurement();
    if (m->metric() != metric) continue;
    const bool on_node = rec.node() == node;
    auto dst = m->labels().find("dst");
    const bool peer = as_peer && dst != m->labels().end() && dst->second == node;
    if (!on_node && !peer) continue;
    auto g = m->labels().find("gpu");
    if (!gpu.empty() && (g == m->labels().end() || g->second != gpu)) continue;
    m->set_value(value);
  }
}

}  // namespace cmax::reports::testing

#endif  // CMAX_TESTS_REPORTS_ANALYSIS_TEST_UTIL_H_
