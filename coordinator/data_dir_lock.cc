#include "coordinator/data_dir_lock.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace cmax::coordinator {

absl::StatusOr<std::unique_ptr<DataDirLock>> DataDirLock::Acquire(const std::string& dir) {
  const std::string path = dir + "/cmax.lock";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
  if (fd < 0) {
    return absl::InternalError(absl::StrCat("cannot open ", path, ": ", strerror(errno)));
  }
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[32] = {};
    const ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
    close(fd);
    if (err != EWOULDBLOCK) {
      return absl::InternalError(absl::StrCat("cannot lock ", path, ": ", strerror(err)));
    }
    const std::string holder(absl::StripAsciiWhitespace(std::string(buf, n > 0 ? n : 0)));
    return absl::FailedPreconditionError(absl::StrCat(
        "the data directory ", dir, " is in use by another cmax-coordinator",
        holder.empty() ? "" : absl::StrCat(" (pid ", holder, ")"),
        ": one coordinator per data directory; stop that one, or give this one another "
        "--data-dir"));
  }
  const std::string pid = absl::StrCat(getpid(), "\n");
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    // The pid is only for the message of the next one: the lock holds anyway.
  }
  return std::unique_ptr<DataDirLock>(new DataDirLock(fd));
}

DataDirLock::~DataDirLock() { close(fd_); }

}  // namespace cmax::coordinator
