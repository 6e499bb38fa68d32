#include "agent/plan_paths.h"

#include <optional>

#include "absl/strings/match.h"
#include "common/allowed_files.h"
#include "common/status_macros.h"

namespace cmax::agent {

absl::Status ValidatePlanPaths(const v1::TaskAssignment& a,
                               const std::vector<std::string>& allow_read,
                               const std::vector<std::string>& storage_roots) {
  // (suite, flag) pairs whose value is a file the suite reads.
  struct ReadFlag {
    const char* suite;
    const char* flag;
  };
  static const ReadFlag kReads[] = {{"health", "thresholds"}, {"audit", "advisories"}};
  for (const std::string& arg : a.args()) {
    for (const ReadFlag& r : kReads) {
      const std::string prefix = std::string("--") + r.flag + "=";
      if (a.suite() != r.suite || !absl::StartsWith(arg, prefix)) continue;
      CMAX_RETURN_IF_ERROR(CheckPlanFile(r.flag, arg.substr(prefix.size()),
                                         std::optional<std::vector<std::string>>(allow_read))
                               .status());
    }
    if (a.suite() == "storage" && absl::StartsWith(arg, "--path=")) {
      CMAX_RETURN_IF_ERROR(
          CheckStorageDir(arg.substr(7), std::optional<std::vector<std::string>>(storage_roots),
                          /*create=*/false)
              .status());
    }
  }
  return absl::OkStatus();
}

}  // namespace cmax::agent
