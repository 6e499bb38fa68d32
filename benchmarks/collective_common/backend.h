// What the collective runner (runner.h) needs from a communication library:
// gloo and Open MPI on the host (benchmarks/collective/), NCCL on GPUs
// (benchmarks/collective/cuda/collective_nccl.cc). A backend is created connected (its
// group formed) and is used by one thread.
#ifndef CMAX_BENCHMARKS_COLLECTIVE_COMMON_BACKEND_H_
#define CMAX_BENCHMARKS_COLLECTIVE_COMMON_BACKEND_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "benchmarks/collective_common/collective_types.h"

namespace cmax::collective {

class Backend {
 public:
  virtual ~Backend() = default;

  virtual std::string name() const = 0;  // "gloo", "mpi", "nccl"
  virtual int rank() const = 0;
  virtual int world_size() const = 0;
  // OK, or UNIMPLEMENTED saying why the backend cannot run `type`.
  virtual absl::Status CheckDType(DType type) const = 0;

  // Buffers in the backend's memory (host or device); Upload/Download move
  // bytes between them and host memory.
  virtual absl::StatusOr<void*> Allocate(size_t bytes) = 0;
  virtual void Free(void* buffer) = 0;
  virtual absl::Status Upload(void* dst, const void* host, size_t bytes) = 0;
  virtual absl::Status Download(void* host, const void* src, size_t bytes) = 0;

  // Starts one collective. Out-of-place: `send` holds shape.send_count and
  // `recv` shape.recv_count elements. In-place: both point into one buffer
  // at the offsets of Shape (send_inplace_offset, recv_inplace_offset times
  // the rank). May return before the data moved (GPU streams).
  virtual absl::Status Run(Op op, DType type, const void* send, void* recv, const Shape& shape,
                           bool in_place) = 0;
  // Waits until every started collective has completed.
  virtual absl::Status Synchronize() = 0;
  virtual absl::Status Barrier() = 0;

  // Where an in-place output starts, in elements from the buffer's start.
  // NCCL's convention by default; MPI's in-place reduce-scatter leaves it at
  // the front.
  virtual size_t InPlaceOutputOffset(Op /*op*/, const Shape& shape) const {
    return shape.recv_inplace_offset * static_cast<size_t>(rank());
  }

  // Every rank's `values` (the same length on every rank), rank-major.
  virtual absl::StatusOr<std::vector<double>> AllGather(const std::vector<double>& values) = 0;
  // Every rank's string (short: node names), by rank.
  virtual absl::StatusOr<std::vector<std::string>> AllGatherStrings(const std::string& mine) = 0;
};

}  // namespace cmax::collective

#endif  // CMAX_BENCHMARKS_COLLECTIVE_COMMON_BACKEND_H_
