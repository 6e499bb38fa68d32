// NVML loaded at run time (library cmax_nvml): dlopen("libnvidia-ml.so.1")
// and the versioned entry points, declared here from NVIDIA's NVML API
// reference (https://docs.nvidia.com/deploy/nvml-api/) because no nvml.h is
// installed on build machines. Only opaque handles, return codes, plain-C
// entry points and the few structs cmax reads are declared, laid out as
// documented. Used by the health suite (benchmarks/health/nvml_loader.h) and
// by the GPU burn-in's telemetry (nvml_telemetry.h).
//
// NVML can hang for minutes after an Xid 79: only suite processes (children
// with a timeout) call it, never the agent.
#ifndef CMAX_BENCHMARKS_GPU_COMMON_NVML_API_H_
#define CMAX_BENCHMARKS_GPU_COMMON_NVML_API_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace cmax::nvml {

extern "C" {
typedef struct nvmlDevice_st* nvmlDevice_t;  // opaque
typedef int nvmlReturn_t;
}
// Return codes and enumerations (passed as int, as C does).
constexpr nvmlReturn_t kSuccess = 0;               // NVML_SUCCESS
constexpr nvmlReturn_t kInvalidArgument = 2;       // NVML_ERROR_INVALID_ARGUMENT
constexpr nvmlReturn_t kNotSupported = 3;          // NVML_ERROR_NOT_SUPPORTED
constexpr nvmlReturn_t kNotFound = 6;              // NVML_ERROR_NOT_FOUND
constexpr nvmlReturn_t kInsufficientSize = 7;      // NVML_ERROR_INSUFFICIENT_SIZE
constexpr nvmlReturn_t kGpuIsLost = 15;            // NVML_ERROR_GPU_IS_LOST
constexpr nvmlReturn_t kArgumentVersionMismatch = 25;  // NVML_ERROR_ARGUMENT_VERSION_MISMATCH
constexpr int kMemoryErrorCorrected = 0;           // NVML_MEMORY_ERROR_TYPE_CORRECTED
constexpr int kMemoryErrorUncorrected = 1;         // NVML_MEMORY_ERROR_TYPE_UNCORRECTED
constexpr int kVolatileEcc = 0;                    // NVML_VOLATILE_ECC
constexpr int kAggregateEcc = 1;                   // NVML_AGGREGATE_ECC
constexpr int kRetireMultipleSbe = 0;  // NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS
constexpr int kRetireDbe = 1;          // NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR
constexpr int kTemperatureGpu = 0;                 // NVML_TEMPERATURE_GPU
constexpr int kThresholdShutdown = 0;              // NVML_TEMPERATURE_THRESHOLD_SHUTDOWN
constexpr int kThresholdSlowdown = 1;              // NVML_TEMPERATURE_THRESHOLD_SLOWDOWN
constexpr int kPerfPolicyPower = 0;                // NVML_PERF_POLICY_POWER
constexpr int kPerfPolicyThermal = 1;              // NVML_PERF_POLICY_THERMAL
constexpr int kClockSm = 1;                        // NVML_CLOCK_SM
constexpr unsigned kFieldMemoryTemp = 82;          // NVML_FI_DEV_MEMORY_TEMP
// NVML_FI_DEV_GET_GPU_RECOVERY_ACTION (drivers r570 and later; older ones
// answer the field with NOT_SUPPORTED): the driver's own verdict on what the
// GPU needs, an nvmlDeviceGpuRecoveryAction_t (kRecovery* below). Xid 154
// reports a change of it.
constexpr unsigned kFieldGpuRecoveryAction = 230;
constexpr int kRecoveryNone = 0;          // NVML_GPU_RECOVERY_ACTION_NONE
constexpr int kRecoveryGpuReset = 1;      // NVML_GPU_RECOVERY_ACTION_GPU_RESET
constexpr int kRecoveryNodeReboot = 2;    // NVML_GPU_RECOVERY_ACTION_NODE_REBOOT
constexpr int kRecoveryDrainP2p = 3;      // NVML_GPU_RECOVERY_ACTION_DRAIN_P2P
constexpr int kRecoveryDrainAndReset = 4; // NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET
// Newer drivers (cuda.bindings.nvml DeviceGpuRecoveryAction, nvidia.github.io/cuda-python).
constexpr int kRecoveryRecoverImexDomain = 5;  // NVML_GPU_RECOVERY_ACTION_RECOVER_IMEX_DOMAIN
constexpr int kRecoveryBusReset = 6;           // NVML_GPU_RECOVERY_ACTION_BUS_RESET
constexpr int kRecoverySystemReboot = 7;       // NVML_GPU_RECOVERY_ACTION_SYSTEM_REBOOT
constexpr unsigned kNameBuffer = 96;               // NVML_DEVICE_NAME_V2_BUFFER_SIZE
constexpr unsigned kUuidBuffer = 80;               // NVML_DEVICE_UUID_V2_BUFFER_SIZE
constexpr unsigned kDriverBuffer = 80;             // NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE
// NVLink: links are numbered 0 .. NVML_NVLINK_MAX_LINKS-1 (18 since R450;
// 6 in older headers); nvmlDeviceGetNvLinkState answers nvmlEnableState_t
// (NVML_FEATURE_DISABLED 0 / ENABLED 1) and NOT_SUPPORTED or
// INVALID_ARGUMENT for a link the GPU does not have.
constexpr unsigned kNvLinkMaxLinks = 18;           // NVML_NVLINK_MAX_LINKS
constexpr int kNvLinkErrorReplay = 0;              // NVML_NVLINK_ERROR_DL_REPLAY
constexpr int kNvLinkErrorRecovery = 1;            // NVML_NVLINK_ERROR_DL_RECOVERY
constexpr int kNvLinkErrorCrcFlit = 2;             // NVML_NVLINK_ERROR_DL_CRC_FLIT
constexpr int kNvLinkErrorCrcData = 3;             // NVML_NVLINK_ERROR_DL_CRC_DATA
// NVLink5 (Blackwell) counters, read per link as field values (scope_id =
// link) where nvmlDeviceGetNvLinkErrorCounter answers NOT_SUPPORTED.
constexpr unsigned kFieldNvLinkRecoveryEvents = 215;  // NVML_FI_DEV_NVLINK_COUNT_LINK_RECOVERY_EVENTS
constexpr unsigned kFieldNvLinkEffectiveErrors = 219; // NVML_FI_DEV_NVLINK_COUNT_EFFECTIVE_ERRORS
// One link's speed in MB/s (scope_id = link): NVML_FI_DEV_NVLINK_GET_SPEED,
// "NVLink Speed in MBps" in nvml.h (field values 164-166: speed, state, version).
constexpr unsigned kFieldNvLinkSpeed = 164;
// nvmlGpuFabricState_t (an unsigned char).
constexpr unsigned char kFabricNotSupported = 0;   // NVML_GPU_FABRIC_STATE_NOT_SUPPORTED
constexpr unsigned char kFabricNotStarted = 1;     // NVML_GPU_FABRIC_STATE_NOT_STARTED
constexpr unsigned char kFabricInProgress = 2;     // NVML_GPU_FABRIC_STATE_IN_PROGRESS
constexpr unsigned char kFabricCompleted = 3;      // NVML_GPU_FABRIC_STATE_COMPLETED

