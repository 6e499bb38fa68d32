#include "benchmarks/gpu_common/gemm_check.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "absl/strings/str_format.h"

namespace cmax::bench {

std::optional<GemmDtype> ParseGemmDtype(const std::string& name) {
  if (name == "bf16") return GemmDtype::kBf16;
  if (name == "fp16") return GemmDtype::kFp16;
  if (name == "fp8") return GemmDtype::kFp8;
  if (name == "tf32") return GemmDtype::kTf32;
  if (name == "fp32") return GemmDtype::kFp32;
  if (name == "fp64") return GemmDtype::kFp64;
  return std::nullopt;
}

std::string GemmDtypeName(GemmDtype dtype) {
  switch (dtype) {
    case GemmDtype::kBf16: return "bf16";
    case GemmDtype::kFp16: return "fp16";
    case GemmDtype::kFp8: return "fp8";
    case GemmDtype::kTf32: return "tf32";
    case GemmDtype::kFp32: return "fp32";
    case GemmDtype::kFp64: return "fp64";
  }
  return "unknown";
}

GemmRounding RoundingFor(GemmDtype dtype) {
  const double e8 = std::ldexp(1.0, -8), e11 = std::ldexp(1.0, -11);
  const double e10 = std::ldexp(1.0, -10), e13 = std::ldexp(1.0, -13);
  const double e23 = std::ldexp(1.0, -23), e24 = std::ldexp(1.0, -24);
  const double e52 = std::ldexp(1.0, -52), e53 = std::ldexp(1.0, -53);
  switch (dtype) {
    // bf16/fp16 inputs are exact (the reference reads the stored values);
    // products are exact in fp32; accumulation fp32 on the tensor cores
    // (truncating adds: one ulp, 2^-23); output rounded to 8 or 11 bits.
    case GemmDtype::kBf16: return {0, e23, e8};
    case GemmDtype::kFp16: return {0, e23, e11};
    // FP8 (E4M3) inputs exact, bf16 output. Hopper's FP8 tensor cores keep
    // fewer accumulator bits than fp32 between cuBLAS's promotions to fp32
    // (about 14 bits, reported by DeepSeek-V3's technical report, sec. 3.3.2),
    // so accumulation is taken as 2^-13.
    case GemmDtype::kFp8: return {0, e13, e8};
    // TF32 rounds (or truncates) fp32 inputs to a 10-bit mantissa.
    case GemmDtype::kTf32: return {e10, e23, e24};
    case GemmDtype::kFp32: return {0, e23, e24};
    case GemmDtype::kFp64: return {0, e52, e53};
  }
  return {};
}

double AllowedError(GemmDtype dtype, int64_t k, const GemmSample& s,
                    const GemmReduction& reduction) {
  GemmRounding r = RoundingFor(dtype);
  double kk = static_cast<double>(std::max<int64_t>(k, 1));
  double split = 0;
  if (reduction.in_output_type && reduction.split_k > 1) {
    split = 2.0 * reduction.split_k * r.u_out * s.scale;
  }
  return 2 * r.u_out * std::fabs(s.ref) + 4 * r.u_in * s.scale +
         16 * r.u_acc * std::sqrt(kk) * s.scale + split + 1e-300;
}

GemmVerdict CheckGemmSamples(GemmDtype dtype, int64_t k, const std::vector<GemmSample>& samples,
                             const GemmReduction& reduction) {
  GemmVerdict v;
  for (const auto& s : samples) {
    ++v.checked;
    double allowed = AllowedError(dtype, k, s, reduction);
    double err = std::fabs(s.got - s.ref);
    double ratio = std::isfinite(s.got) && std::isfinite(err) ? err / allowed : INFINITY;
    v.worst_ratio = std::max(v.worst_ratio, ratio);
    if (!(ratio <= 1.0)) {
      ++v.wrong;
      if (!v.first_wrong) {
        v.first_wrong = s;
        v.first_wrong_allowed = allowed;
      }
    }
  }
  return v;
}

std::string GemmVerdict::Describe() const {
  if (checked == 0) return "no element checked";
  if (!first_wrong) {
    return absl::StrFormat("%d sampled elements within tolerance (worst %.3g of allowed)",
                           checked, worst_ratio);
  }
  const GemmSample& s = *first_wrong;
  return absl::StrFormat(
      "%d of %d sampled elements wrong; first: C[%d,%d] = %.9g but the reference is %.9g "
      "(|error| %.3g > allowed %.3g)",
      wrong, checked, s.i, s.j, s.got, s.ref, std::fabs(s.got - s.ref), first_wrong_allowed);
}

std::vector<std::pair<int64_t, int64_t>> PickSamplePositions(int64_t m, int64_t n, int count,
                                                             uint64_t seed) {
  std::vector<std::pair<int64_t, int64_t>> out;
  if (m <= 0 || n <= 0 || count <= 0) return out;
  const int64_t total = m * n;
  const int64_t want = std::min<int64_t>(count, total);
  std::set<int64_t> seen;
  auto add = [&](int64_t idx) {
    if (static_cast<int64_t>(out.size()) < want && seen.insert(idx).second) {
      out.emplace_back(idx / n, idx % n);
    }
  };
  add(0);
  add(total - 1);
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> pick(0, total - 1);
  while (static_cast<int64_t>(out.size()) < want) add(pick(rng));
  return out;
}

}  // namespace cmax::bench
