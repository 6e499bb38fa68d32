#include "benchmarks/burnin/host_gemm.h"

#include <algorithm>
#include <thread>
#include <vector>

#ifdef CMAX_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace cmax::burnin {
namespace {

int g_threads = 1;

// Blocked i-k-j loop over rows [r0, r1): every element is accumulated in the
// same order on every call.
template <typename T>
void BlockedRows(int n, const T* a, const T* b, T* c, int r0, int r1) {
  constexpr int kBlock = 64;
  for (int i = r0; i < r1; ++i) std::fill(c + static_cast<size_t>(i) * n, c + (i + 1) * size_t(n), T(0));
  for (int kk = 0; kk < n; kk += kBlock) {
    int k_end = std::min(n, kk + kBlock);
    for (int i = r0; i < r1; ++i) {
      T* ci = c + static_cast<size_t>(i) * n;
      for (int k = kk; k < k_end; ++k) {
        T aik = a[static_cast<size_t>(i) * n + k];
        const T* bk = b + static_cast<size_t>(k) * n;
        for (int j = 0; j < n; ++j) ci[j] += aik * bk[j];
      }
    }
  }
}

template <typename T>
void Blocked(int n, const T* a, const T* b, T* c) {
  int threads = std::max(1, std::min(g_threads, n));
  std::vector<std::thread> pool;
  int rows = (n + threads - 1) / threads;
  for (int t = 0; t < threads; ++t) {
    int r0 = t * rows, r1 = std::min(n, r0 + rows);
    if (r0 >= r1) break;
    pool.emplace_back([=] { BlockedRows(n, a, b, c, r0, r1); });
  }
  for (auto& th : pool) th.join();
}

}  // namespace

std::string HostGemmImplementation() {
#ifdef CMAX_HAVE_OPENBLAS
  return "openblas";
#else
  return "blocked-c++";
#endif
}

void SetHostGemmThreads(int threads) {
  g_threads = std::max(1, threads);
#ifdef CMAX_HAVE_OPENBLAS
  openblas_set_num_threads(g_threads);
#endif
}

void HostGemm(int n, const float* a, const float* b, float* c) {
#ifdef CMAX_HAVE_OPENBLAS
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n, b, n, 0.0f, c, n);
#else
  Blocked(n, a, b, c);
#endif
}

void HostGemm(int n, const double* a, const double* b, double* c) {
#ifdef CMAX_HAVE_OPENBLAS
  cblas_dgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0, a, n, b, n, 0.0, c, n);
#else
  Blocked(n, a, b, c);
#endif
}

}  // namespace cmax::burnin