// nvmlPciInfo_t as filled by nvmlDeviceGetPciInfo_v3.
struct PciInfo {
  char bus_id_legacy[16];  // NVML_DEVICE_PCI_BUS_ID_BUFFER_V2_SIZE
  unsigned int domain;
  unsigned int bus;
  unsigned int device;
  unsigned int pci_device_id;
  unsigned int pci_subsystem_id;
  char bus_id[32];         // NVML_DEVICE_PCI_BUS_ID_BUFFER_SIZE
};
// nvmlViolationTime_t.
struct ViolationTime {
  unsigned long long reference_time;
  unsigned long long violation_time;
};
// nvmlFieldValue_t (nvmlDeviceGetFieldValues). value is the nvmlValue_t
// union (8 bytes); value_type says which member: 0 double, 1 unsigned int,
// 2 unsigned long, 3 unsigned long long, 4 signed long long, 5 signed int,
// 6 unsigned short (nvmlValueType_t).
struct FieldValue {
  unsigned int field_id;
  unsigned int scope_id;
  long long timestamp;
  long long latency_usec;
  int value_type;
  nvmlReturn_t nvml_return;
  union {
    double d;
    unsigned int ui;
    unsigned long ul;
    unsigned long long ull;
    long long sll;
    int si;
    unsigned short us;
  } value;
};
// nvmlGpuFabricInfo_t, the unversioned (v1) struct filled by
// nvmlDeviceGetGpuFabricInfo (Hopper and later), as documented in
// docs.nvidia.com/deploy/nvml-api/structnvmlGpuFabricInfo__t.html: no version
// field (unlike the _v2/_v3 structs of nvmlDeviceGetGpuFabricInfoV, which are
// not compatible with it). `status` is meaningful only when `state` is
// COMPLETED.
struct GpuFabricInfo {
  unsigned char cluster_uuid[16];  // NVML_GPU_FABRIC_UUID_LEN
  nvmlReturn_t status;
  unsigned int clique_id;
  unsigned char state;             // nvmlGpuFabricState_t
};
static_assert(sizeof(GpuFabricInfo) == 28, "nvmlGpuFabricInfo_t layout");
// nvmlGpuFabricInfo_v3_t, filled by nvmlDeviceGetGpuFabricInfoV (drivers
// r550 and later; docs.nvidia.com/deploy/nvml-api/api/structnvmlGpuFabricInfo__v2__t.html
// and nvml.h for v3):
// `version` must be set to kGpuFabricInfoV3 (or V2, the same struct without
// health_summary) before the call. A driver that knows only v2 answers v3
// with ARGUMENT_VERSION_MISMATCH.
struct GpuFabricInfoV3 {
  unsigned int version;
  unsigned char cluster_uuid[16];  // NVML_GPU_FABRIC_UUID_LEN
  nvmlReturn_t status;
  unsigned int clique_id;
  unsigned char state;             // nvmlGpuFabricState_t
  unsigned int health_mask;        // NVML_GPU_FABRIC_HEALTH_MASK_* fields (below)
  unsigned char health_summary;    // v3 only: NVML_GPU_FABRIC_HEALTH_SUMMARY_*
};
static_assert(sizeof(GpuFabricInfoV3) == 40, "nvmlGpuFabricInfo_v3_t layout");
// NVML_STRUCT_VERSION(GpuFabricInfo, N): sizeof(struct) | N << 24.
constexpr unsigned kGpuFabricInfoV2 = 36u | (2u << 24);  // sizeof(nvmlGpuFabricInfo_v2_t) 36
constexpr unsigned kGpuFabricInfoV3 = 40u | (3u << 24);
// healthMask: 2-bit fields, each 0 NOT_SUPPORTED, 1 TRUE (the condition
// holds), 2 FALSE; NVML_GPU_FABRIC_HEALTH_MASK_SHIFT_* in nvml.h (first
// DEGRADED_BW; ROUTE_RECOVERY, ROUTE_UNHEALTHY and ACCESS_TIMEOUT_RECOVERY
// came with the release that added DRAIN_AND_RESET, NVML API change log).
// INCORRECT_CONFIGURATION (newer still) is a 4-bit field at shift 8: 0 NOT_SUPPORTED, 1 NONE, 2 INCORRECT_SYSGUID,
// 3 INCORRECT_CHASSIS_SN, 4 NO_PARTITION, 5 INSUFFICIENT_NVLINKS.
constexpr unsigned kFabricHealthShiftDegradedBw = 0;
constexpr unsigned kFabricHealthShiftRouteRecovery = 2;
constexpr unsigned kFabricHealthShiftRouteUnhealthy = 4;
constexpr unsigned kFabricHealthShiftAccessTimeoutRecovery = 6;
constexpr unsigned kFabricHealthWidth2 = 0x3;
constexpr unsigned kFabricHealthTrue = 1;
constexpr unsigned kFabricHealthShiftIncorrectConfig = 8;
constexpr unsigned kFabricHealthWidthIncorrectConfig = 0xf;
constexpr unsigned kFabricConfigNone = 1;
// The field value as a double; false when it failed or has an unknown type.
bool FieldAsDouble(const FieldValue& v, double* out);

