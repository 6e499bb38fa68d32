// A GpuProbe that reads GPU state from a YAML file: how fixture roots
// (tests/fixtures/health/...) describe their GPUs, since NVML only ever
// describes the real machine. Used by `health --root DIR` when
// DIR/cmax-fixture/gpus.yaml exists; never on the real root.
//
// Format (every field but index optional; names as in GpuState):
//   driver_version: "550.54.15"
//   gpus:
//     - {index: 0, name: "NVIDIA H100 80GB HBM3", uuid: GPU-..., pci_bus_id: "00000000:18:00.0",
//        ecc_enabled: true, volatile_dbe: 0, remap_pending: false, pcie_width: 16, ...,
//        nvlinks: [{link: 0, active: true, replay: 0, recovery: 0, crc_flit: 0, crc_data: 0}],
//        fabric_state: COMPLETED, fabric_status: 0}
// nvlinks lists only the links that exist (`active` required, counters
// optional); fabric_state is NOT_SUPPORTED|NOT_STARTED|IN_PROGRESS|COMPLETED
// and fabric_status the NVML return code of the registration (0 = success);
// fabric_cluster_uuid ("8-4-4-4-12" hex), fabric_clique_id and
// fabric_health_mask (the v2/v3 healthMask as a number) as NVML gives them;
// a link may carry speed_mbps (NVML_FI_DEV_NVLINK_GET_SPEED).
#ifndef CMAX_BENCHMARKS_HEALTH_FILE_GPU_PROBE_H_
#define CMAX_BENCHMARKS_HEALTH_FILE_GPU_PROBE_H_

#include <string>

#include "benchmarks/health/gpu_probe.h"

namespace cmax::health {

class FileGpuProbe : public GpuProbe {
 public:
  explicit FileGpuProbe(std::string path) : path_(std::move(path)) {}
  // NOT_FOUND when the file is missing; INVALID_ARGUMENT names a bad field.
  absl::StatusOr<GpuInventory> Probe() override;
  std::string Describe() const override { return "fixture file " + path_; }

  static absl::StatusOr<GpuInventory> ParseYaml(const std::string& text);

 private:
  std::string path_;
};

}  // namespace cmax::health

#endif  // CMAX_BENCHMARKS_HEALTH_FILE_GPU_PROBE_H_
