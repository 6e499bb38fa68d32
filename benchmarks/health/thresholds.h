// Health thresholds (data/thresholds.yaml, each default citing its source).
// A file given with --thresholds overrides the keys it names; --set then
// overrides single keys (the plan's inline form).
#ifndef CMAX_BENCHMARKS_HEALTH_THRESHOLDS_H_
#define CMAX_BENCHMARKS_HEALTH_THRESHOLDS_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace cmax::health {

struct HealthThresholds {
  // gpu
  int64_t volatile_dbe_fail = 1;
  int64_t aggregate_dbe_warn = 1;
  int64_t retired_pages_fail = 63;
  bool row_remap_pending_fails = true;
  bool row_remap_failure_fails = true;
  int64_t pcie_replay_warn = 100;
  int64_t temperature_margin_c = 5;
  uint64_t throttle_ignore_mask = 3;
  bool persistence_off_warn = true;
  // nvlink: per link, counters since the driver loaded; a link at or above
  // any of these warns.
  int64_t nvlink_replay_warn = 1;
  int64_t nvlink_recovery_warn = 1;
  int64_t nvlink_crc_flit_warn = 100;
  int64_t nvlink_crc_data_warn = 100;
  int64_t nvlink_effective_errors_warn = 1;
  // infiniband
  double expect_rate_gbps = 0;  // 0: no expectation
  int64_t error_counter_warn = 1;
};

// Applies the keys in `yaml_text` on top of `base`. INVALID_ARGUMENT names an
// unknown section or key, or a value of the wrong type.
absl::StatusOr<HealthThresholds> ParseThresholds(const std::string& yaml_text,
                                                 const HealthThresholds& base);
// Applies "section.key:value[,section.key:value...]" on top of `base`: the
// form a plan carries inline (`params: {set: "nvlink.crc_flit_warn:500"}`),
// within the agent's token alphabet (no '=' or spaces). The same keys and
// checks as ParseThresholds; INVALID_ARGUMENT names a malformed entry.
absl::StatusOr<HealthThresholds> ParseThresholdOverrides(const std::string& spec,
                                                         const HealthThresholds& base);
// The compiled-in defaults (data/thresholds.yaml).
absl::StatusOr<HealthThresholds> DefaultThresholds();

}  // namespace cmax::health

#endif  // CMAX_BENCHMARKS_HEALTH_THRESHOLDS_H_
