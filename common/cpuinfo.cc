#include "common/cpuinfo.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace cmax {
namespace {

struct ArmCore {
  uint32_t implementer;
  uint32_t part;
  const char* name;
};

// MIDR_EL1 implementer 0x41 is Arm Ltd (ARM_CPU_IMP_ARM). Part numbers:
// Linux arch/arm64/include/asm/cputype.h (ARM_CPU_PART_NEOVERSE_N1 0xD0C,
// _V1 0xD40, _N2 0xD49, _V2 0xD4F, _V3 0xD84, _N3 0xD8E); the spelling
// ("Neoverse-V2") is lscpu's (util-linux sys-utils/lscpu-arm.c), which is
// what lscpu prints as "Model name" on a Grace host (NVIDIA Grace CPU
// Benchmarking Guide, "Runtime CPU Detection"). NVIDIA Grace's 72 cores are
// Neoverse V2 (NVIDIA Grace Performance Tuning Guide; a Grace host's
// /proc/cpuinfo shows implementer 0x41, part 0xd4f), as are AWS Graviton4's:
// the part names the core, not the chip.
constexpr ArmCore kArmCores[] = {
    {0x41, 0xd0c, "Neoverse-N1"}, {0x41, 0xd40, "Neoverse-V1"},
    {0x41, 0xd49, "Neoverse-N2"}, {0x41, 0xd4f, "Neoverse-V2"},
    {0x41, 0xd84, "Neoverse-V3"}, {0x41, 0xd8e, "Neoverse-N3"},
};

// "0x41" -> 0x41; false when the value is not hex.
bool ParseHex(absl::string_view value, uint32_t* out) {
  if (!absl::ConsumePrefix(&value, "0x")) absl::ConsumePrefix(&value, "0X");
  return !value.empty() && value.size() <= 8 && absl::SimpleHexAtoi(value, out);
}

// The MIDR fields of one processor block.
struct Block {
  bool has_implementer = false, has_part = false;
  uint32_t implementer = 0, part = 0;
};

// Adds one processor block's (implementer, part) to `cores`.
void AddCore(const Block& b, std::vector<ArmCoreType>* cores) {
  if (!b.has_implementer || !b.has_part) return;
  for (ArmCoreType& c : *cores) {
    if (c.implementer == b.implementer && c.part == b.part) {
      ++c.processors;
      return;
    }
  }
  cores->push_back({b.implementer, b.part, 1});
}

}  // namespace

CpuinfoSummary ParseCpuinfo(absl::string_view text) {
  CpuinfoSummary s;
  Block block;  // the current processor's
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    std::pair<absl::string_view, absl::string_view> kv =
        absl::StrSplit(line, absl::MaxSplits(':', 1));
    absl::string_view key = absl::StripAsciiWhitespace(kv.first);
    absl::string_view value = absl::StripAsciiWhitespace(kv.second);
    if (key == "processor") {
      // A new block: the previous one's core is complete.
      AddCore(block, &s.arm_cores);
      block = Block();
      ++s.processors;
    } else if (key == "model name") {
      if (s.model_name.empty() && !value.empty()) s.model_name = std::string(value);
    } else if (key == "CPU implementer") {
      block.has_implementer = ParseHex(value, &block.implementer);
    } else if (key == "CPU part") {
      block.has_part = ParseHex(value, &block.part);
    }
  }
  AddCore(block, &s.arm_cores);
  return s;
}

std::optional<std::string> ArmCoreName(uint32_t implementer, uint32_t part) {
  for (const ArmCore& c : kArmCores) {
    if (c.implementer == implementer && c.part == part) {
      return absl::StrCat("Arm ", c.name);
    }
  }
  return std::nullopt;
}

std::string CpuModelName(const CpuinfoSummary& summary) {
  // The MIDR fields first: a 32-bit (compat) reader of an arm64 kernel's
  // file also gets a "model name : ARMv8 Processor rev 0 (v8l)" line, which
  // names no core.
  if (summary.arm_cores.empty()) return summary.model_name;
  std::vector<std::string> names;
  for (const ArmCoreType& c : summary.arm_cores) {
    names.push_back(ArmCoreName(c.implementer, c.part)
                        .value_or(absl::StrFormat("Arm implementer 0x%02x part 0x%03x",
                                                  c.implementer, c.part)));
  }
  return absl::StrJoin(names, " + ");
}

}  // namespace cmax
