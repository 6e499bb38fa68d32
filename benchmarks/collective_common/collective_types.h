// Collective operations, element types, buffer shapes and bandwidth, with
// nccl-tests' definitions so cmax's figures compare with theirs. Host-only:
// shared by the host suite (gloo, mpi) and the NCCL suite in
// cmax-bench-cuda.
//
// Sources: NVIDIA/nccl-tests doc/PERFORMANCE.md (algbw = S/t, busbw factors)
// and src/*.cu (getCollByteCount, getBw): for a sweep size of `bytes` and
// n ranks, count = bytes / sizeof(T) and
//   op              send      recv      param (per call)  bytes in algbw  busbw factor
//   all_reduce      count     count     count             count*T         2(n-1)/n
//   all_gather      count/n   n*(c/n)   count/n           param*T*n       (n-1)/n
//   reduce_scatter  n*(c/n)   count/n   count/n           param*T*n       (n-1)/n
//   alltoall        n*(c/n)   n*(c/n)   count/n           param*T*n       (n-1)/n
//   broadcast       count     count     count             count*T         1
//   sendrecv        count     count     count             count*T         1
// The size column of the table is max(send, recv) bytes and the count column
// the per-call count (nccl-tests' Reporter::parameters).
#ifndef CMAX_BENCHMARKS_COLLECTIVE_COMMON_COLLECTIVE_TYPES_H_
#define CMAX_BENCHMARKS_COLLECTIVE_COMMON_COLLECTIVE_TYPES_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cmax::collective {

enum class DType { kInt8, kUint8, kInt32, kUint32, kInt64, kUint64, kHalf, kFloat, kDouble,
                   kBfloat16 };

// nccl-tests' type names ("int8" ... "bfloat16").
const char* DTypeName(DType t);
size_t DTypeSize(DType t);
bool IsFloating(DType t);
// Largest integer the type holds exactly (all integers 0..limit): 127 for
// int8, 2048 for half, 256 for bfloat16, 2^24 for float ...
int64_t ExactIntegerLimit(DType t);
// Relative tolerance of the element check (sums in different orders differ
// in floating point; the data below keeps sums exact, so this is a margin).
double Tolerance(DType t);
// Accepts nccl-tests' names and the usual aliases (float32, fp32, f32, fp16,
// bf16, fp64, int, char...). INVALID_ARGUMENT lists the known names.
absl::StatusOr<DType> ParseDType(const std::string& name);

enum class Op { kAllReduce, kAllGather, kReduceScatter, kAlltoall, kBroadcast, kSendRecv };

const char* OpName(Op op);  // "all_reduce" ...
const std::vector<Op>& AllOps();
// "all", one name, or a comma-separated list (also "allreduce" style
// spellings). INVALID_ARGUMENT names the unknown op.
absl::StatusOr<std::vector<Op>> ParseOps(const std::string& text);
bool IsReduction(Op op);  // all_reduce, reduce_scatter
// Whether an in-place variant exists for the op in cmax (alltoall and
// sendrecv run out-of-place only: their in-place forms are not defined by
// every backend; the table shows N/A).
bool HasInPlace(Op op);
// nccl-tests prints -1 for ops without a root.
int RootOf(Op op);

// Elements for one call of `op` at sweep size `bytes` with `nranks` ranks.
struct Shape {
  size_t send_count = 0;   // elements in the send buffer
  size_t recv_count = 0;   // elements in the receive buffer
  size_t param_count = 0;  // the count passed to the collective
  // In-place: the input starts at buffer + send_inplace_offset*rank and the
  // output at buffer + recv_inplace_offset*rank (elements), one buffer of
  // max(send_count, recv_count) elements.
  size_t send_inplace_offset = 0;
  size_t recv_inplace_offset = 0;
  size_t elem_size = 0;
  size_t size_bytes() const;  // the table's size: max(send, recv) * elem_size
};
Shape ShapeFor(Op op, size_t bytes, size_t elem_size, int nranks);

struct Bandwidth {
  double algbw_gbps = 0;  // GB/s, 1 GB = 1e9 B
  double busbw_gbps = 0;
};
double BusFactor(Op op, int nranks);
// Whether bus bandwidth is a figure for `op` with `nranks` ranks: false for
// all_reduce, all_gather, reduce_scatter and alltoall with one rank, where
// the factor ((n-1)/n) is 0 and no byte moves between ranks. Such a busbw
// is recorded as not measured, never as 0 (runner.h).
bool BusBwDefined(Op op, int nranks);
// From the per-call count, the element size, the rank count and the time
// of one call in seconds (nccl-tests' getBw).
Bandwidth ComputeBandwidth(Op op, const Shape& shape, int nranks, double seconds);

// Sizes min, min*f, min*f^2, ... <= max (f >= 2); min alone when min == max.
// INVALID_ARGUMENT when min > max, min == 0 or factor < 2.
absl::StatusOr<std::vector<size_t>> SizeSweep(size_t min_bytes, size_t max_bytes, int64_t factor);

}  // namespace cmax::collective

#endif  // CMAX_BENCHMARKS_COLLECTIVE_COMMON_COLLECTIVE_TYPES_H_
