// cmax-watch: the passive watch an agent keeps on its node between runs
// (issue 47, docs/remediation.md). It follows the kernel log and polls the
// node's own state, and turns each new signal into a Finding record stamped
// with the time of the signal itself (label `signal_unix_ns`; where the
// signal carries no time of its own, the time it was observed, and
// `signal_time_source` says which), so time to detect is a measured figure.
//
//   Tick (every --tick):  kernel log lines since the last tick   kernel_signals.h
//   every --interval:     listed systemd units, file systems,
//                         InfiniBand/RoCE ports                    state_signals.h
//   every --gpu-interval: the GPU probe (NVML; FileGpuProbe under a fixture root)
//   every --cpu-report:   watch_cpu_percent, the watch's own CPU use
//                         (itself and the commands it ran) as % of one core
//
// What cannot be watched says so once, as a not-measured finding (watch.kmsg,
// watch.service, watch.fs, watch.ib, watch.gpu): a node whose kernel log is
// refused is "not watched", never "no Xids".
//
// The watch runs as the agent's child, never in the agent (an NVML call can
// hang for minutes after an Xid 79). Thread: one thread, the caller's.
#ifndef CMAX_BENCHMARKS_WATCH_WATCH_H_
#define CMAX_BENCHMARKS_WATCH_WATCH_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "benchmarks/health/gpu_probe.h"
#include "benchmarks/health/ib_ports.h"
#include "benchmarks/health/kmsg_follower.h"
#include "benchmarks/health/xid_catalog.h"
#include "benchmarks/watch/state_signals.h"
#include "common/record_io.h"
#include "common/sysroot.h"

namespace cmax::watch {

struct WatchOptions {
  std::string root = "/";
  std::vector<std::string> services;            // unit names (IsSystemdUnitName)
  std::vector<std::string> filesystems = {"/"};  // mount points, absolute
  double fs_full_percent = 95;
  absl::Duration interval = absl::Seconds(5);
  absl::Duration gpu_interval = absl::Seconds(30);
  absl::Duration cpu_report = absl::Seconds(60);
};

// INVALID_ARGUMENT naming the bad value: a unit name, a relative mount
// point, a percentage outside (0, 100], an interval not above zero.
absl::Status ValidateOptions(const WatchOptions& options);

// Seams for tests; empty members get the real thing.
struct WatchSeams {
  // The listed units' states. Default: `systemctl show` on the real root;
  // under a fixture root the file <root>/cmax-fixture/units, in the same
  // KEY=VALUE block format.
  std::function<absl::StatusOr<UnitStates>(const std::vector<std::string>&)> read_units;
  // Default: NVML on the real root; FileGpuProbe where
  // <root>/cmax-fixture/gpus.yaml exists; otherwise none (not measured).
  std::unique_ptr<health::GpuProbe> gpu_probe;
  std::function<absl::Time()> now;
};

class Watch {
 public:
  // `writer` receives every record and outlives the Watch. `print`, when
  // set, also gets each finding (the human output of cmax-watch).
  Watch(WatchOptions options, RecordWriter* writer, WatchSeams seams = {},
        std::function<void(const v1::Finding&)> print = {});
  ~Watch();

  // Opens the kernel log, takes the first snapshots (reporting what is
  // already bad, label at_start) and writes a Log record naming what is
  // watched. Non-OK only when the Xid catalogue does not load.
  absl::Status Start();
  // One round: new kernel log lines, and each poll whose interval is due.
  void Tick();

  int findings() const { return findings_; }

 private:
  void Emit(v1::Finding finding, std::optional<absl::Time> signal_at);
  void NotWatched(const std::string& check, const std::string& category,
                  const std::string& what, const std::string& why);
  void PollKernel(absl::Time now);
  void PollState(bool first);
  void PollGpus(bool first);
  void ReportCpu(absl::Time now);
  absl::Time Now() const;

  WatchOptions options_;
  Sysroot root_;
  RecordWriter* writer_;
  WatchSeams seams_;
  std::function<void(const v1::Finding&)> print_;
  std::optional<health::XidCatalog> catalog_;
  std::unique_ptr<health::KmsgFollower> kmsg_;
  absl::Time boot_;  // wall time of CLOCK_MONOTONIC zero, for kmsg stamps
  UnitStates units_;
  FsStates filesystems_;
  std::vector<health::IbPort> ports_;
  health::GpuInventory gpus_;
  bool gpus_probed_ = false;
  std::string units_error_, fs_error_, gpu_error_;
  absl::Time next_state_, next_gpu_, next_cpu_, cpu_since_;
  double cpu_seconds_at_ = 0;
  int findings_ = 0;
};

// CPU seconds used by this process and its reaped children.
double ProcessCpuSeconds();

}  // namespace cmax::watch

#endif  // CMAX_BENCHMARKS_WATCH_WATCH_H_
