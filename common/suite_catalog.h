// The suites cmax knows, their binaries, scopes and parameters. The
// coordinator validates a plan against it and turns params into flags; the
// agent validates every assignment against it again before it spawns
// anything: a suite not in this table, or a flag not declared for it, is never
// run. Values are checked by type, so no argument can smuggle a program,
// a library or a shell word.
#ifndef CMAX_COMMON_SUITE_CATALOG_H_
#define CMAX_COMMON_SUITE_CATALOG_H_

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cmax/v1/plan.pb.h"

namespace cmax {

enum class ParamType {
  kInt,       // decimal integer within [min, max]
  kNumber,    // decimal number within [min, max]
  kBytes,     // 4096, 64K, 1M, 2G, 1T (binary multiples)
  kEnum,      // one of `choices`
  kEnumList,  // comma-separated subset of `choices`
  kIntList,   // comma-separated integers, or "all"
  kPath,      // absolute path without "..", shell metacharacters or spaces
  kToken,     // [A-Za-z0-9_.:,+-]{1,128}
  kFlag,      // "true" or "false": passed as --name when true
};

struct ParamSpec {
  std::string name;  // plan key and flag (--name)
  ParamType type;
  std::string help;
  std::vector<std::string> choices;
  double min = 0;
  double max = 0;  // 0 and 0: unbounded
};

struct SuiteInfo {
  std::string name;
  std::string binary;      // "cmax-bench" or "cmax-bench-cuda"
  std::string category;    // the scorecard category it mainly feeds
  std::string help;
  std::vector<v1::Scope> scopes;  // allowed scopes; the first is the default
  int default_timeout_s = 600;
  bool exclusive = true;   // takes the node (GPU- or storage-heavy)
  bool takes_root = false; // accepts --root (fixture trees)
  std::vector<ParamSpec> params;
  // Suites whose backends live in different binaries (gemm: cuda in
  // cmax-bench-cuda, cpu in cmax-bench): the value of --backend -> binary.
  // Empty for most suites. Use SuiteBinary() rather than `binary` directly.
  std::map<std::string, std::string> binary_by_backend;
  // Rules across parameters that their types cannot say, for values one
  // backend's binary accepts and the other refuses (burnin: dtype fp64 on the
  // cpu backend only, threads on cpu only, gpus on cuda only). Called by
  // BuildSuiteArgs and ValidateSuiteArgs with the valid params (name ->
  // value; a flag given as "true"). OK or INVALID_ARGUMENT with the reason.
  // Null for most suites.
  std::function<absl::Status(const std::map<std::string, std::string>& params)> check;
};

// Every suite, in catalog order.
const std::vector<SuiteInfo>& SuiteCatalog();
// nullptr when unknown.
const SuiteInfo* FindSuite(const std::string& name);

// The binary that runs `suite` with these (validated) args: the entry of
// binary_by_backend for a "--backend=<value>" arg when there is one, else
// `suite.binary`. E.g. gemm with "--backend=cpu" -> "cmax-bench", gemm
// without --backend or with "--backend=cuda" -> "cmax-bench-cuda".
std::string SuiteBinary(const SuiteInfo& suite, const std::vector<std::string>& args);

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

// mpirun options a plan may set (launcher: mpirun), as plan params on every
// suite that allows scope gang; the coordinator passes them to the agent as
// suite args ("--mpirun-bind-to=core"), and the agent turns them into mpirun
// arguments instead of passing them to the suite:
//   mpirun-bind-to    --bind-to none|core|socket|numa
//   mpirun-map-by     --map-by ppr:N:OBJECT | OBJECT, then :PE=N :SPAN
//                     :OVERSUBSCRIBE :NOOVERSUBSCRIBE :NOLOCAL :DISPLAY
//   mpirun-if-include --mca btl_tcp_if_include X --mca oob_tcp_if_include X
//                     (X: interface names or IPv4 CIDRs, comma-separated)
// Nothing else reaches mpirun's command line from a plan: no option that
// loads a library, chooses a program or sets an arbitrary MCA parameter.
inline constexpr char kMpirunBindTo[] = "mpirun-bind-to";
inline constexpr char kMpirunMapBy[] = "mpirun-map-by";
inline constexpr char kMpirunIfInclude[] = "mpirun-if-include";

bool IsMpirunOption(const std::string& param_name);
// OK or INVALID_ARGUMENT naming the option and what was expected; unknown
// names are refused.
absl::Status ValidateMpirunOption(const std::string& name, const std::string& value);
// Splits validated suite args into mpirun arguments (returned) and the rest
// (`rest`, passed to the suite).
absl::StatusOr<std::vector<std::string>> MpirunOptionArgs(
    const std::vector<std::string>& suite_args, std::vector<std::string>* rest);

// Parses "64K", "1M", "2G", "4096" into bytes.
absl::StatusOr<int64_t> ParseBytes(const std::string& text);

std::string ScopeName(v1::Scope scope);

}  // namespace cmax

#endif  // CMAX_COMMON_SUITE_CATALOG_H_