using VoidFn = nvmlReturn_t (*)();
using ErrorStringFn = const char* (*)(nvmlReturn_t);
using UintOutFn = nvmlReturn_t (*)(unsigned int*);
using HandleByIndexFn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using HandleByStringFn = nvmlReturn_t (*)(const char*, nvmlDevice_t*);
using PciInfoFn = nvmlReturn_t (*)(nvmlDevice_t, PciInfo*);
using DevStringFn = nvmlReturn_t (*)(nvmlDevice_t, char*, unsigned int);
using SysStringFn = nvmlReturn_t (*)(char*, unsigned int);
using DevTwoIntFn = nvmlReturn_t (*)(nvmlDevice_t, int*, int*);
using DevIntFn = nvmlReturn_t (*)(nvmlDevice_t, int*);
using EccCountFn = nvmlReturn_t (*)(nvmlDevice_t, int, int, unsigned long long*);
using RetiredPagesFn = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned int*, unsigned long long*);
using RemappedRowsFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, unsigned int*,
                                        unsigned int*, unsigned int*);
using DevUintFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*);
using DevU64Fn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*);
using DevEnumUintFn = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned int*);
using DevTwoUintFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, unsigned int*);
using ProcessesFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int*, void*);
using ViolationFn = nvmlReturn_t (*)(nvmlDevice_t, int, ViolationTime*);
using FieldValuesFn = nvmlReturn_t (*)(nvmlDevice_t, int, FieldValue*);
// (device, link, nvmlEnableState_t* isActive)
using NvLinkStateFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, int*);
// (device, link, nvmlNvLinkErrorCounter_t, unsigned long long* value)
using NvLinkErrorFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned int, int, unsigned long long*);
using FabricInfoFn = nvmlReturn_t (*)(nvmlDevice_t, GpuFabricInfo*);
using FabricInfoVFn = nvmlReturn_t (*)(nvmlDevice_t, GpuFabricInfoV3*);

