#include "benchmarks/health/thresholds.h"

#include <functional>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "benchmarks/health/embedded_data.h"
#include "common/status_macros.h"
#include "yaml-cpp/yaml.h"

namespace cmax::health {

absl::StatusOr<HealthThresholds> ParseThresholds(const std::string& yaml_text,
                                                 const HealthThresholds& base) {
  HealthThresholds t = base;
  using Setter = std::function<void(const YAML::Node&)>;
  auto i64 = [](int64_t* p) { return Setter([p](const YAML::Node& n) { *p = n.as<int64_t>(); }); };
  auto u64 = [](uint64_t* p) {
    return Setter([p](const YAML::Node& n) { *p = n.as<uint64_t>(); });
  };
  auto dbl = [](double* p) { return Setter([p](const YAML::Node& n) { *p = n.as<double>(); }); };
  auto boolean = [](bool* p) { return Setter([p](const YAML::Node& n) { *p = n.as<bool>(); }); };
  const std::map<std::string, std::map<std::string, Setter>> keys = {
      {"gpu",
       {{"volatile_dbe_fail", i64(&t.volatile_dbe_fail)},
        {"aggregate_dbe_warn", i64(&t.aggregate_dbe_warn)},
        {"retired_pages_fail", i64(&t.retired_pages_fail)},
        {"row_remap_pending_fails", boolean(&t.row_remap_pending_fails)},
        {"row_remap_failure_fails", boolean(&t.row_remap_failure_fails)},
        {"pcie_replay_warn", i64(&t.pcie_replay_warn)},
        {"temperature_margin_c", i64(&t.temperature_margin_c)},
        {"throttle_ignore_mask", u64(&t.throttle_ignore_mask)},
        {"persistence_off_warn", boolean(&t.persistence_off_warn)}}},
      {"nvlink",
       {{"replay_warn", i64(&t.nvlink_replay_warn)},
        {"recovery_warn", i64(&t.nvlink_recovery_warn)},
        {"crc_flit_warn", i64(&t.nvlink_crc_flit_warn)},
        {"crc_data_warn", i64(&t.nvlink_crc_data_warn)},
        {"effective_errors_warn", i64(&t.nvlink_effective_errors_warn)}}},
      {"infiniband",
       {{"expect_rate_gbps", dbl(&t.expect_rate_gbps)},
        {"error_counter_warn", i64(&t.error_counter_warn)}}},
  };
  try {
    YAML::Node root = YAML::Load(yaml_text);
    if (!root || root.IsNull()) return t;
    if (!root.IsMap()) return absl::InvalidArgumentError("thresholds: not a map of sections");
    for (const auto& section : root) {
      std::string name = section.first.as<std::string>();
      auto sec = keys.find(name);
      if (sec == keys.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("thresholds: unknown section '", name, "' (gpu, nvlink, infiniband)"));
      }
      if (!section.second.IsMap()) {
        return absl::InvalidArgumentError(absl::StrCat("thresholds: '", name, "' is not a map"));
      }
      for (const auto& kv : section.second) {
        std::string key = kv.first.as<std::string>();
        auto setter = sec->second.find(key);
        if (setter == sec->second.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat("thresholds: unknown key '", name, ".", key, "'"));
        }
        try {
          setter->second(kv.second);
        } catch (const YAML::Exception& e) {
          return absl::InvalidArgumentError(
              absl::StrCat("thresholds: '", name, ".", key, "': wrong type (", e.what(), ")"));
        }
      }
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("thresholds: ", e.what()));
  }
  return t;
}

absl::StatusOr<HealthThresholds> ParseThresholdOverrides(const std::string& spec,
                                                         const HealthThresholds& base) {
  // Rewritten as YAML so the key table and its type checks stay in one place.
  std::string yaml;
  for (absl::string_view entry : absl::StrSplit(spec, ',', absl::SkipEmpty())) {
    const size_t dot = entry.find('.');
    const size_t colon = entry.find(':');
    if (dot == absl::string_view::npos || colon == absl::string_view::npos || colon < dot + 2 ||
        dot == 0 || colon + 1 == entry.size()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "threshold override '", entry, "': expected section.key:value, e.g. gpu.pcie_replay_warn:50"));
    }
    absl::StrAppend(&yaml, entry.substr(0, dot), ": {", entry.substr(dot + 1, colon - dot - 1),
                    ": ", entry.substr(colon + 1), "}\n");
  }
  HealthThresholds t = base;
  // One document per entry: a YAML map may not repeat its section key.
  for (absl::string_view doc : absl::StrSplit(yaml, '\n', absl::SkipEmpty())) {
    CMAX_ASSIGN_OR_RETURN(t, ParseThresholds(std::string(doc), t));
  }
  return t;
}

absl::StatusOr<HealthThresholds> DefaultThresholds() {
  return ParseThresholds(kThresholdsYaml, HealthThresholds{});
}

}  // namespace cmax::health
