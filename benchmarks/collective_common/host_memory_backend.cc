#include "benchmarks/collective_common/host_memory_backend.h"

#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace cmax::collective {

absl::StatusOr<void*> HostMemoryBackend::Allocate(size_t bytes) {
  void* p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (p == nullptr) return absl::ResourceExhaustedError(absl::StrCat("cannot allocate ", bytes));
  return p;
}

void HostMemoryBackend::Free(void* buffer) { std::free(buffer); }

absl::Status HostMemoryBackend::Upload(void* dst, const void* host, size_t bytes) {
  std::memcpy(dst, host, bytes);
  return absl::OkStatus();
}

absl::Status HostMemoryBackend::Download(void* host, const void* src, size_t bytes) {
  std::memcpy(host, src, bytes);
  return absl::OkStatus();
}

}  // namespace cmax::collective
