// What /proc/cpuinfo says about a node's CPUs, read the same way on x86-64
// and on aarch64 (Grace), for every reader of that file (hostcheck, the
// agent's fallback inventory, the consistency suite's model label).
//
// Formats (Linux Documentation/filesystems/proc.rst; one block a logical CPU,
// each starting "processor\t: N"):
//  - x86 (arch/x86/kernel/cpu/proc.c) writes "model name\t: Intel(R) Xeon(R)
//    Platinum 8480+" in every block, with "physical id" and "core id".
//  - arm64 (arch/arm64/kernel/cpuinfo.c, c_show()) writes no model name and
//    no socket: "processor", "BogoMIPS", "Features", "CPU implementer\t:
//    0x41", "CPU architecture: 8", "CPU variant\t: 0x0", "CPU part\t: 0xd4f",
//    "CPU revision\t: 0". The implementer and part are fields of the MIDR_EL1
//    register; the name of the core is a table lookup (ArmCoreName), which
//    is what lscpu does (util-linux sys-utils/lscpu-arm.c).
// Sockets and NUMA nodes are not in this file on arm64: they come from sysfs
// (benchmarks/hostcheck/cpu_topology.h).
#ifndef CMAX_COMMON_CPUINFO_H_
#define CMAX_COMMON_CPUINFO_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace cmax {

// One kind of Arm core found in the file: its MIDR implementer and part, and
// how many processors have it.
struct ArmCoreType {
  uint32_t implementer = 0;  // "CPU implementer": 0x41 is Arm Ltd
  uint32_t part = 0;         // "CPU part": 0xd4f is Neoverse V2
  int processors = 0;
};

struct CpuinfoSummary {
  int processors = 0;      // "processor" lines (logical CPUs the kernel lists)
  std::string model_name;  // the first "model name" (x86; absent on arm64)
  // Distinct (implementer, part) pairs in order of first appearance; one on
  // a server, more on big.LITTLE parts.
  std::vector<ArmCoreType> arm_cores;
};

// Pure: `text` is the whole of /proc/cpuinfo. Keys are matched after
// trimming, so "CPU architecture: 8" (no tab) reads like the others; a value
// that is not hex (implementer, part) leaves that block out of arm_cores.
CpuinfoSummary ParseCpuinfo(absl::string_view text);

// "Arm Neoverse-V2" for (0x41, 0xd4f); nullopt for a pair the table lacks.
// The table holds the Arm Ltd server cores (Neoverse) and their sources.
std::optional<std::string> ArmCoreName(uint32_t implementer, uint32_t part);

// The node's CPU model in words: where the file has Arm implementer/part
// fields, the core name(s) ("Arm Neoverse-V2"; mixed cores joined with
// " + "; "Arm implementer 0x41 part 0xd99" for a core the table lacks);
// otherwise the model name (x86); empty when the text names no model.
std::string CpuModelName(const CpuinfoSummary& summary);

}  // namespace cmax

#endif  // CMAX_COMMON_CPUINFO_H_
