// What a plan may make a suite (running as root) read or write.
//
// A plan names files (health --thresholds, audit --advisories) and a storage
// directory (storage --path). The agent's own configuration, never the plan,
// says where those may lie: it passes CMAX_ALLOW_READ (directories whose files
// a plan may name) and CMAX_STORAGE_ROOTS (directories the storage suite may
// write under; the first is also CMAX_STORAGE_DIR, the default --path) to
// every suite it spawns, after the plan's environment, which cannot set them
// (ValidateSuiteEnv). A suite run by hand, without those variables, takes
// what its operator gives it, with the same bounded reads and the same
// refusal of system directories.
#ifndef CMAX_COMMON_ALLOWED_FILES_H_
#define CMAX_COMMON_ALLOWED_FILES_H_

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace cmax {

inline constexpr char kAllowReadEnv[] = "CMAX_ALLOW_READ";
inline constexpr char kStorageRootsEnv[] = "CMAX_STORAGE_ROOTS";
inline constexpr char kStorageDirEnv[] = "CMAX_STORAGE_DIR";
// Loopback ports beyond the exporters' own that the monitoring suite may
// scrape on this node (cmax-agent --allow-exporter-ports; comma-separated;
// benchmarks/monitoring/monitoring_declaration.cc).
inline constexpr char kExporterPortsEnv[] = "CMAX_EXPORTER_PORTS";
// Plan-given files are configuration (thresholds, advisories): small.
inline constexpr size_t kMaxPlanFileBytes = 1 << 20;

// The comma-separated directories in environment variable `name`;
// std::nullopt when it is not set (run by hand: no restriction). Set but
// empty: nothing is allowed.
std::optional<std::vector<std::string>> DirsFromEnv(const char* name);

// Reads a file a plan (or the command line) named for `flag`:
//   - it must be an absolute path; it is resolved with realpath(3), so no
//     symbolic link or ".." leads out of an allowed directory;
//   - with `allowed` set, the resolved path must lie under one of those
//     directories (themselves resolved) and be readable by others (a file
//     only root or a group may read is a secret, not configuration);
//   - it must be a regular file (not /dev/zero, a FIFO or a directory) of at
//     most `max_bytes`, and is read with a bounded read.
// Errors (INVALID_ARGUMENT, NOT_FOUND, PERMISSION_DENIED) name the flag and
// the path, never anything of the file's content.
// Not a defence against a file swapped between the checks and the read by
// someone who can already write into an allowed directory.
absl::StatusOr<std::string> ReadPlanFile(const std::string& flag, const std::string& path,
                                         const std::optional<std::vector<std::string>>& allowed,
                                         size_t max_bytes = kMaxPlanFileBytes);

// The checks of ReadPlanFile without reading (stat(2) only): the agent makes
// them before it spawns a suite. Returns the resolved path.
absl::StatusOr<std::string> CheckPlanFile(const std::string& flag, const std::string& path,
                                          const std::optional<std::vector<std::string>>& allowed,
                                          size_t max_bytes = kMaxPlanFileBytes);

// A parse error of a plan-given file, without its content (suites use it
// when CMAX_ALLOW_READ is set, i.e. when stderr reaches the coordinator): "<flag> <path>:
// not a valid <what> (line L, column C)" where the parser's message gives a
// line and column ("path:L:C:" or "line L, column C"), else without them.
std::string ParseErrorWithoutContent(const std::string& flag, const std::string& path,
                                     const std::string& what, const absl::Status& error);

// True for "/" and for directories in or under the system's own trees:
// /bin /boot /dev /etc /lib /lib32 /lib64 /libx32 /proc /run /sbin /sys /usr,
// and /var/lib unless `allowed_roots` holds it (an agent's own state dir).
bool IsSystemDirectory(const std::string& resolved,
                       const std::vector<std::string>& allowed_roots = {});

// The directory the storage suite may work in for `path` (resolved):
//   - absolute, without ".." components;
//   - with `roots` set: under one of them; a missing directory under a root
//     is created (mode 0700, one component at a time, never through a
//     symbolic link);
//   - never a system directory (IsSystemDirectory).
// FAILED_PRECONDITION with the path and the reason.
// `create` false: the checks only (the agent's, before it spawns the
// suite); a missing directory under a root is then accepted as it is.
absl::StatusOr<std::string> CheckStorageDir(const std::string& path,
                                            const std::optional<std::vector<std::string>>& roots,
                                            bool create = true);

}  // namespace cmax

#endif  // CMAX_COMMON_ALLOWED_FILES_H_
