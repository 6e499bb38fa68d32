#include "benchmarks/gpu_common/library_search.h"

#include <dlfcn.h>
#include <glob.h>
#include <link.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace cmax::bench {
namespace {

#if defined(__aarch64__)
constexpr const char* kTriple = "aarch64-linux-gnu";
constexpr const char* kCudaTarget = "sbsa-linux";
#else
constexpr const char* kTriple = "x86_64-linux-gnu";
constexpr const char* kCudaTarget = "x86_64-linux";
#endif

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string Under(const LibrarySearchEnv& env, const std::string& path) {
  std::string root = env.root;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  if (root == "/" || root.empty()) return path;
  return root + path;
}

bool IsDir(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

bool Exists(const std::string& p) {
  struct stat st;
  return stat(p.c_str(), &st) == 0;
}

// Node paths matching `pattern` (a node path with glob characters), sorted.
std::vector<std::string> Glob(const LibrarySearchEnv& env, const std::string& pattern) {
  std::vector<std::string> out;
  const std::string full = Under(env, pattern);
  glob_t g;
  if (glob(full.c_str(), GLOB_NOSORT, nullptr, &g) == 0) {
    const std::string prefix = Under(env, "");
    for (size_t i = 0; i < g.gl_pathc; ++i) {
      std::string p = g.gl_pathv[i];
      if (!prefix.empty() && p.rfind(prefix, 0) == 0) p = p.substr(prefix.size());
      out.push_back(p);
    }
  }
  globfree(&g);
  std::sort(out.begin(), out.end());
  return out;
}

// The file the loader opened for `h` (it resolved a bare name itself).
std::string OpenedPath(void* h, const std::string& fallback) {
  struct link_map* map = nullptr;
  if (dlinfo(h, RTLD_DI_LINKMAP, &map) == 0 && map != nullptr && map->l_name != nullptr &&
      map->l_name[0] != '\0') {
    return map->l_name;
  }
  return fallback;
}

std::string Parent(const std::string& p) {
  auto slash = p.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return p.substr(0, slash);
}

// The prefixes of the python3 interpreters on PATH: dir/.. of each
// dir/python3, and of the file it links to (a venv's python3 is a link to the
// system one, but its site-packages are in the venv).
std::vector<std::string> PythonPrefixes(const LibrarySearchEnv& env) {
  std::vector<std::string> prefixes;
  for (absl::string_view d : absl::StrSplit(env.path, ':', absl::SkipEmpty())) {
    const std::string dir(d);
    const std::string py = dir + "/python3";
    if (!Exists(Under(env, py))) continue;
    prefixes.push_back(Parent(dir));
    char buf[PATH_MAX];
    if (realpath(Under(env, py).c_str(), buf) != nullptr) {
      std::string real = buf;
      const std::string root_prefix = Under(env, "");
      if (!root_prefix.empty() && real.rfind(root_prefix, 0) == 0) {
        real = real.substr(root_prefix.size());
      }
      prefixes.push_back(Parent(Parent(real)));
    }
  }
  return prefixes;
}

}  // namespace

LibrarySearchEnv LibrarySearchEnvFromProcess() {
  LibrarySearchEnv env;
  env.ld_library_path = Env("LD_LIBRARY_PATH");
  env.path = Env("PATH");
  env.home = Env("HOME");
  env.cuda_home = Env("CUDA_HOME");
  env.only = Env("CMAX_CUDA_LIBRARY_PATH");
  return env;
}

std::vector<std::string> LibrarySearchDirs(const LibrarySearchEnv& env) {
  std::vector<std::string> candidates;
  if (!env.only.empty()) {
    std::vector<std::string> out;
    std::set<std::string> seen;
    for (absl::string_view d : absl::StrSplit(env.only, ':', absl::SkipEmpty())) {
      const std::string dir(d);
      if (IsDir(Under(env, dir)) && seen.insert(dir).second) out.push_back(dir);
    }
    return out;
  }
  if (!env.cuda_home.empty()) {
    candidates.push_back(env.cuda_home + "/lib64");
    candidates.push_back(env.cuda_home + "/lib");
  }
  candidates.push_back("/usr/local/cuda/lib64");
  candidates.push_back("/usr/local/cuda/lib");
  candidates.push_back(absl::StrCat("/usr/local/cuda/targets/", kCudaTarget, "/lib"));
  for (const auto& d : Glob(env, "/usr/local/cuda-*/lib64")) candidates.push_back(d);
  candidates.push_back(absl::StrCat("/usr/lib/", kTriple));
  candidates.push_back("/usr/lib64");
  // pip wheels.
  std::vector<std::string> site_dirs;
  for (const auto& prefix : PythonPrefixes(env)) {
    const std::string p = prefix == "/" ? "" : prefix;
    for (const char* kind : {"site-packages", "dist-packages"}) {
      for (const auto& s : Glob(env, absl::StrCat(p, "/lib/python3*/", kind))) {
        site_dirs.push_back(s);
      }
      for (const auto& s : Glob(env, absl::StrCat(p, "/local/lib/python3*/", kind))) {
        site_dirs.push_back(s);
      }
    }
  }
  if (!env.home.empty()) {
    for (const auto& s : Glob(env, env.home + "/.local/lib/python3*/site-packages")) {
      site_dirs.push_back(s);
    }
  }
  for (const auto& s : site_dirs) {
    for (const auto& d : Glob(env, s + "/nvidia/*/lib")) candidates.push_back(d);
  }
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& c : candidates) {
    if (IsDir(Under(env, c)) && seen.insert(c).second) out.push_back(c);
  }
  return out;
}

