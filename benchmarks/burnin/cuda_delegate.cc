#include "benchmarks/burnin/cuda_delegate.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace cmax::bench {

std::string CudaSiblingPath() {
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) return "";
  self[n] = '\0';
  std::string dir(self);
  dir = dir.substr(0, dir.rfind('/'));
  std::string path = dir + "/cmax-bench-cuda";
  return access(path.c_str(), X_OK) == 0 ? path : "";
}

void ExecCudaSuite(const std::string& suite, int argc, char** argv,
                   const std::vector<std::string>& drop, std::string* why) {
  std::string path = CudaSiblingPath();
  if (path.empty()) {
    *why = "cmax-bench-cuda is not installed next to cmax-bench (built without CUDA?)";
    return;
  }
  std::vector<std::string> args = {"cmax-bench-cuda", suite};
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool dropped = false;
    for (const auto& d : drop) {
      std::string flag = "--" + d;
      if (a == flag) {  // "--name value"
        dropped = true;
        if (i + 1 < argc && !absl::StartsWith(argv[i + 1], "--")) ++i;
      } else if (absl::StartsWith(a, flag + "=")) {
        dropped = true;
      }
    }
    if (!dropped) args.push_back(a);
  }
  std::vector<char*> cargv;
  for (auto& a : args) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  execv(path.c_str(), cargv.data());
  *why = absl::StrCat("execv ", path, ": ", strerror(errno));
}

}  // namespace cmax::bench
