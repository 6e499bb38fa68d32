// One way to replace a file's content so that a crash or a full disk never
// leaves it half written: the coordinator's scorecards, the agent's task
// files and its memory of delivered tasks.
#ifndef CMAX_COMMON_ATOMIC_FILE_H_
#define CMAX_COMMON_ATOMIC_FILE_H_

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace cmax {

// Writes `data` to PATH.tmp, fsyncs it, renames it over `path`, then fsyncs
// the directory: afterwards `path` holds the old content or the new one,
// whole, even across a power loss. On error PATH.tmp is removed and `path`
// is untouched. The status names the file and the reason (strerror); its
// code follows errno: RESOURCE_EXHAUSTED (ENOSPC, EDQUOT), PERMISSION_DENIED
// (EACCES, EPERM, EROFS), ALREADY_EXISTS (EEXIST), else INTERNAL.
absl::Status WriteFileAtomically(const std::string& path, absl::string_view data,
                                 mode_t mode = 0640);

// The status WriteFileAtomically gives for `err` on `path`.
absl::Status FileError(const std::string& path, int err);

}  // namespace cmax

#endif  // CMAX_COMMON_ATOMIC_FILE_H_
