// Datasheet figures per GPU model: dense peak TFLOPS per data type, memory
// bandwidth, NVLink bandwidth and the host link. Judges grade measurements
// against them; the GPU suites print "% of peak" with them. Every figure has
// its public source next to it in gpu_specs.cc.
//
// All TFLOPS are DENSE (datasheets print "with sparsity" figures that are
// twice as large; those are halved here). A figure of 0 means "not published
// or not supported": nothing is graded against it.
//
// This library is pure data (no gRPC, no protobuf) so suite binaries link it.
#ifndef CMAX_REPORTS_GPU_SPECS_H_
#define CMAX_REPORTS_GPU_SPECS_H_

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace cmax::reports {

struct GpuSpec {
  std::string name;  // canonical name, e.g. "H100 SXM"
  // Every one of these substrings must occur in the model string
  // (case-insensitive) for this entry to match.
  std::vector<std::string> match_all;
  double bf16 = 0, fp16 = 0, fp8 = 0;  // tensor cores, FP32 accumulate
  double tf32 = 0;                     // tensor cores
  double fp32 = 0;                     // non-tensor (CUDA cores)
  double fp64 = 0;                     // non-tensor
  double fp64_tensor = 0;
  double memory_gbps = 0;   // HBM (GDDR for L40S), GB/s = 1e9 B/s
  double nvlink_gbps = 0;   // total per GPU, both directions; 0 = none
  int pcie_gen = 0;         // host link PCIe generation (x16); 0 = not PCIe (NVLink-C2C)
};

// The entry for a model string as the driver names it ("NVIDIA H200",
// "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB", "NVIDIA GB200"). The most
// specific entry wins ("H200 NVL" before "H200", "GB200" before "B200").
// nullopt for unknown models: they are measured but not graded.
std::optional<GpuSpec> FindGpuSpec(std::string_view model);

// Dense peak for a GEMM dtype as the GPU suites name them: "bf16", "fp16",
// "fp8", "tf32", "fp32" (non-tensor), "fp64" (the faster of the FP64 paths:
// cuBLAS DGEMM uses the FP64 tensor cores where they exist). 0 when unknown.
double PeakTflops(const GpuSpec& spec, std::string_view dtype);

// Every entry, in matching order.
const std::vector<GpuSpec>& AllGpuSpecs();

}  // namespace cmax::reports

#endif  // CMAX_REPORTS_GPU_SPECS_H_
