// Follows the kernel log while something runs (the GPU burn-in's Xid watch):
// only records written after Start() count.
//
// <root>/dev/kmsg is opened non-blocking and positioned at its end
// (lseek(fd, 0, SEEK_END): on the character device that is "after the last
// record", Linux Documentation/ABI/testing/dev-kmsg; on a regular file under
// a fixture root it is the file's current size). Poll() returns the records
// written since the last call: on the device one record per read(), EAGAIN
// meaning nothing more and EPIPE meaning records were overwritten before we
// read them (counted in overwritten(), reading goes on); on a regular file
// whole lines, a partial last line waiting for its newline.
//
// A refusal (EPERM/EACCES, kernel.dmesg_restrict=1) is PERMISSION_DENIED:
// the caller reports Xids as "not measured", never as "no Xids".
#ifndef CMAX_BENCHMARKS_HEALTH_KMSG_FOLLOWER_H_
#define CMAX_BENCHMARKS_HEALTH_KMSG_FOLLOWER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/health/kernel_log.h"
#include "common/sysroot.h"

namespace cmax::health {

class KmsgFollower {
 public:
  // Seam for tests: opens like open(2) (an fd, or -1 with errno set).
  using OpenFn = std::function<int(const char* path, int flags)>;

  // Opens <root>/dev/kmsg at its end. PERMISSION_DENIED on a refusal,
  // NOT_FOUND when absent, INTERNAL otherwise; messages name the path.
  static absl::StatusOr<std::unique_ptr<KmsgFollower>> Start(const Sysroot& root,
                                                             const OpenFn& open_fn = {});
  ~KmsgFollower();
  KmsgFollower(const KmsgFollower&) = delete;
  KmsgFollower& operator=(const KmsgFollower&) = delete;

  // The records written since Start() or the last Poll() (dictionary and
  // malformed lines dropped). Reads at most a few MiB per call. Errors:
  // PERMISSION_DENIED or INTERNAL with the path; the follower stays usable.
  absl::StatusOr<std::vector<KernelLogLine>> Poll();

  // Times the kernel overwrote records before they were read (EPIPE).
  uint64_t overwritten() const { return overwritten_; }
  const std::string& path() const { return path_; }

 private:
  KmsgFollower(int fd, std::string path) : fd_(fd), path_(std::move(path)) {}

  int fd_;
  std::string path_;
  std::string pending_;  // bytes after the last newline
  uint64_t overwritten_ = 0;
};

}  // namespace cmax::health

#endif  // CMAX_BENCHMARKS_HEALTH_KMSG_FOLLOWER_H_