// The dlopen'ed library, initialised (nvmlInit_v2) by Open and shut down
// (nvmlShutdown) by the destructor. Entry points other than init, count and
// handle_by_index are nullptr when the library lacks them (older drivers).
// NVML itself is thread-safe; this object holds no other state.
class Library {
 public:
  // UNAVAILABLE when dlopen fails (no driver installed); INTERNAL when a
  // required entry point is missing or nvmlInit_v2 fails (with NVML's
  // error string).
  static absl::StatusOr<std::unique_ptr<Library>> Open(
      const std::string& name = "libnvidia-ml.so.1");
  ~Library();
  Library(const Library&) = delete;
  Library& operator=(const Library&) = delete;

  // "Not Supported (3)", or "NVML error 3" without nvmlErrorString.
  std::string Error(nvmlReturn_t r) const;

  ErrorStringFn error_string = nullptr;
  UintOutFn count = nullptr;
  HandleByIndexFn handle_by_index = nullptr;
  HandleByStringFn handle_by_uuid = nullptr;
  SysStringFn driver_version = nullptr;
  PciInfoFn pci_info = nullptr;
  DevStringFn name = nullptr;
  DevStringFn uuid = nullptr;
  DevTwoIntFn ecc_mode = nullptr;
  EccCountFn ecc_count = nullptr;
  RetiredPagesFn retired_pages = nullptr;
  RemappedRowsFn remapped_rows = nullptr;
  DevUintFn pcie_width = nullptr;
  DevUintFn pcie_max_width = nullptr;
  DevUintFn pcie_replays = nullptr;
  DevU64Fn clock_reasons = nullptr;
  DevEnumUintFn temperature = nullptr;
  DevEnumUintFn temperature_threshold = nullptr;
  DevIntFn persistence = nullptr;
  DevTwoUintFn mig_mode = nullptr;
  ProcessesFn processes = nullptr;
  ViolationFn violation = nullptr;
  DevUintFn power_usage = nullptr;  // milliwatts
  DevEnumUintFn clock_info = nullptr;  // MHz
  FieldValuesFn field_values = nullptr;
  NvLinkStateFn nvlink_state = nullptr;
  NvLinkErrorFn nvlink_error_counter = nullptr;
  FabricInfoFn fabric_info = nullptr;  // nullptr on drivers that predate it
  FabricInfoVFn fabric_info_v = nullptr;  // nvmlDeviceGetGpuFabricInfoV (r550 and later)

 private:
  explicit Library(void* handle) : handle_(handle) {}
  void* Sym(const char* name) const;

  void* handle_;
  bool initialized_ = false;
  VoidFn init_ = nullptr;
  VoidFn shutdown_ = nullptr;
};

}  // namespace cmax::nvml

#endif  // CMAX_BENCHMARKS_GPU_COMMON_NVML_API_H_
