// Plans: YAML files parsed into cmax.v1.Plan and validated against the suite
// catalog. Every error names file:line:column.
//
// Schema (see benchmarks/plans/quick.yaml):
//   name: STRING                      (required)
//   description: STRING
//   expect: {gpus_per_node, gpu_model, min_cpu_cores, min_memory_gib,
//            tenancy: shared|single, metrics: {NAME: MIN}}
//   suites:                           (required, at least one)
//     - suite: NAME                   (required; in the catalog)
//       name: STRING
//       scope: node|gang|barrier|pairs
//       timeout: 90 | 90s | 5m | 1h
//       nodes: all | [NAME, ...] | {names: [...], regex: RE}
//       params: {KEY: VALUE}          (validated per suite)
//       retries: N
//       ranks_per_node: N | gpus      (gang)
//       launcher: agents | mpirun     (gang)
//       env: {VAR: VALUE}             (allow-listed)
//   baseline: FILE                    (cmaxctl baseline save; relative to the
//                                      plan file; read and embedded)
//   baseline_tolerance: 0.05          (needs baseline; default 0.05)
//   price_per_gpu_hour: 2.49          (USD; the scorecard's cost figures)
#ifndef CMAX_COMMON_PLAN_PARSER_H_
#define CMAX_COMMON_PLAN_PARSER_H_

#include <string>

#include "absl/status/statusor.h"
#include "cmax/v1/plan.pb.h"

namespace cmax {

// Largest plan file accepted.
inline constexpr size_t kMaxPlanBytes = 1 << 20;
// Largest baseline file (JSON) a plan may embed; the coordinator accepts
// messages up to 16 MiB.
inline constexpr size_t kMaxBaselineBytes = 8 << 20;

// Parses YAML text. `source` names the file in errors. INVALID_ARGUMENT with
// "source:line:col: message" on any problem.
absl::StatusOr<v1::Plan> ParsePlan(const std::string& yaml_text, const std::string& source);

// Reads and parses a file (NOT_FOUND when missing).
absl::StatusOr<v1::Plan> LoadPlanFile(const std::string& path);

// Validates a Plan that did not come from YAML (e.g. over the wire).
absl::Status ValidatePlan(const v1::Plan& plan);

// Parses "90", "90s", "5m", "1h" into seconds.
absl::StatusOr<int> ParseDurationSeconds(const std::string& text);

}  // namespace cmax

#endif  // CMAX_COMMON_PLAN_PARSER_H_
