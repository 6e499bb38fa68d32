#include "agent/plan_paths.h"

#include <optional>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/allowed_files.h"
#include "common/status_macros.h"
#include "common/suite_catalog.h"

namespace cmax::agent {

absl::Status ValidatePlanPaths(const v1::TaskAssignment& a,
                               const std::vector<std::string>& allow_read,
                               const std::vector<std::string>& storage_roots) {
  // The suite's declaration says which parameters are paths and what the
  // suite does with each (ParamSpec::path_use).
  const SuiteInfo* suite = FindSuite(a.suite());
  if (suite == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat("unknown suite '", a.suite(), "'"));
  }
  for (const std::string& arg : a.args()) {
    for (const ParamSpec& p : suite->params) {
      if (p.type != ParamType::kPath) continue;
      const std::string prefix = absl::StrCat("--", p.name, "=");
      if (!absl::StartsWith(arg, prefix)) continue;
      const std::string path = arg.substr(prefix.size());
      switch (p.path_use) {
        case ParamSpec::PathUse::kReadsFile:
          CMAX_RETURN_IF_ERROR(
              CheckPlanFile(p.name, path, std::optional<std::vector<std::string>>(allow_read))
                  .status());
          break;
        case ParamSpec::PathUse::kStorageDir:
          CMAX_RETURN_IF_ERROR(CheckStorageDir(path,
                                               std::optional<std::vector<std::string>>(
                                                   storage_roots),
                                               /*create=*/false)
                                   .status());
          break;
        case ParamSpec::PathUse::kNone:
          return absl::InvalidArgumentError(
              absl::StrCat("suite '", a.suite(), "': --", p.name,
                           " is a path whose use its declaration does not say; refused"));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace cmax::agent
