#include "benchmarks/health/kmsg_follower.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"

namespace cmax::health {
namespace {

constexpr size_t kMaxBytesPerPoll = 4 << 20;
// A "line" without a newline this long is flushed as it is.
constexpr size_t kMaxPendingBytes = 64 << 10;

}  // namespace

absl::StatusOr<std::unique_ptr<KmsgFollower>> KmsgFollower::Start(const Sysroot& root,
                                                                  const OpenFn& open_fn) {
  std::string path;
  CMAX_ASSIGN_OR_RETURN(int fd, OpenKmsg(root, open_fn, &path));
  if (::lseek(fd, 0, SEEK_END) < 0) {
    absl::Status s = absl::InternalError(
        absl::StrCat("lseek ", path, " to its end: ", strerror(errno)));
    ::close(fd);
    return s;
  }
  return std::unique_ptr<KmsgFollower>(new KmsgFollower(fd, std::move(path)));
}

KmsgFollower::~KmsgFollower() {
  if (fd_ >= 0) ::close(fd_);
}

absl::StatusOr<std::vector<KernelLogLine>> KmsgFollower::Poll() {
  absl::Status error = ReadAvailable(fd_, path_, kMaxBytesPerPoll, &pending_, &overwritten_);
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
