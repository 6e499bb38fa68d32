// The daemons' flags are spelled with dashes (--data-dir), as the README and
// systemd units use them; absl flags names use underscores. This rewrites
// "--data-dir=x" to "--data_dir=x" (names only, never values) before
// absl::ParseCommandLine.
#ifndef CMAX_COMMON_FLAG_NAMES_H_
#define CMAX_COMMON_FLAG_NAMES_H_

#include <string>
#include <vector>

namespace cmax {

class DashedFlags {
 public:
  DashedFlags(int argc, char** argv);
  int argc() const { return static_cast<int>(ptrs_.size()) - 1; }
  char** argv() { return ptrs_.data(); }

 private:
  std::vector<std::string> storage_;
  std::vector<char*> ptrs_;
};

}  // namespace cmax

#endif  // CMAX_COMMON_FLAG_NAMES_H_
