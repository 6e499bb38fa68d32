#include "benchmarks/gemm/host_gemm.h"

#include <cblas.h>

#include <chrono>
#include <cmath>
#include <memory>
#include <new>
#include <random>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/median.h"

namespace cmax::bench {
namespace {

template <typename T>
void FillRandom(std::vector<T>& v, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  for (auto& x : v) x = static_cast<T>(dist(rng));
}

void Gemm(const float* a, const float* b, float* c, int64_t m, int64_t n, int64_t k) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0f, a, static_cast<int>(k), b,
              static_cast<int>(n), 0.0f, c, static_cast<int>(n));
}
void Gemm(const double* a, const double* b, double* c, int64_t m, int64_t n, int64_t k) {
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(m),
              static_cast<int>(n), static_cast<int>(k), 1.0, a, static_cast<int>(k), b,
              static_cast<int>(n), 0.0, c, static_cast<int>(n));
}

template <typename T>
absl::StatusOr<HostGemmResult> Run(const HostGemmOptions& o) {
  const size_t sa = static_cast<size_t>(o.m * o.k), sb = static_cast<size_t>(o.k * o.n),
               sc = static_cast<size_t>(o.m * o.n);
  std::vector<T> a, b, c;
  try {
    a.resize(sa);
    b.resize(sb);
    c.resize(sc);
  } catch (const std::bad_alloc&) {
    return absl::ResourceExhaustedError(
        absl::StrCat("cannot allocate ", (sa + sb + sc) * sizeof(T), " bytes for the matrices"));
  }
  FillRandom(a, o.seed);
  FillRandom(b, o.seed ^ 0x9e3779b97f4a7c15ULL);

  HostGemmResult r;
  int threads = o.threads > 0 ? o.threads : static_cast<int>(std::thread::hardware_concurrency());
  if (threads <= 0) threads = 1;
  openblas_set_num_threads(threads);
  r.threads = openblas_get_num_threads();
  if (const char* cfg = openblas_get_config()) r.blas_config = cfg;

  for (int i = 0; i < o.warmup; ++i) Gemm(a.data(), b.data(), c.data(), o.m, o.n, o.k);
  // Poison the output so an element the timed runs never wrote cannot pass.
  for (auto& x : c) x = static_cast<T>(NAN);
  std::vector<double> times;
  for (int i = 0; i < o.iters; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    Gemm(a.data(), b.data(), c.data(), o.m, o.n, o.k);
    auto t1 = std::chrono::steady_clock::now();
    times.push_back(std::chrono::duration<double>(t1 - t0).count());
  }
  r.median_s = Median(times);
  r.gflops = r.median_s > 0 ? GemmFlops(o.m, o.n, o.k) / r.median_s / 1e9 : 0;

  auto positions = PickSamplePositions(o.m, o.n, o.samples, o.seed + 1);
  if (o.fault_inject && !positions.empty()) {
    // TEST ONLY: a corruption far outside any tolerance, on a sampled element.
    auto [i, j] = positions[positions.size() / 2];
    T& x = c[static_cast<size_t>(i * o.n + j)];
    x = x + static_cast<T>(1.0 + std::fabs(static_cast<double>(x)));
  }
  std::vector<GemmSample> samples;
  samples.reserve(positions.size());
  for (auto [i, j] : positions) {
    long double sum = 0, sq = 0;
    for (int64_t l = 0; l < o.k; ++l) {
      long double p = static_cast<long double>(a[static_cast<size_t>(i * o.k + l)]) *
                      static_cast<long double>(b[static_cast<size_t>(l * o.n + j)]);
      sum += p;
      sq += p * p;
    }
    GemmSample s;
    s.i = i;
    s.j = j;
    s.got = static_cast<double>(c[static_cast<size_t>(i * o.n + j)]);
    s.ref = static_cast<double>(sum);
    s.scale = std::sqrt(static_cast<double>(sq));
    samples.push_back(s);
  }
  r.verdict = CheckGemmSamples(o.dtype, o.k, samples);
  return r;
}

}  // namespace

absl::StatusOr<HostGemmResult> RunHostGemm(const HostGemmOptions& o) {
  if (o.m <= 0 || o.n <= 0 || o.k <= 0 || o.m > INT32_MAX || o.n > INT32_MAX || o.k > INT32_MAX) {
    return absl::InvalidArgumentError(
        absl::StrCat("sizes must be in [1, 2^31): m=", o.m, " n=", o.n, " k=", o.k));
  }
  if (o.iters <= 0 || o.warmup < 0) {
    return absl::InvalidArgumentError("--iters must be >= 1 and --warmup >= 0");
  }
  switch (o.dtype) {
    case GemmDtype::kFp32: return Run<float>(o);
    case GemmDtype::kFp64: return Run<double>(o);
    default:
      return absl::InvalidArgumentError(absl::StrCat(
          "the cpu backend measures fp32 and fp64, not ", GemmDtypeName(o.dtype)));
  }
}

}  // namespace cmax::bench
