// The storage suite's own directory under --path, and its safe removal.
//
// The suite writes only inside <base>/cmax-storage-<node>-<pid>/. The
// directory is created with mkdir (never reused by accident), checked with
// lstat (a real directory, not a symbolic link) and realpath (directly inside
// the resolved base). Removal walks the tree with openat/unlinkat and
// O_NOFOLLOW, so a symbolic link planted inside is removed as a link and its
// target is never touched.
#ifndef CMAX_BENCHMARKS_STORAGE_WORK_DIR_H_
#define CMAX_BENCHMARKS_STORAGE_WORK_DIR_H_

#include <string>

#include "absl/status/statusor.h"

namespace cmax::storage {

inline constexpr char kWorkDirPrefix[] = "cmax-storage-";

// The resolved (realpath) --path. FAILED_PRECONDITION, with the path and the
// reason, when it does not exist, is not a directory or is not writable, is
// a system directory, or (CMAX_STORAGE_ROOTS set, i.e. run by the agent)
// lies outside the agent's storage roots; a missing directory under a root
// is created (CheckStorageDir in common/allowed_files.h).
absl::StatusOr<std::string> ResolveBase(const std::string& path);

// Creates <base>/cmax-storage-<node>-<pid> (mode 0700) and checks it.
// `node` is reduced to [A-Za-z0-9._-]. FAILED_PRECONDITION with the reason
// (a read-only or pseudo file system, permissions).
absl::StatusOr<std::string> CreateWorkDir(const std::string& base, const std::string& node);

// Checks a directory given for reuse (--reuse, --shard-from): it must be a
// real directory (not a symlink) named cmax-storage-* directly inside `base`.
// Returns its resolved path.
absl::StatusOr<std::string> CheckOwnDir(const std::string& base, const std::string& dir);

// FAILED_PRECONDITION naming the first symbolic link found anywhere under
// `dir` (fio would follow it out of the directory).
absl::Status CheckNoSymlinks(const std::string& dir);

// Removes `dir` and everything in it without following symbolic links.
absl::Status RemoveTree(const std::string& dir);

// The node name from a work directory name "cmax-storage-<node>-<pid>",
// empty when the name does not have that form.
std::string NodeOfWorkDir(const std::string& dir_name);

}  // namespace cmax::storage

#endif  // CMAX_BENCHMARKS_STORAGE_WORK_DIR_H_
