// The watch's polled signals: systemd units, file systems, InfiniBand and
// Ethernet (RoCE) ports, GPUs. Each is read into a snapshot; the finding is
// raised on a change between two snapshots (edge-triggered), so a state that
// stays bad is reported once, and its return to health once (info).
//
// Check ids (matched by remediation policies, docs/remediation.md):
//   watch.service.failed / .recovered      a listed unit left / came back to "active"
//   watch.fs.full / .readonly              use crossed the threshold / mount turned read-only
//   watch.ib.port_down / .link_flap / .errors
//   watch.gpu.lost / .missing / .remap_pending / .remap_failed / .ecc_dbe /
//   watch.gpu.retired_pages / .throttle
// The first snapshot is compared with an all-healthy one, so a bad state
// found at start is reported too (label `at_start`: "true").
#ifndef CMAX_BENCHMARKS_WATCH_STATE_SIGNALS_H_
#define CMAX_BENCHMARKS_WATCH_STATE_SIGNALS_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/health/gpu_probe.h"
#include "benchmarks/health/ib_ports.h"
#include "cmax/v1/record.pb.h"
#include "common/sysroot.h"

namespace cmax::watch {

// ---------------------------------------------------------------- units

struct UnitState {
  std::string active_state;  // active, inactive, failed, activating, ...
  std::string sub_state;     // running, dead, failed, ...
  std::string result;        // success, exit-code, signal, ...
  std::string load_state;    // loaded, not-found, masked, ...
};
using UnitStates = std::map<std::string, UnitState>;  // by unit name

// `systemctl show -p Id -p LoadState -p ActiveState -p SubState -p Result U1 ...`:
// one block of KEY=VALUE lines per unit, blocks separated by a blank line.
// A block without Id= is skipped.
UnitStates ParseSystemctlShow(const std::string& text);

// Findings for units that left or came back to "active". A unit that is not
// installed (LoadState=not-found) raises none: the watch says it is not
// watched (NotInstalled) instead of calling it failed.
std::vector<v1::Finding> UnitFindings(const UnitStates& before, const UnitStates& now);
std::vector<std::string> NotInstalled(const UnitStates& now);

// --------------------------------------------------------- file systems

struct FsState {
  double used_percent = 0;
  bool readonly = false;
};
using FsStates = std::map<std::string, FsState>;  // by mount point as given

// statvfs of <root>/<mount> for each mount point; one that cannot be read is
// left out and named in *errors.
FsStates ReadFilesystems(const Sysroot& root, const std::vector<std::string>& mounts,
                         std::vector<std::string>* errors);

std::vector<v1::Finding> FsFindings(const FsStates& before, const FsStates& now,
                                    double full_percent);

// ---------------------------------------------------------------- ports

std::vector<v1::Finding> PortFindings(const std::vector<health::IbPort>& before,
                                      const std::vector<health::IbPort>& now);

// ----------------------------------------------------------------- GPUs

// `before` empty with `first` true: the first probe (compared with health).
// A GPU of `before` absent from `now` is "missing" (fallen off the bus
// without an Xid).
std::vector<v1::Finding> GpuFindings(const health::GpuInventory& before,
                                     const health::GpuInventory& now, bool first);

}  // namespace cmax::watch

#endif  // CMAX_BENCHMARKS_WATCH_STATE_SIGNALS_H_
