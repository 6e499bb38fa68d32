// The GPU state passive health judges, behind an interface: NvmlGpuProbe
// (nvml_loader.h) on a real node, FileGpuProbe (file_gpu_probe.h) for
// fixture roots, and fakes in tests.
#ifndef CMAX_BENCHMARKS_HEALTH_GPU_PROBE_H_
#define CMAX_BENCHMARKS_HEALTH_GPU_PROBE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace cmax::health {

// One NVLink of a GPU (one that exists: NVML answered its state). The error
// counters are nullopt where the driver does not expose them per link
// (NOT_SUPPORTED; newer GPUs may report them only as field values).
struct NvLinkState {
  int link = -1;  // 0 .. NVML_NVLINK_MAX_LINKS-1
  bool active = false;
  std::optional<uint64_t> replay, recovery, crc_flit, crc_data;
  // NVLink5: errors left after forward error correction (the link-level
  // errors that cost a replay); `recovery` then holds the link recovery
  // events of the same field family.
  std::optional<uint64_t> effective_errors;
  // The link's speed in MB/s (NVML_FI_DEV_NVLINK_GET_SPEED); nullopt where
  // the driver does not answer it.
  std::optional<uint64_t> speed_mbps;
};

// The GPU's registration with the NVLink fabric (nvmlGpuFabricInfo_t).
enum class FabricState { kNotSupported = 0, kNotStarted = 1, kInProgress = 2, kCompleted = 3 };

// One GPU as the driver reports it. Every reading is optional: nullopt means
// not supported by this GPU or not readable (then `errors` says why, unless
// the driver answered NOT_SUPPORTED, which is not an error).
struct GpuState {
  int index = -1;
  std::string name;
  std::string uuid;
  std::string pci_bus_id;  // as the driver prints it, e.g. "00000000:18:00.0"

  std::optional<bool> ecc_enabled;
  std::optional<uint64_t> volatile_sbe, volatile_dbe, aggregate_sbe, aggregate_dbe;
  // Pre-Ampere page retirement; nullopt (NOT_SUPPORTED) on Ampere and later.
  std::optional<uint64_t> retired_pages_sbe, retired_pages_dbe;
  std::optional<uint64_t> remapped_rows_correctable, remapped_rows_uncorrectable;
  std::optional<bool> remap_pending, remap_failed;
  std::optional<uint64_t> pcie_width, pcie_max_width;
  std::optional<uint64_t> pcie_replays;
  // nvmlClocksEventReasons bit mask (GpuIdle 0x1, ApplicationsClocksSetting 0x2,
  // SwPowerCap 0x4, HwSlowdown 0x8, SyncBoost 0x10, SwThermalSlowdown 0x20,
  // HwThermalSlowdown 0x40, HwPowerBrakeSlowdown 0x80, DisplayClockSetting 0x100).
  std::optional<uint64_t> throttle_reasons;
  std::optional<uint64_t> temperature_c, slowdown_temperature_c, shutdown_temperature_c;
  std::optional<bool> persistence_mode;
  std::optional<bool> mig_enabled;
  std::optional<uint64_t> compute_processes;
  // Cumulative violation time (ns) from nvmlDeviceGetViolationStatus.
  std::optional<uint64_t> violation_power_ns, violation_thermal_ns;
  // The driver's recovery action (nvml_api.h kRecovery*): 0 none, 1 GPU
  // reset, 2 node reboot, 3 drain peer-to-peer traffic, 4 drain and reset,
  // 5 recover the IMEX domain, 6 PCIe bus reset, 7 system reboot.
  // nullopt before driver r570.
  std::optional<uint64_t> recovery_action;

  // Links that exist on this GPU (empty: no NVLink, or not measured).
  std::vector<NvLinkState> nvlinks;
  // nullopt: the driver has no fabric query (or answered NOT_SUPPORTED).
  std::optional<FabricState> fabric_state;
  // NVML return code of the registration; meaningful only when COMPLETED.
  std::optional<int> fabric_status;
  // The NVLink domain the GPU registered in: the cluster UUID as text
  // ("8-4-4-4-12" hex; all zeros where the fabric gave none) and the clique
  // id (GPUs of one clique reach each other over NVLink). Set with
  // fabric_state (nvmlGpuFabricInfo_t and later).
  std::string fabric_cluster_uuid;
  std::optional<uint32_t> fabric_clique_id;
  // nvmlGpuFabricInfo_v2/v3 healthMask (nvml_api.h kFabricHealth*); nullopt
  // where only the v1 query exists (drivers before r550).
  std::optional<uint32_t> fabric_health_mask;

  std::vector<std::string> errors;  // "nvmlDeviceGetX: <NVML error string>"
  bool lost = false;                // the driver answered GPU_IS_LOST
};

struct GpuInventory {
  std::string driver_version;  // empty when unknown
  std::vector<GpuState> gpus;
};

class GpuProbe {
 public:
  virtual ~GpuProbe() = default;
  // OK: every GPU the driver sees (possibly none). UNAVAILABLE: no NVML
  // library here (GPU checks are "not measured"). Other codes: the library
  // is there but failed (driver not loaded, version mismatch): a finding.
  virtual absl::StatusOr<GpuInventory> Probe() = 0;
  // What the probe is, for logs: "NVML (libnvidia-ml.so.1)".
  virtual std::string Describe() const = 0;
};

}  // namespace cmax::health

#endif  // CMAX_BENCHMARKS_HEALTH_GPU_PROBE_H_
