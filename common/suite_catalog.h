// Plan validation against the suites' declarations
// (common/suite_declaration.h, included here): the coordinator validates a
// plan against them and turns params into flags; the agent validates every
// assignment against them again before it spawns anything (a suite not in
// the catalog, or a flag not declared for it, is never run); the suite
// binaries check the values they are given the same way
// (common/suite_flags.h). Values are checked by type, so no argument can
// smuggle a program, a library or a shell word. Readers of the declarations
// alone (reports/) include suite_declaration.h instead.
#ifndef CMAX_COMMON_SUITE_CATALOG_H_
#define CMAX_COMMON_SUITE_CATALOG_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "common/suite_declaration.h"

namespace cmax {

// The rules of `backends` and `choices_by_backend` for these params, then
// `check`: OK or INVALID_ARGUMENT naming the suite, the parameter and the
// backend.
absl::Status CheckAcrossParams(const SuiteInfo& suite,
                               const std::map<std::string, std::string>& params);

// Checks one value against its spec. INVALID_ARGUMENT names the parameter,
// the value and what was expected.
absl::Status ValidateParam(const ParamSpec& spec, const std::string& value);

// Validates `params` (unknown ones are errors) and returns the suite's flags
// ("--name=value", or "--name" for flags), sorted by name. With
// `check_across` (the default) the suite's rules across parameters
// (SuiteInfo::check) apply too; false checks each value alone, for a caller
// that gives one parameter at a time and then the whole set.
absl::StatusOr<std::vector<std::string>> BuildSuiteArgs(
    const SuiteInfo& suite, const std::map<std::string, std::string>& params,
    bool check_across = true);

// Agent side: every arg must be "--name=value" or "--name" for a declared
// parameter with a valid value.
absl::Status ValidateSuiteArgs(const SuiteInfo& suite, const std::vector<std::string>& args);

// Environment a plan may set for a suite (NCCL tuning and the like); never
// loader, plugin or path variables. OK or INVALID_ARGUMENT with the reason.
absl::Status ValidateSuiteEnv(const std::string& name, const std::string& value);

// OK or INVALID_ARGUMENT naming the option and what was expected; unknown
// names are refused.
absl::Status ValidateMpirunOption(const std::string& name, const std::string& value);
// Splits validated suite args into mpirun arguments (returned) and the rest
// (`rest`, passed to the suite).
absl::StatusOr<std::vector<std::string>> MpirunOptionArgs(
    const std::vector<std::string>& suite_args, std::vector<std::string>* rest);

// Parses "64K", "1M", "2G", "4096" into bytes.
absl::StatusOr<int64_t> ParseBytes(const std::string& text);

}  // namespace cmax

#endif  // CMAX_COMMON_SUITE_CATALOG_H_
