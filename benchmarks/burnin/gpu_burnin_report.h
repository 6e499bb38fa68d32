// Host-side logic of `cmax-bench-cuda burnin` (benchmarks/burnin/cuda/gpu_burnin.cc),
// kept free of CUDA so it is tested on machines without a GPU: throttle
// reason accounting, telemetry windows (Samples with min/mean/max), the
// per-GPU figures, and the verdict (Measurements, Findings, an Artifact).
#ifndef CMAX_BENCHMARKS_BURNIN_GPU_BURNIN_REPORT_H_
#define CMAX_BENCHMARKS_BURNIN_GPU_BURNIN_REPORT_H_

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "benchmarks/gpu_common/nvml_telemetry.h"
#include "cmax/v1/record.pb.h"
#include "common/record_io.h"
#include "common/sample_window.h"

namespace cmax::bench {

// nvmlClocksEventReasons bits (NVML API reference, "ClocksEventReasons").
inline constexpr uint64_t kReasonGpuIdle = 0x1;
inline constexpr uint64_t kReasonApplicationsClocks = 0x2;
inline constexpr uint64_t kReasonSwPowerCap = 0x4;
inline constexpr uint64_t kReasonHwSlowdown = 0x8;
inline constexpr uint64_t kReasonSyncBoost = 0x10;
inline constexpr uint64_t kReasonSwThermal = 0x20;
inline constexpr uint64_t kReasonHwThermal = 0x40;
inline constexpr uint64_t kReasonHwPowerBrake = 0x80;
inline constexpr uint64_t kReasonDisplayClock = 0x100;

// Drops the idle and application-clock bits: neither slows a loaded GPU
// against what it was asked to run at.
uint64_t MaskThrottleReasons(uint64_t reasons);
// "sw_power_cap", "hw_thermal", ... for each set bit (unknown bits as hex).
std::vector<std::string> ThrottleReasonNames(uint64_t reasons);
// Bits that mean the GPU is too hot or the board's power delivery stepped
// in: HW slowdown, SW/HW thermal slowdown, HW power brake. SW power cap is
// not among them: a dense GEMM reaching the board's configured power limit
// is the GPU working as designed (it is reported, as info).
inline constexpr uint64_t kThermalOrHwPowerReasons =
    kReasonHwSlowdown | kReasonSwThermal | kReasonHwThermal | kReasonHwPowerBrake;

// Seconds spent throttled (any masked reason) and per reason.
class ThrottleTracker {
 public:
  // `reasons` as the driver reported them, held for `seconds`.
  void Add(uint64_t reasons, double seconds);
  double throttled_s() const { return throttled_s_; }
  double seconds_for(uint64_t bits) const;  // time any of `bits` was set
  const std::map<std::string, double>& by_reason() const { return by_reason_; }
  uint64_t seen() const { return seen_; }  // OR of every masked reason seen

