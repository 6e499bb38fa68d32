// Helpers shared by the agent tests.
#ifndef CMAX_TESTS_AGENT_TEST_UTIL_H_
#define CMAX_TESTS_AGENT_TEST_UTIL_H_

#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace cmax::agent::testing {

// A fresh directory under /tmp, removed with the object.
class TempDir {
 public:
  TempDir() {
    char tmpl[] = "/tmp/cmax-agent-test-XXXXXX";
    path_ = mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ec);
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline void AppendFile(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::app);
  out << data;
}

inline std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in),
                     std::istreambuf_iterator<char>());
}

// Polls `done` every 20 ms until it holds or `timeout` passes.
inline bool WaitFor(const std::function<bool()>& done,
                    std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

// The pid of a process whose working directory is `dir` (0 if none).
inline int PidWithCwd(const std::string& dir) {
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename().string();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    char buf[4096];
    ssize_t n = readlink((e.path().string() + "/cwd").c_str(), buf, sizeof(buf) - 1);
    if (n > 0 && std::string(buf, n) == dir) return std::stoi(name);
  }
  return 0;
}

// NUL-separated /proc/<pid>/<file> as a list.
inline std::vector<std::string> ProcList(int pid, const std::string& file) {
  std::string data = ReadFile("/proc/" + std::to_string(pid) + "/" + file);
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i < data.size(); ++i) {
    if (data[i] == '\0') {
      out.push_back(data.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

}  // namespace cmax::agent::testing

#endif  // CMAX_TESTS_AGENT_TEST_UTIL_H_
