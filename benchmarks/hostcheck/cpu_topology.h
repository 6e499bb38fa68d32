// The CPU side of a node from sysfs, the same on x86-64 and on aarch64
// (Grace): the CPU model (common/cpuinfo.h), sockets (physical package ids),
// and NUMA nodes, told apart by what they hold: CPUs (with or without
// memory), memory only, or nothing.
//
// Memory-only nodes are real on the machines cmax rates: on a Grace host in
// the default NUMA mode (CDMM off) each GPU's HBM is onlined as system
// memory on NUMA nodes with no CPUs (a GB200 tray lists 34 nodes: 2 Grace
// nodes with CPUs, 8 for each of its 4 GPUs, one of them holding the HBM);
// CPU HBM in flat mode and Power9 GPU memory look the same. They are never
// sockets, never part of a CPU node balance, and their memory is not the
// host's (MemTotal of /proc/meminfo counts it).
//
// Formats (Linux Documentation/ABI/stable/sysfs-devices-node and
// Documentation/ABI/testing/sysfs-devices-system-cpu,
// Documentation/admin-guide/cputopology.rst):
//  - /sys/devices/system/node/node<N>/cpulist: a CPU list ("0-71"), an empty
//    line for a node without CPUs.
//  - /sys/devices/system/node/node<N>/meminfo: "Node <N> MemTotal:  <n> kB"
//    and more lines of that shape (kB means KiB).
//  - /sys/devices/system/cpu/cpu<N>/topology/physical_package_id: the
//    socket's id, any integer (on arm64 ACPI systems a PPTT node's id or
//    offset, not necessarily 0..n-1), so sockets are counted as distinct ids.
#ifndef CMAX_BENCHMARKS_HOSTCHECK_CPU_TOPOLOGY_H_
#define CMAX_BENCHMARKS_HOSTCHECK_CPU_TOPOLOGY_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/sysroot.h"

namespace cmax::bench::hostcheck {

// ---- CPU model ----

struct CpuModel {
  std::string name;    // "Arm Neoverse-V2", "Intel(R) Xeon(R) Platinum 8480+"
  std::string source;  // how it was named, e.g. "CPU implementer 0x41, CPU part 0xd4f"
};
// From /proc/cpuinfo (CpuModelName). NOT_FOUND when the file is absent,
// INVALID_ARGUMENT when it names no model.
absl::StatusOr<CpuModel> ReadCpuModel(const Sysroot& root);

// ---- sockets ----

struct CpuSockets {
  int sockets = 0;     // distinct physical_package_id values
  int cpus_read = 0;   // online CPUs whose id was read
  std::string source;  // "/sys/devices/system/cpu/cpu*/topology/physical_package_id"
};
// Over the CPUs in /sys/devices/system/cpu/online. NOT_FOUND when no CPU has
// the file (a fixture without topology, a kernel without it); a CPU whose
// file is missing is left out of cpus_read.
absl::StatusOr<CpuSockets> ReadCpuSockets(const Sysroot& root);

// ---- NUMA nodes ----

struct NumaNode {
  int id = -1;
  int cpus = 0;                           // CPUs in cpulist
  std::string cpulist;                    // as the file says it ("" for none)
  std::optional<uint64_t> mem_total_kib;  // "Node N MemTotal"; nullopt unreadable
  bool has_cpus() const { return cpus > 0; }
  // No CPUs, but memory: device or high-bandwidth memory (a Grace-attached
  // GPU's HBM on NVLink-C2C).
  bool memory_only() const { return cpus == 0 && mem_total_kib.value_or(0) > 0; }
};

struct NumaTopology {
  std::vector<NumaNode> nodes;  // by id
  int WithCpus() const;
  int MemoryOnly() const;
  // Neither CPUs nor memory (a GPU's spare nodes, kept for MIG partitions).
  int Empty() const;
  // Sum of MemTotal over the nodes with CPUs; nullopt when one is unreadable.
  std::optional<uint64_t> CpuNodeMemKib() const;
  // Sum of MemTotal over the memory-only nodes (0 when there are none).
  uint64_t MemoryOnlyKib() const;
};

// "Node 2 MemTotal:  194018304 kB" in a node's meminfo text, in KiB.
// NOT_FOUND without such a line, INVALID_ARGUMENT when it is malformed.
absl::StatusOr<uint64_t> ParseNodeMemTotalKib(absl::string_view meminfo, int node);

// node<N> directories under /sys/devices/system/node with their cpulist and
// meminfo. NOT_FOUND when that directory is absent; a malformed cpulist is
// INVALID_ARGUMENT naming the file.
absl::StatusOr<NumaTopology> ReadNumaTopology(const Sysroot& root);

// Why the NUMA nodes with CPUs are unbalanced, one line a reason; empty when
// they are balanced or fewer than two have CPUs. Compared: CPUs per node
// (all equal), and MemTotal per node where every CPU node's is readable (the
// smallest at least kMinNodeMemRatio of the largest). Memory-only and empty
// nodes are never compared.
inline constexpr double kMinNodeMemRatio = 0.9;
std::vector<std::string> NumaImbalances(const NumaTopology& topology);

}  // namespace cmax::bench::hostcheck

#endif  // CMAX_BENCHMARKS_HOSTCHECK_CPU_TOPOLOGY_H_
