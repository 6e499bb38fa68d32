#include "common/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace cmax {

absl::Status FileError(const std::string& path, int err) {
  std::string text = absl::StrCat(path, ": ", strerror(err));
  if (err == ENOSPC || err == EDQUOT) return absl::ResourceExhaustedError(text);
  if (err == EACCES || err == EPERM || err == EROFS) return absl::PermissionDeniedError(text);
  if (err == EEXIST) return absl::AlreadyExistsError(text);
  return absl::InternalError(text);
}

absl::Status WriteFileAtomically(const std::string& path, absl::string_view data, mode_t mode) {
  const std::string tmp = path + ".tmp";
  const int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return FileError(tmp, errno);
  auto fail = [&](int err, bool opened) {
    if (opened) close(fd);
    unlink(tmp.c_str());
    return FileError(tmp, err);
  };
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t w = write(fd, data.data() + done, data.size() - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      return fail(errno, true);
    }
    done += static_cast<size_t>(w);
  }
  if (fsync(fd) != 0) return fail(errno, true);
  if (close(fd) != 0) return fail(errno, false);
  if (rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(tmp.c_str());
    return FileError(path, err);
  }
  // The rename itself lives in the directory: make it durable too.
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  const int dfd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    const int rc = fsync(dfd);
    const int err = errno;
    close(dfd);
    if (rc != 0 && err != EINVAL) return FileError(dir, err);  // EINVAL: fs without dir fsync
  }
  return absl::OkStatus();
}

}  // namespace cmax
