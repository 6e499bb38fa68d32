#include "benchmarks/health/kmsg_follower.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace cmax::health {
namespace {

// One /dev/kmsg read() returns one whole record or fails with EINVAL when the
// buffer is too small; records are at most about 1 KiB of text plus the
// dictionary, so 16 KiB always holds one.
constexpr size_t kReadBytes = 16384;
constexpr size_t kMaxBytesPerPoll = 4 << 20;
// A "line" without a newline this long is flushed as it is.
constexpr size_t kMaxPendingBytes = 64 << 10;

absl::Status ErrnoStatus(int e, const std::string& what) {
  std::string msg = absl::StrCat(what, ": ", strerror(e));
  if (e == EPERM || e == EACCES) {
    return absl::PermissionDeniedError(
        absl::StrCat(msg, " (kernel.dmesg_restrict=1 allows only privileged readers)"));
  }
  if (e == ENOENT || e == ENOTDIR) return absl::NotFoundError(msg);
  return absl::InternalError(msg);
}

}  // namespace

absl::StatusOr<std::unique_ptr<KmsgFollower>> KmsgFollower::Start(const Sysroot& root,
                                                                  const OpenFn& open_fn) {
  std::string path = root.Path("/dev/kmsg");
  const int flags = O_RDONLY | O_NONBLOCK | O_CLOEXEC;
  int fd = open_fn ? open_fn(path.c_str(), flags) : ::open(path.c_str(), flags);
  if (fd < 0) return ErrnoStatus(errno, absl::StrCat("open ", path));
  if (::lseek(fd, 0, SEEK_END) < 0) {
    int e = errno;
    ::close(fd);
    return ErrnoStatus(e, absl::StrCat("lseek ", path, " to its end"));
  }
  return std::unique_ptr<KmsgFollower>(new KmsgFollower(fd, std::move(path)));
}

KmsgFollower::~KmsgFollower() {
  if (fd_ >= 0) ::close(fd_);
}

absl::StatusOr<std::vector<KernelLogLine>> KmsgFollower::Poll() {
  std::string buf(kReadBytes, '\0');
  size_t total = 0;
  absl::Status error;
  while (total < kMaxBytesPerPoll) {
    ssize_t n = ::read(fd_, buf.data(), buf.size());
    if (n > 0) {
      pending_.append(buf.data(), static_cast<size_t>(n));
      total += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) break;  // end of a regular file
    const int e = errno;
    if (e == EAGAIN || e == EWOULDBLOCK) break;
    if (e == EINTR) continue;
    if (e == EPIPE) {
      ++overwritten_;
      continue;
    }
    error = ErrnoStatus(e, absl::StrCat("read ", path_));
    break;
  }
  std::vector<KernelLogLine> lines;
  size_t done = pending_.rfind('\n');
  if (done == std::string::npos && pending_.size() >= kMaxPendingBytes)
    done = pending_.size();
  if (done != std::string::npos) {
    for (absl::string_view line :
         absl::StrSplit(absl::string_view(pending_).substr(0, done), '\n')) {
      if (auto parsed = ParseKmsgRecord(line)) lines.push_back(std::move(*parsed));
    }
    pending_.erase(0, done == pending_.size() ? done : done + 1);
  }
  if (!error.ok() && lines.empty()) return error;
  return lines;
}

}  // namespace cmax::health
