// A fresh directory under /tmp for a test, removed with the object, and a
// file writer with a mode: what tests of file-reading code need.
#ifndef CMAX_TESTS_SCRATCH_DIR_H_
#define CMAX_TESTS_SCRATCH_DIR_H_

#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace cmax::testing {

struct ScratchDir {
  ScratchDir() {
    char t[] = "/tmp/cmax-test-XXXXXX";
    path = mkdtemp(t);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string path;
};

// Writes `data` to `path` (created or truncated) and sets its mode.
inline void WriteFileWithMode(const std::string& path, const std::string& data, mode_t mode) {
  std::ofstream(path) << data;
  chmod(path.c_str(), mode);
}

}  // namespace cmax::testing

#endif  // CMAX_TESTS_SCRATCH_DIR_H_
