// A Backend whose buffers are host memory (gloo, Open MPI): 64-byte aligned
// allocations; Upload and Download are plain copies.
#ifndef CMAX_BENCHMARKS_COLLECTIVE_COMMON_HOST_MEMORY_BACKEND_H_
#define CMAX_BENCHMARKS_COLLECTIVE_COMMON_HOST_MEMORY_BACKEND_H_

#include "benchmarks/collective_common/backend.h"

namespace cmax::collective {

class HostMemoryBackend : public Backend {
 public:
  absl::StatusOr<void*> Allocate(size_t bytes) override;
  void Free(void* buffer) override;
  absl::Status Upload(void* dst, const void* host, size_t bytes) override;
  absl::Status Download(void* host, const void* src, size_t bytes) override;
};

}  // namespace cmax::collective

#endif  // CMAX_BENCHMARKS_COLLECTIVE_COMMON_HOST_MEMORY_BACKEND_H_
