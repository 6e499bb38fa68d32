// Secrets read from files (bearer tokens, keys). Never log what they return.
#ifndef CMAX_COMMON_SECRETS_H_
#define CMAX_COMMON_SECRETS_H_

#include <sys/types.h>

#include <string>

#include "absl/status/statusor.h"

namespace cmax {

// Reads a token file: its content without surrounding whitespace. Errors:
// NOT_FOUND / PERMISSION_DENIED with the path, INVALID_ARGUMENT when empty or
// larger than 4 KiB. `warning` (optional) receives TokenFileModeWarning's
// note ("" when the file's mode is fine).
absl::StatusOr<std::string> ReadTokenFile(const std::string& path, std::string* warning = nullptr);

// What is wrong with a token file of mode `mode` owned by group `gid`, with
// the fix (chmod 600, or 640 root:cmax), or "" when nothing is. Wrong: any
// permission for others (mode & 007); group write (020); group read (040)
// when the group is neither this process's effective gid, nor one of its
// supplementary groups, nor the group named "cmax". So the packaged layout
// (0640 root:cmax: the coordinator runs as cmax, operators in group cmax run
// cmaxctl) and 0600 are quiet. E.g. "/etc/cmax/token (mode 0644) is
// readable by others; chmod 600 /etc/cmax/token, or chmod 640 ... and chown
// root:cmax ...".
std::string TokenFileModeWarning(const std::string& path, unsigned mode, gid_t gid);

// True when this process is in group `gid`: its effective gid or one of its
// supplementary groups.
bool ProcessInGroup(gid_t gid);

// Whole file (certificates, keys), up to 1 MiB.
absl::StatusOr<std::string> ReadSmallFile(const std::string& path);

// Compares two secrets in time that depends only on their lengths, never on
// where they first differ. False when `want` is empty.
bool SameSecret(const std::string& given, const std::string& want);

// `bytes` random bytes from getrandom(2), hex-encoded (2 * bytes characters).
absl::StatusOr<std::string> RandomHex(size_t bytes);

// An identifier that must not repeat but need not be secret (a run id's
// suffix, an agent's boot id): RandomHex(bytes); where getrandom fails (it
// does not, once the kernel's pool is initialised) the clock, the pid and a
// counter, hashed, so an id is still returned. Never use it for a secret.
std::string RandomId(size_t bytes);

}  // namespace cmax

#endif  // CMAX_COMMON_SECRETS_H_