 private:
  double throttled_s_ = 0;
  std::map<std::string, double> by_reason_;
  std::map<uint64_t, double> by_bit_;
  uint64_t seen_ = 0;
};

// Telemetry of a reading into the window: the metric names every Sample uses.
void AddTelemetry(const GpuTelemetry& t, SampleWindow* window);

// Throughput over windows: mean (total work over total time), the slowest
// window, and the coefficient of variation (population stddev / mean).
struct ThroughputStats {
  double mean = 0, min_window = 0, cv = 0;
  int windows = 0;
};
ThroughputStats ComputeThroughput(const std::vector<double>& window_tflops, double total_tflop,
                                  double seconds);

// An NVIDIA Xid (or an NVSwitch SXid) seen in the kernel log during the burn-in.
struct BurninXid {
  bool sxid = false;
  bool fatal = false;  // SXid only: the driver printed "Fatal"
  int code = 0;
  std::string pci;   // as printed ("0000:18:00"); empty when not printed
  std::string text;  // the kernel log line
};

// What the Xid catalogue (benchmarks/health/data/xid_catalog.yaml) says about
// a code; the caller turns its catalogue into an XidLookup so this file stays
// free of the health suite.
struct XidMeaning {
  std::string name;                           // "GPU has fallen off the bus"
  v1::Severity severity = v1::SEVERITY_WARN;  // of one occurrence
  std::string action;                         // in words: "drain and inspect hardware"
  std::string advice;
};
using XidLookup = std::function<XidMeaning(const BurninXid& xid)>;

// What one GPU's burn-in produced.
struct GpuBurninResult {
  int index = 0;
  std::string uuid, pci_bus_id, model;
  std::string error;  // a CUDA / cuBLAS failure that ended the loop early
  bool hung = false;  // a batch did not complete within the hang timeout (error says)
  int64_t iterations = 0;
  double seconds = 0;
  double total_tflop = 0;
  std::vector<double> window_tflops;  // one-second windows
  uint64_t mismatches = 0;            // elements differing from the first iteration
  int64_t first_mismatch_iteration = -1;
  std::optional<double> max_temperature_c, max_memory_temperature_c, max_power_w;
  ThrottleTracker throttle;
  std::optional<uint64_t> ecc_corrected_start, ecc_corrected_end;
  std::optional<uint64_t> ecc_uncorrected_start, ecc_uncorrected_end;
  std::string nvml_state;             // DescribeTelemetry of the last reading
  std::string telemetry_error;        // why telemetry is missing, when it is
  bool kernel_log_watched = false;    // the Xid watch ran for the whole burn-in
  std::vector<BurninXid> xids;        // Xids on this GPU's PCI address during the run
};

// Gives each GPU the Xids printed for its PCI address; returns those that
// match no GPU (another GPU of the node, an NVSwitch, no address).
// `normalize` maps an address to a comparable form ("0000:18:00.0",
// "00000000:18:00.0" and "PCI:0000:18:00" alike; health::NormalizePciAddress);
// an address it maps to "" matches nothing.
std::vector<BurninXid> AssignXids(std::vector<BurninXid> xids,
                                  const std::function<std::string(const std::string&)>& normalize,
                                  std::vector<GpuBurninResult>* gpus);

struct BurninContext {
  std::string node;     // CMAX_NODE_NAME, else the host name
  std::string dtype;    // bf16 | fp32
  std::string command;  // the command line, for evidence
  int64_t size = 0;     // n of the n x n x n GEMM
  bool fault_injected = false;
  // The kernel log watch: the catalogue lookup for Xid findings (unset: every
  // Xid is a WARN "unknown Xid"), why the log could not be watched (empty:
  // it was), and the last lines seen during the run (bounded by the caller),
  // evidence on a mismatch or CUDA error.
  XidLookup xid_lookup;
  std::string kernel_log_error;
  std::vector<std::string> recent_kernel_lines;
};

// Writes per GPU the Measurements burnin_tflops_mean, burnin_tflops_min_window,
// burnin_cv, burnin_max_temp_c (and burnin_max_memory_temp_c), burnin_throttled_s
// (any reason) split into burnin_throttled_hot_s (kThermalOrHwPowerReasons) and
// burnin_power_capped_s, burnin_seconds (the last four only with telemetry),
// burnin_mismatches (labels gpu, uuid, pci_bus_id, model, dtype) and the
// Findings (category reliability, naming node, GPU index, UUID and PCI bus id):
//   mismatches        -> CRITICAL burnin.gpu_mismatch ("silent data corruption suspect")
//   new uncorrected ECC -> FAIL burnin.ecc_errors; new corrected ECC -> WARN
//   thermal / HW power throttling -> WARN burnin.throttled; SW power cap -> INFO
//   GPU hang          -> FAIL burnin.gpu_hang (a batch did not finish in time)
//   CUDA error        -> FAIL burnin.cuda_error
//   Xids              -> burnin.xid, one per code, the catalogue's severity and action
//   telemetry_error   -> burnin.telemetry_not_measured (INFO, not_measured set)
// with burnin_xids (count) when the kernel log was watched; and, on a FAIL or
// CRITICAL, an Artifact with the NVML state and the kernel log lines (the
// GPU's Xid lines; on a mismatch or CUDA error also ctx.recent_kernel_lines).
// Returns true when anything failed (FAIL or CRITICAL).
bool ReportGpuBurnin(const GpuBurninResult& r, const BurninContext& ctx, RecordWriter* out);

// The node's part of the Xid watch: with ctx.kernel_log_error set, a Log
// and an INFO finding burnin.xid_not_measured (subject "node", not_measured
// set: never "no Xids") saying Xids
// during the burn-in were not measured and why; otherwise burnin.xid findings
// (subject "node") for the Xids that matched no burned GPU, with an Artifact
// of their lines when one fails. Returns true when anything failed.
bool ReportNodeXids(const std::vector<BurninXid>& unmatched, const BurninContext& ctx,
                    RecordWriter* out);

}  // namespace cmax::bench

#endif  // CMAX_BENCHMARKS_BURNIN_GPU_BURNIN_REPORT_H_
