#include "common/severity.h"

#include <utility>

namespace cmax {
namespace {

constexpr std::pair<v1::Severity, const char*> kNames[] = {
    {v1::SEVERITY_INFO, "info"},
    {v1::SEVERITY_WARN, "warn"},
    {v1::SEVERITY_FAIL, "fail"},
    {v1::SEVERITY_CRITICAL, "critical"},
};

}  // namespace

std::string SeverityName(v1::Severity severity) {
  for (const auto& [s, name] : kNames) {
    if (s == severity) return name;
  }
  return "unspecified";
}

v1::Severity ParseSeverity(std::string_view word) {
  for (const auto& [s, name] : kNames) {
    if (word == name) return s;
  }
  return v1::SEVERITY_UNSPECIFIED;
}

}  // namespace cmax
