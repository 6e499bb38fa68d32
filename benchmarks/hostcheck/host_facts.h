// Readers of the facts hostcheck judges: GPUs on the PCI bus, the NVIDIA
// driver, CPUs, memory, swap, NUMA nodes, the root file system, the clock,
// and the identity of the host (hostname, kernel, OS, boot id).
//
// Every reader takes a Sysroot, so tests run them on fixture trees
// (tests/fixtures/hostcheck/). Parsers take text and are pure. A reader
// returns NOT_FOUND when the file or directory it needs is absent and another
// error when it is there but unreadable or malformed; callers turn both into
// "not measured", never into a pass.
#ifndef CMAX_BENCHMARKS_HOSTCHECK_HOST_FACTS_H_
#define CMAX_BENCHMARKS_HOSTCHECK_HOST_FACTS_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/sysroot.h"

namespace cmax::bench::hostcheck {

// ---- GPUs on the PCI bus (Documentation/ABI/testing/sysfs-bus-pci) ----

// One NVIDIA GPU function on the PCI bus.
struct PciGpu {
  std::string bus_id;       // "0000:18:00.0" (the sysfs directory name)
  uint32_t device_id = 0;   // 0x2330
  uint32_t class_code = 0;  // 0x030200
  std::string model;        // NvidiaGpuModel(device_id)
};

// A sysfs hex attribute such as "0x10de\n"; nullopt when malformed.
std::optional<uint32_t> ParseSysfsHex(absl::string_view text);

// True for a display controller NVIDIA GPUs use: class 0x0300xx (VGA) or
// 0x0302xx (3D controller). NVSwitches (0x0680xx, bridge) and HD audio
// functions (0x0403xx) are not GPUs.
bool IsGpuClass(uint32_t class_code);

// NVIDIA GPUs under /sys/bus/pci/devices in PCI bus id order (the order
// CUDA_DEVICE_ORDER=PCI_BUS_ID and nvidia-smi use on one domain). NOT_FOUND
// when that directory does not exist. A device whose vendor or class cannot
// be read is skipped.
absl::StatusOr<std::vector<PciGpu>> ReadNvidiaGpus(const Sysroot& root);

// ---- NVIDIA kernel driver ----

struct DriverInfo {
  bool loaded = false;              // the proc file or /sys/module/nvidia exists
  std::string version;              // "580.65.06"; empty when unknown
  bool open_kernel_module = false;  // "Open Kernel Module" in the NVRM line
  std::string source;               // the file the version was read from
  std::string proc_version;         // from /proc/driver/nvidia/version
  std::string module_version;       // from /sys/module/nvidia/version
};

// The version in the "NVRM version:" line of /proc/driver/nvidia/version,
// both "NVIDIA UNIX x86_64 Kernel Module  550.135  <date>" and
// "NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build ...".
// INVALID_ARGUMENT when there is no such line or no version in it.
absl::StatusOr<std::string> ParseNvrmVersion(absl::string_view text,
                                             bool* open_kernel_module = nullptr);

// Reads /proc/driver/nvidia/version, then /sys/module/nvidia/version.
DriverInfo ReadDriver(const Sysroot& root);

// ---- CPUs, memory, swap, NUMA ----

// Logical CPUs in a kernel CPU list ("0-63,128-191" -> 128).
// INVALID_ARGUMENT when malformed or empty.
absl::StatusOr<int> CountCpuList(absl::string_view list);
// "processor : N" lines in /proc/cpuinfo text.
int CountCpuinfoProcessors(absl::string_view cpuinfo);

struct CpuCount {
  int logical_cpus = 0;  // hardware threads online
  std::string source;    // the file it came from
};
// /sys/devices/system/cpu/online (what sysconf(_SC_NPROCESSORS_ONLN) reads),
// falling back to /proc/cpuinfo.
absl::StatusOr<CpuCount> ReadCpuCount(const Sysroot& root);

// A "Key:   123 kB" line of /proc/meminfo (Documentation/filesystems/proc.rst),
// in KiB. NOT_FOUND when the key is absent, INVALID_ARGUMENT when malformed.
absl::StatusOr<uint64_t> ParseMeminfoKib(absl::string_view meminfo,
                                         absl::string_view key);
// MemTotal in KiB.
absl::StatusOr<uint64_t> ReadMemTotalKib(const Sysroot& root);

// One active swap area from /proc/swaps.
struct SwapArea {
  std::string name;  // "/swapfile", "/dev/sda2"
  std::string type;  // "file", "partition"
  uint64_t size_kib = 0;
  uint64_t used_kib = 0;
};
// /proc/swaps: a header line, then "Filename Type Size Used Priority" rows
// (sizes in KiB). INVALID_ARGUMENT when a row is malformed.
absl::StatusOr<std::vector<SwapArea>> ParseSwaps(absl::string_view text);
absl::StatusOr<std::vector<SwapArea>> ReadSwaps(const Sysroot& root);

// node<N> directories under /sys/devices/system/node; NOT_FOUND when that
// directory is absent (kernel without NUMA support or no sysfs).
absl::StatusOr<int> CountNumaNodes(const Sysroot& root);

// ---- identity ----

// PRETTY_NAME from os-release text (quotes removed); empty when absent.
std::string ParseOsReleasePrettyName(absl::string_view text);

struct HostIdentity {
  std::string hostname;  // /proc/sys/kernel/hostname
  std::string kernel;    // /proc/sys/kernel/osrelease
  std::string boot_id;   // /proc/sys/kernel/random/boot_id
  std::string os;        // PRETTY_NAME of /etc/os-release (or /usr/lib/os-release)
};
// Each field empty when its file is unreadable.
HostIdentity ReadHostIdentity(const Sysroot& root);

// ---- root file system ----

struct DiskSpace {
  std::string path;  // what statvfs was called on
  uint64_t total_bytes = 0;
  uint64_t avail_bytes = 0;  // available to unprivileged users (f_bavail)
  double free_pct = 0;       // avail / total * 100
};
// statvfs(root + "/"). Errors carry the path and errno text.
absl::StatusOr<DiskSpace> ReadRootDiskSpace(const Sysroot& root);

// ---- clock ----

enum class ClockState { kSynchronized, kUnsynchronized, kNotMeasured };

struct ClockSync {
  ClockState state = ClockState::kNotMeasured;
  std::string how;  // how it was determined, or why it was not
};

// Interprets the kernel NTP state: adjtimex() return value and status word
// (see adjtimex(2)). TIME_ERROR or STA_UNSYNC means not synchronised.
ClockSync InterpretAdjtimex(int return_value, int status, long maxerror_us);

// Real system (root "/"): adjtimex() with modes 0 (read only). Under a fixture
// root: the test seam file /run/cmax-test/clock_synchronized ("1"/"yes"/"true"
// or "0"/"no"/"false"); without it the clock is not measured.
ClockSync ReadClockSync(const Sysroot& root);

}  // namespace cmax::bench::hostcheck

#endif  // CMAX_BENCHMARKS_HOSTCHECK_HOST_FACTS_H_
