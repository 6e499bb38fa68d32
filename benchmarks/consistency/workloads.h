// Deterministic host workloads for the consistency check. Inputs come from a
// fixed-seed xorshift64* generator written here (std:: distributions differ
// between standard libraries), every loop runs in a fixed order, and the
// target is built with -ffp-contract=off so the compiler never fuses a
// multiply and an add on its own. Same binary + same CPU model => the same
// bytes; a machine that disagrees computed something wrong.
#ifndef CMAX_BENCHMARKS_CONSISTENCY_WORKLOADS_H_
#define CMAX_BENCHMARKS_CONSISTENCY_WORKLOADS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace cmax::consistency {

struct WorkloadOutput {
  std::string workload;  // "gemm_fp32", "gemm_fp64", "reduction_fp32", "fma_chain_fp64",
                         // "memory_pattern"
  std::string dtype;
  std::string digest;    // FNV-1a 64 over the output bytes, hex
  double value = 0;      // a summary of the output (sum of elements) for relative errors
  uint64_t bytes = 0;    // output size
};

using Workload = WorkloadOutput (*)(uint64_t seed);

struct WorkloadSpec {
  const char* name;
  Workload run;
};

const std::vector<WorkloadSpec>& Workloads();

// The generator, exposed for tests: xorshift64* (Vigna 2016).
class XorShift64Star {
 public:
  explicit XorShift64Star(uint64_t seed) : s_(seed ? seed : 0x9e3779b97f4a7c15ULL) {}
  uint64_t Next();
  double Uniform();  // [-1, 1), 53 random bits

 private:
  uint64_t s_;
};

}  // namespace cmax::consistency

#endif  // CMAX_BENCHMARKS_CONSISTENCY_WORKLOADS_H_
