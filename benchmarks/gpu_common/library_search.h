// Finding a CUDA library that cmax-bench-cuda loads at run time (cuBLASLt,
// NCCL) on a node it was copied to: the places a GPU node keeps them, in the
// order they are tried, and the message that names them all when none has it.
//
// Order (first hit wins):
//   1. the dynamic loader's own search (dlopen of the bare name):
//      LD_LIBRARY_PATH, the binary's run path ($ORIGIN/../lib in the bundle),
//      /etc/ld.so.cache;
//   2. the CUDA toolkit's directories: $CUDA_HOME/lib64, /usr/local/cuda/lib64,
//      /usr/local/cuda/lib (NCCL in NVIDIA's CUDA 13 containers),
//      /usr/local/cuda/targets/<arch>-linux/lib, /usr/lib/<triple>;
//   3. pip wheels: site-packages/nvidia/*/lib (nvidia-cublas-cu12 puts
//      libcublasLt in nvidia/cublas/lib, the CUDA 13 wheels in nvidia/cu13/lib,
//      nvidia-nccl-cu12 in nvidia/nccl/lib) of every python3 on PATH (its
//      prefix's lib/python3.*/{site,dist}-packages, also when python3 is a
//      virtual environment's link), and ~/.local/lib/python3.*/site-packages.
// CMAX_CUDA_LIBRARY_PATH (colon-separated directories), when set, replaces
// all three: only those directories are tried (an operator pinning one
// cuBLASLt or NCCL; tests hiding them).
// Nothing is run to find them (no python3 subprocess): the directories are
// globbed under `root`, so tests run it against fixture trees.
#ifndef CMAX_BENCHMARKS_GPU_COMMON_LIBRARY_SEARCH_H_
#define CMAX_BENCHMARKS_GPU_COMMON_LIBRARY_SEARCH_H_

#include <dlfcn.h>

#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

namespace cmax::bench {

struct LibrarySearchEnv {
  std::string root = "/";        // filesystem root the directories are looked up under
  std::string ld_library_path;   // $LD_LIBRARY_PATH
  std::string path;              // $PATH
  std::string home;              // $HOME
  std::string cuda_home;         // $CUDA_HOME
  std::string only;              // $CMAX_CUDA_LIBRARY_PATH: when set, the only directories
};

// The environment of this process (root "/").
LibrarySearchEnv LibrarySearchEnvFromProcess();

// Steps 2 and 3 above (or the entries of `only` when it is set): existing directories (paths as seen on the node, not
// prefixed with root), without duplicates, in search order.
std::vector<std::string> LibrarySearchDirs(const LibrarySearchEnv& env);

// The first of root + dir + "/" + name that exists, for the dirs in order and
// each name in order within a dir; "" when none does. The returned path is
// the node's path (without root).
std::string FindLibraryFile(const LibrarySearchEnv& env, const std::vector<std::string>& dirs,
                            const std::vector<std::string>& names);

// "looked in: the dynamic loader's path (LD_LIBRARY_PATH=..., ld.so.cache),
// /usr/local/cuda/lib64, ..., pip wheels (nvidia/*/lib under ...)": what a
// not-found message says.
std::string DescribeSearch(const LibrarySearchEnv& env, const std::vector<std::string>& dirs);

struct LoadedLibrary {
  void* handle = nullptr;
  std::string path;  // what was opened ("libnccl.so.2" when the loader found it)
};

// dlopen(RTLD_NOW | RTLD_LOCAL) of the first of `names` found in the order
// above. NOT_FOUND naming every place looked in (and the last dlerror) when
// none loads; `what` ("cuBLASLt") starts the message.
absl::StatusOr<LoadedLibrary> LoadCudaLibrary(const std::string& what,
                                              const std::vector<std::string>& names);

// dlsym of `name` in `lib` into `*out`; FAILED_PRECONDITION "<name> is missing
// from <path> (<hint>)" when the library lacks it (an older release).
template <typename F>
absl::Status ResolveSymbol(const LoadedLibrary& lib, const char* name, const std::string& hint,
                           F* out) {
  *out = reinterpret_cast<F>(dlsym(lib.handle, name));
  if (*out != nullptr) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat(name, " is missing from ", lib.path, " (", hint, ")"));
}

// A library loaded at most once per process (cuBLASLt, NCCL): the first
// Load runs `load`, which returns the opened path or why not; every call
// returns that first result. Thread-safe.
class LoadOnce {
 public:
  absl::Status Load(const std::function<absl::StatusOr<std::string>()>& load) {
    std::call_once(once_, [&] {
      absl::StatusOr<std::string> path = load();
      status_ = path.status();
      if (path.ok()) path_ = *std::move(path);
    });
    return status_;
  }
  // The opened path; empty before a successful Load.
  const std::string& path() const { return path_; }

 private:
  std::once_flag once_;
  absl::Status status_;
  std::string path_;
};

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_GPU_COMMON_LIBRARY_SEARCH_H_
