#include "reports/gpu_specs.h"

#include <algorithm>
#include <cctype>

namespace cmax::reports {
namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::vector<GpuSpec> MakeSpecs() {
  std::vector<GpuSpec> v;
  // Field order: name, match_all, bf16, fp16, fp8, tf32, fp32, fp64,
  // fp64_tensor, memory_gbps, nvlink_gbps, pcie_gen.

  // --- Ampere. Source: NVIDIA A100 Tensor Core GPU datasheet (2021,
  // nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/
  // nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf): FP64 9.7, FP64 Tensor
  // 19.5, FP32 19.5, TF32 156, BF16/FP16 312 (dense; 312/624 sparse), no FP8;
  // memory 1,935 GB/s (80GB PCIe), 2,039 GB/s (80GB SXM), 1,555 GB/s (40GB);
  // NVLink 600 GB/s (SXM; a bridge for 2 PCIe GPUs also 600); PCIe Gen4.
  v.push_back({"A100 80GB PCIe", {"a100", "pcie", "80gb"}, 312, 312, 0, 156, 19.5, 9.7, 19.5,
               1935, 600, 4});
  v.push_back({"A100 40GB PCIe", {"a100", "pcie"}, 312, 312, 0, 156, 19.5, 9.7, 19.5, 1555, 600,
               4});
  v.push_back({"A100 80GB SXM", {"a100", "80gb"}, 312, 312, 0, 156, 19.5, 9.7, 19.5, 2039, 600,
               4});
  v.push_back({"A100 40GB SXM", {"a100"}, 312, 312, 0, 156, 19.5, 9.7, 19.5, 1555, 600, 4});

  // --- Hopper. Source: NVIDIA H100 Tensor Core GPU datasheet (2023,
  // resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet),
  // sparse figures halved. H100 SXM: FP64 34, FP64 Tensor 67, FP32 67, TF32
  // 989/2, BF16/FP16 1,979/2, FP8 3,958/2; 3.35 TB/s; NVLink 900 GB/s; PCIe
  // Gen5. H100 PCIe: FP64 26, FP64 Tensor 51, FP32 51, TF32 756/2, BF16/FP16
  // 1,513/2, FP8 3,026/2; 2 TB/s; NVLink bridge 600 GB/s. H100 NVL: FP64 30,
  // FP64 Tensor 60, FP32 60, TF32 835/2, BF16/FP16 1,671/2, FP8 3,341/2;
  // 3.9 TB/s; NVLink bridge 600 GB/s.
  v.push_back({"H100 PCIe", {"h100", "pcie"}, 756.5, 756.5, 1513, 378, 51, 26, 51, 2000, 600, 5});
  v.push_back({"H100 NVL", {"h100", "nvl"}, 835.5, 835.5, 1670.5, 417.5, 60, 30, 60, 3900, 600,
               5});
  v.push_back({"H100 SXM", {"h100"}, 989.5, 989.5, 1979, 494.5, 67, 34, 67, 3350, 900, 5});
  // Source: NVIDIA H200 Tensor Core GPU datasheet (2024,
  // nvidia.com/en-us/data-center/h200/): H200 SXM: FP64 34, FP64 Tensor 67,
  // FP32 67, TF32 989/2, BF16/FP16 1,979/2, FP8 3,958/2; 4.8 TB/s; NVLink
  // 900 GB/s; PCIe Gen5. H200 NVL: FP64 30, FP64 Tensor 60, FP32 60, TF32
  // 835/2, BF16/FP16 1,671/2, FP8 3,341/2; 4.8 TB/s; NVLink bridge 900 GB/s.
  // GH200 (the Hopper GPU of a Grace Hopper superchip) before the H200
  // entries, whose "h200" it contains. Source: NVIDIA GH200 Grace Hopper
  // Superchip datasheet (2024, nvidia.com/en-us/data-center/grace-hopper-
  // superchip/): FP64 34, FP64 Tensor 67, FP32 67, TF32 989/2, BF16/FP16
  // 1,979/2, FP8 3,958/2 (as H100 SXM); 96 GB HBM3 at 4 TB/s, or 144 GB
  // HBM3e at 4.9 TB/s ("GH200 144G HBM3e" as the driver names it); NVLink
  // 900 GB/s; the host link is NVLink-C2C to Grace (900 GB/s), not PCIe.
  v.push_back({"GH200 144GB HBM3e", {"gh200", "144g"}, 989.5, 989.5, 1979, 494.5, 67, 34, 67,
               4900, 900, 0});
  v.push_back({"GH200", {"gh200"}, 989.5, 989.5, 1979, 494.5, 67, 34, 67, 4000, 900, 0});
  v.push_back({"H200 NVL", {"h200", "nvl"}, 835.5, 835.5, 1670.5, 417.5, 60, 30, 60, 4800, 900,
               5});
  v.push_back({"H200 SXM", {"h200"}, 989.5, 989.5, 1979, 494.5, 67, 34, 67, 4800, 900, 5});

  // --- Blackwell. GB200: NVIDIA GB200 NVL72 datasheet (per superchip of two
  // GPUs, sparse: FP8 20 PF, BF16/FP16 10 PF, TF32 5 PF; FP64/FP64 Tensor
  // 90 TF; 16 TB/s HBM3e), i.e. per GPU dense 5,000 / 2,500 / 1,250, FP64 45,
  // 8 TB/s; FP32 90 per GPU from NVIDIA's Blackwell datasheet as tabulated at
  // glennklockwood.com/garden/processors/B200. NVLink 5: 1.8 TB/s per GPU.
  // The host link is NVLink-C2C to Grace (900 GB/s), not PCIe.
  v.push_back({"GB200", {"gb200"}, 2500, 2500, 5000, 1250, 90, 45, 45, 8000, 1800, 0});
  // B200: NVIDIA HGX B200 platform specification (nvidia.com/en-us/
  // data-center/hgx/), 8 GPUs, sparse: FP8 72 PF, BF16/FP16 36 PF, TF32 18 PF;
  // FP32 600 TF; FP64/FP64 Tensor 296 TF; 64 TB/s; per GPU dense 4,500 /
  // 2,250 / 1,125, FP32 75, FP64 37, 8 TB/s; NVLink 1.8 TB/s. HGX B200 hosts
  // connect the GPUs over PCIe Gen5 x16.
  v.push_back({"B200", {"b200"}, 2250, 2250, 4500, 1125, 75, 37, 37, 8000, 1800, 5});
  // GB300: NVIDIA GB300 NVL72 datasheet (72 GPUs: FP8 720 PF sparse / 360 PF
  // dense, BF16 360 PF sparse, TF32 180 PF sparse, FP64 100 TF, 576 TB/s HBM3e)
  // -> per GPU dense 5,000 / 2,500 / 1,250, FP64 1.39, 8 TB/s. FP32 not
  // published there (0). Host link NVLink-C2C.
  v.push_back({"GB300", {"gb300"}, 2500, 2500, 5000, 1250, 0, 1.39, 1.39, 8000, 1800, 0});
  // B300: NVIDIA HGX B300 platform specification (8 GPUs, sparse: FP8 72 PF,
  // BF16/FP16 36 PF, TF32 18 PF; FP32 600 TF; FP64/FP64 Tensor 10 TF; up to
  // 8 TB/s per GPU) -> per GPU dense 4,500 / 2,250 / 1,125, FP32 75, FP64
  // 1.25; NVLink 1.8 TB/s; PCIe Gen6 host interface (ConnectX-8).
  v.push_back({"B300", {"b300"}, 2250, 2250, 4500, 1125, 75, 1.25, 1.25, 8000, 1800, 6});

  // --- Ada. Source: NVIDIA L40S datasheet (2023, resources.nvidia.com/
  // en-us-l40s/l40s-datasheet): FP32 91.6, TF32 183 (366 sparse), BF16/FP16
  // 362.05 (733 sparse), FP8 733 (1,466 sparse); GDDR6 864 GB/s; no NVLink;
  // PCIe Gen4 x16. FP64 not published (0).
  v.push_back({"L40S", {"l40s"}, 362.05, 362.05, 733, 183, 91.6, 0, 0, 864, 0, 4});
  return v;
}

}  // namespace

const std::vector<GpuSpec>& AllGpuSpecs() {
  static const std::vector<GpuSpec>* specs = new std::vector<GpuSpec>(MakeSpecs());
  return *specs;
}

std::optional<GpuSpec> FindGpuSpec(std::string_view model) {
  std::string m = Lower(model);
  if (m.empty()) return std::nullopt;
  for (const auto& s : AllGpuSpecs()) {
    bool all = std::all_of(s.match_all.begin(), s.match_all.end(),
                           [&](const std::string& sub) { return m.find(sub) != std::string::npos; });
    if (all) return s;
  }
  return std::nullopt;
}

double PeakTflops(const GpuSpec& s, std::string_view dtype) {
  if (dtype == "bf16") return s.bf16;
  if (dtype == "fp16") return s.fp16;
  if (dtype == "fp8") return s.fp8;
  if (dtype == "tf32") return s.tf32;
  if (dtype == "fp32") return s.fp32;
  if (dtype == "fp64") return std::max(s.fp64, s.fp64_tensor);
  return 0;
}

}  // namespace cmax::reports
