// C = A * B for square row-major matrices on the host: OpenBLAS
// (cblas_sgemm / cblas_dgemm) where the build found it, otherwise a plain
// blocked loop split by rows over threads. Both give the same result for the
// same inputs and thread count on every call, which the burn-in relies on.
#ifndef CMAX_BENCHMARKS_BURNIN_HOST_GEMM_H_
#define CMAX_BENCHMARKS_BURNIN_HOST_GEMM_H_

#include <string>

namespace cmax::burnin {

// "openblas" or "blocked-c++".
std::string HostGemmImplementation();
// Sets the threads the GEMM uses (OpenBLAS: openblas_set_num_threads).
void SetHostGemmThreads(int threads);
void HostGemm(int n, const float* a, const float* b, float* c);
void HostGemm(int n, const double* a, const double* b, double* c);

}  // namespace cmax::burnin

#endif  // CMAX_BENCHMARKS_BURNIN_HOST_GEMM_H_