std::string FindLibraryFile(const LibrarySearchEnv& env, const std::vector<std::string>& dirs,
                            const std::vector<std::string>& names) {
  for (const auto& d : dirs) {
    for (const auto& n : names) {
      const std::string p = d + "/" + n;
      if (Exists(Under(env, p))) return p;
    }
  }
  return "";
}

std::string DescribeSearch(const LibrarySearchEnv& env, const std::vector<std::string>& dirs) {
  if (!env.only.empty()) {
    return absl::StrCat("looked only in CMAX_CUDA_LIBRARY_PATH=", env.only,
                        dirs.empty() ? " (none of its directories exists)" : "");
  }
  std::string s = absl::StrCat(
      "looked in: the dynamic loader's path (LD_LIBRARY_PATH=",
      env.ld_library_path.empty() ? "<empty>" : env.ld_library_path,
      ", the binary's run path, /etc/ld.so.cache)");
  if (dirs.empty()) {
    absl::StrAppend(&s, "; no CUDA toolkit directory and no pip wheel nvidia/*/lib exists "
                        "(/usr/local/cuda/lib64, /usr/local/cuda/lib, site-packages of python3 "
                        "on PATH, ~/.local)");
  } else {
    absl::StrAppend(&s, ", ", absl::StrJoin(dirs, ", "));
  }
  return s;
}

absl::StatusOr<LoadedLibrary> LoadCudaLibrary(const std::string& what,
                                              const std::vector<std::string>& names) {
  std::string last_error;
  const LibrarySearchEnv env = LibrarySearchEnvFromProcess();
  if (env.only.empty()) {
    for (const auto& n : names) {
      if (void* h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        return LoadedLibrary{h, OpenedPath(h, n)};
      }
      if (const char* e = dlerror()) last_error = e;
    }
  }
  const std::vector<std::string> dirs = LibrarySearchDirs(env);
  for (const auto& d : dirs) {
    for (const auto& n : names) {
      const std::string p = d + "/" + n;
      if (!Exists(p)) continue;
      if (void* h = dlopen(p.c_str(), RTLD_NOW | RTLD_LOCAL)) return LoadedLibrary{h, p};
      if (const char* e = dlerror()) last_error = e;
    }
  }
  return absl::NotFoundError(absl::StrCat(what, " (", absl::StrJoin(names, " or "),
                                          ") not found; ", DescribeSearch(env, dirs),
                                          last_error.empty() ? "" : "; last error: ",
                                          last_error));
}

}  // namespace cmax::bench
