#include "benchmarks/consistency/workloads.h"

#include <cmath>
#include <cstring>

#include "benchmarks/consistency/digest.h"

namespace cmax::consistency {
namespace {

template <typename T>
WorkloadOutput Finish(const char* name, const char* dtype, const std::vector<T>& out) {
  WorkloadOutput w;
  w.workload = name;
  w.dtype = dtype;
  Fnv1a64 h;
  h.Update(out.data(), out.size() * sizeof(T));
  w.digest = h.Hex();
  double sum = 0;
  for (const T& x : out) sum += static_cast<double>(x);
  w.value = sum;
  w.bytes = out.size() * sizeof(T);
  return w;
}

// C = A * B, n x n, i-j-k order with one accumulator per element.
template <typename T>
std::vector<T> Gemm(uint64_t seed, int n) {
  XorShift64Star rng(seed);
  std::vector<T> a(static_cast<size_t>(n) * n), b(a.size()), c(a.size());
  for (auto& x : a) x = static_cast<T>(rng.Uniform());
  for (auto& x : b) x = static_cast<T>(rng.Uniform());
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      T acc = 0;
      for (int k = 0; k < n; ++k) acc += a[static_cast<size_t>(i) * n + k] * b[static_cast<size_t>(k) * n + j];
      c[static_cast<size_t>(i) * n + j] = acc;
    }
  }
  return c;
}

WorkloadOutput GemmFp32(uint64_t seed) { return Finish("gemm_fp32", "fp32", Gemm<float>(seed, 256)); }
WorkloadOutput GemmFp64(uint64_t seed) { return Finish("gemm_fp64", "fp64", Gemm<double>(seed + 1, 256)); }

// A long sequential fp32 sum (rounding at every step), recorded every 4096
// terms so the digest sees the whole path, not just the end.
WorkloadOutput ReductionFp32(uint64_t seed) {
  XorShift64Star rng(seed + 2);
  constexpr int kTerms = 1 << 22;
  std::vector<float> checkpoints;
  float sum = 0;
  for (int i = 0; i < kTerms; ++i) {
    sum += static_cast<float>(rng.Uniform());
    if ((i & 4095) == 4095) checkpoints.push_back(sum);
  }
  return Finish("reduction_fp32", "fp32", checkpoints);
}

// 64 independent chains x <- fma(x, a, b), kept bounded (|a| < 1).
WorkloadOutput FmaChainFp64(uint64_t seed) {
  XorShift64Star rng(seed + 3);
  constexpr int kLanes = 64, kSteps = 1 << 16;
  std::vector<double> x(kLanes), a(kLanes), b(kLanes);
  for (int l = 0; l < kLanes; ++l) {
    x[l] = rng.Uniform();
    a[l] = 0.5 + 0.49 * rng.Uniform();
    b[l] = rng.Uniform();
  }
  for (int s = 0; s < kSteps; ++s) {
    for (int l = 0; l < kLanes; ++l) x[l] = std::fma(x[l], a[l], b[l]);
  }
  return Finish("fma_chain_fp64", "fp64", x);
}

// Fill 32 MiB with a generated pattern, then mix it with strided reads and
// writes over several passes: a memory or cache fault changes the digest.
WorkloadOutput MemoryPattern(uint64_t seed) {
  XorShift64Star rng(seed + 4);
  constexpr size_t kWords = (32u << 20) / sizeof(uint64_t);
  std::vector<uint64_t> buf(kWords);
  for (auto& w : buf) w = rng.Next();
  constexpr size_t kStride = 4099;  // odd, so the walk visits every word
  for (int pass = 0; pass < 4; ++pass) {
    size_t j = static_cast<size_t>(pass);
    for (size_t i = 0; i < kWords; ++i) {
      j = (j + kStride) % kWords;
      uint64_t v = buf[j];
      buf[i] ^= (v << 13) | (v >> 51);
    }
  }
  WorkloadOutput w = Finish("memory_pattern", "u64", buf);
  w.value = static_cast<double>(buf[0] >> 11);  // the sum of u64 words says little
  return w;
}

}  // namespace

uint64_t XorShift64Star::Next() {
  s_ ^= s_ >> 12;
  s_ ^= s_ << 25;
  s_ ^= s_ >> 27;
  return s_ * 2685821657736338717ULL;
}

double XorShift64Star::Uniform() {
  return static_cast<double>(Next() >> 11) * (2.0 / 9007199254740992.0) - 1.0;
}

const std::vector<WorkloadSpec>& Workloads() {
  static const auto* w = new std::vector<WorkloadSpec>{
      {"gemm_fp32", GemmFp32},         {"gemm_fp64", GemmFp64},
      {"reduction_fp32", ReductionFp32}, {"fma_chain_fp64", FmaChainFp64},
      {"memory_pattern", MemoryPattern}};
  return *w;
}

}  // namespace cmax::consistency
