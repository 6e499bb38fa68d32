#include "common/owned_dir.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/atomic_file.h"
#include "common/secrets.h"

namespace cmax {

absl::Status EnsureOwnedDir(const std::string& path, const std::string& what) {
  if (mkdir(path.c_str(), 0750) != 0 && errno != EEXIST) {
    absl::Status s = FileError(path, errno);
    return absl::Status(s.code(), absl::StrCat("cannot create ", what, " ", s.message()));
  }
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) {
    absl::Status s = FileError(path, errno);
    return absl::Status(s.code(), absl::StrCat(what, " ", s.message()));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrCat(what, " ", path, " is not a directory"));
  }
  const uid_t me = geteuid();
  if (st.st_uid != me && st.st_uid != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s %s is owned by uid %d (this process runs as uid %d): use a folder of its own, "
        "or chown it",
        what, path, st.st_uid, me));
  }
  const mode_t mode = st.st_mode & 07777;
  if ((mode & S_IWOTH) != 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s %s is writable by others (mode %04o): chmod o-w it, or use a folder of its own",
        what, path, mode));
  }
  if ((mode & S_IWGRP) != 0 && !ProcessInGroup(st.st_gid)) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s %s is writable by group %d, which this process is not in (mode %04o): chmod g-w "
        "it, or use a folder of its own",
        what, path, st.st_gid, mode));
  }
  return absl::OkStatus();
}

}  // namespace cmax
