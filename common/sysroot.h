// Readers of /sys, /proc, /dev and /etc take a root directory so tests can run
// them against fixture trees (tests/fixtures/...). Root "/" is the real system.
#ifndef CMAX_COMMON_SYSROOT_H_
#define CMAX_COMMON_SYSROOT_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cmax {

class Sysroot {
 public:
  explicit Sysroot(std::string root = "/");

  const std::string& root() const { return root_; }
  bool is_real() const { return root_ == "/"; }
  // root + absolute path, e.g. Path("/proc/meminfo").
  std::string Path(const std::string& absolute) const;
  // Whole file; NOT_FOUND, PERMISSION_DENIED or INTERNAL with the path.
  absl::StatusOr<std::string> Read(const std::string& absolute) const;
  // The file's first line without trailing whitespace; nullopt on any error.
  std::optional<std::string> ReadLine(const std::string& absolute) const;
  bool Exists(const std::string& absolute) const;
  // Names in a directory (no "." or ".."), sorted; empty on error.
  std::vector<std::string> List(const std::string& absolute) const;

 private:
  std::string root_;
};

}  // namespace cmax

#endif  // CMAX_COMMON_SYSROOT_H_
