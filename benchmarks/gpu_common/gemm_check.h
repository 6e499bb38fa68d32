// GEMM verification shared by the host (OpenBLAS) and GPU (cuBLASLt) suites:
// data types, sampled output elements, the tolerance per data type, medians.
//
// A result is checked on sampled elements (i, j): the reference
// ref = sum_l a(i,l) * b(l,j) is recomputed in higher precision (long double
// on the host, fp64 in a device kernel) from the very values the GEMM read,
// together with the natural scale of that sum for random data,
// scale = sqrt(sum_l (a(i,l) * b(l,j))^2) (the size of |ref| for random signs).
// The allowed error is
//   2 * u_out * |ref|                 rounding of the output to its type
// + 4 * u_in  * scale                 rounding of the inputs (TF32 only)
// + 16 * u_acc * sqrt(k) * scale      accumulation in the compute type,
// so it grows with sqrt(k) relative to the scale of the result (the random-walk
// bound on k rounding errors of size u_acc * scale / sqrt(k) * sqrt(k)). A NaN
// or Inf never passes. The factors leave room for blocked summation orders and
// tensor-core accumulation without letting a wrong element through: a flipped
// sign or exponent bit, a stale or unwritten element is off by O(scale).
#ifndef CMAX_BENCHMARKS_GPU_COMMON_GEMM_CHECK_H_
#define CMAX_BENCHMARKS_GPU_COMMON_GEMM_CHECK_H_

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace cmax::bench {

enum class GemmDtype { kBf16, kFp16, kFp8, kTf32, kFp32, kFp64 };

// "bf16", "fp16", "fp8", "tf32", "fp32", "fp64"; nullopt for anything else.
std::optional<GemmDtype> ParseGemmDtype(const std::string& name);
std::string GemmDtypeName(GemmDtype dtype);

// Unit roundoffs (relative) for one data type's GEMM.
struct GemmRounding {
  double u_in = 0;   // input rounding done by the GEMM itself (TF32: 2^-11 .. 2^-10)
  double u_acc = 0;  // accumulation
  double u_out = 0;  // output type
};
GemmRounding RoundingFor(GemmDtype dtype);

// One sampled output element.
struct GemmSample {
  int64_t i = 0, j = 0;
  double got = 0;    // the GEMM's output, converted to double
  double ref = 0;    // higher-precision reference
  double scale = 0;  // sqrt(sum (a*b)^2)
};

// How the GEMM that produced the samples reduced split-K partial sums.
// With split_k > 1 and the reduction done in the output type (cuBLASLt's
// OUTPUT_TYPE and INPLACE schemes; cublas_choice.h ReducesInOutputType), each of the
// split_k partial sums is rounded to the output type before the next is
// added: the tolerance grows by split_k * 2 * u_out * scale (one output
// rounding of a partial of size up to `scale` per split). A reduction in
// the compute type adds nothing beyond the accumulation term.
struct GemmReduction {
  int split_k = 1;
  bool in_output_type = false;
};

// The tolerance described at the top of this file, widened for `reduction`.
double AllowedError(GemmDtype dtype, int64_t k, const GemmSample& s,
                    const GemmReduction& reduction = {});

struct GemmVerdict {
  int64_t checked = 0;
  int64_t wrong = 0;
  double worst_ratio = 0;           // max |got-ref| / allowed (NaN counts as infinite)
  std::optional<GemmSample> first_wrong;
  double first_wrong_allowed = 0;
  bool ok() const { return checked > 0 && wrong == 0; }
  // "C[12,40] = 3.5 but the reference is -1.25 (|error| 4.75 > allowed 0.002)".
  std::string Describe() const;
};

GemmVerdict CheckGemmSamples(GemmDtype dtype, int64_t k, const std::vector<GemmSample>& samples,
                             const GemmReduction& reduction = {});

// `count` distinct output positions (fewer when m*n is smaller), always
// including the corners (0,0) and (m-1,n-1), the rest uniformly random from
// `seed`. Deterministic for a seed.
std::vector<std::pair<int64_t, int64_t>> PickSamplePositions(int64_t m, int64_t n, int count,
                                                             uint64_t seed);

// 2*m*n*k floating-point operations.
inline double GemmFlops(int64_t m, int64_t n, int64_t k) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_GPU_COMMON_GEMM_CHECK_H_
