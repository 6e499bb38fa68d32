// Verifiable data for collectives: every rank fills its input with small
// integers that depend on (rank, index, seed), so every rank can compute the
// value every element of its output must hold, and sums stay exact in every
// type (half and bfloat16 included). The check compares every element with
// a tolerance per type (collective_types.h Tolerance).
//
// What rank r holds at input index i, V(r, i) = hash(r, i, seed) % range:
//   all_reduce      in[i] = V(r, i)            out[i] = sum_j V(j, i)
//   all_gather      in[i] = V(r, i)            out[j*c + i] = V(j, i)
//   reduce_scatter  in[i] = V(r, i), i < n*c   out[i] = sum_j V(j, r*c + i)
//   alltoall        in[i] = V(r, i), i < n*c   out[j*c + i] = V(j, r*c + i)
//   broadcast       in[i] = V(r, i)            out[i] = V(root, i)
//   sendrecv        in[i] = V(r, i)            out[i] = V((r-1) mod n, i)
// (c = the per-call count; sendrecv sends to rank r+1 and receives from r-1.)
#ifndef CMAX_BENCHMARKS_COLLECTIVE_COMMON_DATA_PATTERN_H_
#define CMAX_BENCHMARKS_COLLECTIVE_COMMON_DATA_PATTERN_H_

#include <cstddef>
#include <cstdint>

#include "benchmarks/collective_common/collective_types.h"

namespace cmax::collective {

// Values are in [0, range): range = min(16, ExactIntegerLimit / nranks + 1)
// for reductions (so a sum of n of them is exact), min(16, limit + 1)
// otherwise; at least 1.
int ValueRange(Op op, DType type, int nranks);

// V(r, i) for the given seed and range.
int64_t InputValue(int rank, uint64_t index, uint64_t seed, int range);

// Writes / reads element `i` of a host buffer of `type` as a double.
void StoreValue(DType type, void* buffer, size_t i, double value);
double LoadValue(DType type, const void* buffer, size_t i);

// Writes this rank's input (shape.send_count elements) to `input`.
void FillInput(Op op, DType type, const Shape& shape, int rank, int nranks, uint64_t seed,
               void* input);
// Sets every byte of `bytes` to 0xFF (NaN for the floating types, -1 or the
// maximum for the integers), so output that was never written fails.
void Poison(void* buffer, size_t bytes);

// The value element `i` of rank `rank`'s output (shape.recv_count elements)
// must hold.
double ExpectedOutput(Op op, DType type, const Shape& shape, int rank, int nranks, uint64_t seed,
                      size_t i);

struct CheckResult {
  int64_t wrong = 0;
  int64_t first_index = -1;  // -1: none wrong
  double expected = 0;       // at first_index
  double got = 0;
};

// Checks every element of this rank's output against ExpectedOutput.
CheckResult CheckOutput(Op op, DType type, const Shape& shape, int rank, int nranks, uint64_t seed,
                        const void* output);

// Half and bfloat16 from and to float (round to nearest even), for the host
// side of the NCCL suite and the checks.
uint16_t FloatToHalf(float f);
float HalfToFloat(uint16_t h);
uint16_t FloatToBfloat16(float f);
float Bfloat16ToFloat(uint16_t b);

}  // namespace cmax::collective

#endif  // CMAX_BENCHMARKS_COLLECTIVE_COMMON_DATA_PATTERN_H_
