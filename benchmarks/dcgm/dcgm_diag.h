// Parser of `dcgmi diag -r <level> -j` output (NVIDIA DCGM). Two layouts are
// understood:
//   DCGM 4.x: {"DCGM Diagnostic": {"test_categories": [{"category", "tests": [{"name",
//             "results": [{"entity_group": "GPU", "entity_id": 0, "status": "Pass",
//             "warnings": [{"warning", "error_id", "error_category", "error_severity"}]}],
//             "test_summary": {"status"}}]}], "runtime_error"}, "entity_groups": [...],
//             "metadata": {"version", "Driver Version Detected"}}
//             (schema: NVIDIA/DCGM testing/python3/dcgm_diag_schema.json)
//   DCGM 3.x: {"DCGM GPU Diagnostic": {"test_categories": [{"category", "tests": [{"name",
//             "results": [{"gpu_ids": "0", "status": "Fail", "warnings": [...]}]}]}]}}
// Status strings are compared case-insensitively ("Pass", "Fail", "Warn", "Skip").
#ifndef CMAX_BENCHMARKS_DCGM_DCGM_DIAG_H_
#define CMAX_BENCHMARKS_DCGM_DCGM_DIAG_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cmax::dcgm {

struct DiagResult {
  std::string category;  // "Deployment", "Hardware", "Integration", "Stress", ...
  std::string test;      // "software", "memory", "pcie", "targeted_power", ...
  std::string entity;    // "gpu:0", "cpu:0", or "" for a result without an entity
  std::string status;    // lower case: pass, fail, warn, skip, not run, ...
  std::vector<std::string> warnings;  // "<text> (error id N)"
};

struct DiagReport {
  std::string version;         // metadata.version, when present
  std::string driver_version;  // metadata["Driver Version Detected"]
  std::string runtime_error;   // the diagnostic could not run
  std::vector<DiagResult> results;
  // "gpu:0" -> "serial 1654922011111 device 2335" from entity_groups.
  std::vector<std::pair<std::string, std::string>> entities;
};

// INVALID_ARGUMENT when the text is not JSON or holds neither layout.
// Text before the first '{' (dcgmi may print a banner) is skipped.
absl::StatusOr<DiagReport> ParseDiagJson(const std::string& text);

}  // namespace cmax::dcgm

#endif  // CMAX_BENCHMARKS_DCGM_DCGM_DIAG_H_
