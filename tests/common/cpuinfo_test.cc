// /proc/cpuinfo of x86 and arm64 (Grace) hosts read into a model name and a
// processor count (common/cpuinfo.h).
#include "common/cpuinfo.h"

#include <catch2/catch.hpp>
#include <string>

#include "common/sysroot.h"

namespace {

// One processor block as an x86 kernel writes it (abridged).
constexpr char kXeonBlock[] =
    "processor\t: %d\n"
    "vendor_id\t: GenuineIntel\n"
    "cpu family\t: 6\n"
    "model\t\t: 143\n"
    "model name\t: Intel(R) Xeon(R) Platinum 8480+\n"
    "physical id\t: 0\n"
    "core id\t\t: 0\n\n";

// One block of a Grace host: the fields and values of a published Grace
// /proc/cpuinfo (tests/fixtures/hostcheck/grace-gb200/README.md).
std::string GraceBlock(int n) {
  return "processor\t: " + std::to_string(n) +
         "\n"
         "BogoMIPS\t: 2000.00\n"
         "Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp "
         "cpuid asimdrdm jscvt fcma lrcpc dcpop sha3 sm3 sm4 asimddp sha512 sve asimdfhm "
         "dit uscat ilrcpc flagm sb paca pacg dcpodp sve2 sveaes svepmull svebitperm "
         "svesha3 svesm4 flagm2 frint svei8mm svebf16 i8mm bf16 dgh bti\n"
         "CPU implementer\t: 0x41\n"
         "CPU architecture: 8\n"
         "CPU variant\t: 0x0\n"
         "CPU part\t: 0xd4f\n"
         "CPU revision\t: 0\n\n";
}

std::string Xeon(int n) {
  char buf[sizeof(kXeonBlock) + 8];
  std::string out;
  for (int i = 0; i < n; ++i) {
    std::snprintf(buf, sizeof(buf), kXeonBlock, i);
    out += buf;
  }
  return out;
}

}  // namespace

TEST_CASE("cpuinfo: an x86 host is named by its model name line", "[cpuinfo]") {
  cmax::CpuinfoSummary s = cmax::ParseCpuinfo(Xeon(4));
  CHECK(s.processors == 4);
  CHECK(s.model_name == "Intel(R) Xeon(R) Platinum 8480+");
  CHECK(s.arm_cores.empty());
  CHECK(cmax::CpuModelName(s) == "Intel(R) Xeon(R) Platinum 8480+");
}

TEST_CASE("cpuinfo: a Grace host has no model name and is named from implementer/part",
          "[cpuinfo]") {
  std::string text;
  for (int i = 0; i < 72; ++i) text += GraceBlock(i);
  cmax::CpuinfoSummary s = cmax::ParseCpuinfo(text);
  CHECK(s.processors == 72);
  CHECK(s.model_name.empty());  // what an x86-only reader would have reported
  REQUIRE(s.arm_cores.size() == 1);
  CHECK(s.arm_cores[0].implementer == 0x41);
  CHECK(s.arm_cores[0].part == 0xd4f);
  CHECK(s.arm_cores[0].processors == 72);
  CHECK(cmax::CpuModelName(s) == "Arm Neoverse-V2");
}

TEST_CASE("cpuinfo: the Arm core table and what lies outside it", "[cpuinfo]") {
  CHECK(cmax::ArmCoreName(0x41, 0xd0c) == "Arm Neoverse-N1");
  CHECK(cmax::ArmCoreName(0x41, 0xd40) == "Arm Neoverse-V1");
  CHECK(cmax::ArmCoreName(0x41, 0xd49) == "Arm Neoverse-N2");
  CHECK(cmax::ArmCoreName(0x41, 0xd4f) == "Arm Neoverse-V2");
  CHECK(cmax::ArmCoreName(0x41, 0xd84) == "Arm Neoverse-V3");
  CHECK(cmax::ArmCoreName(0x41, 0xd8e) == "Arm Neoverse-N3");
  CHECK_FALSE(cmax::ArmCoreName(0x41, 0xd99).has_value());
  // The part number alone is not the core: another implementer's 0xd4f is
  // not an Arm Neoverse-V2.
  CHECK_FALSE(cmax::ArmCoreName(0x48, 0xd4f).has_value());

  // A core outside the table is named by its ids, never left empty.
  auto ampere = cmax::ParseCpuinfo(
      "processor\t: 0\nCPU implementer\t: 0xc0\nCPU architecture: 8\n"
      "CPU variant\t: 0x0\nCPU part\t: 0xac3\nCPU revision\t: 1\n");
  CHECK(cmax::CpuModelName(ampere) == "Arm implementer 0xc0 part 0xac3");
}

TEST_CASE("cpuinfo: mixed cores, compat model names and malformed fields", "[cpuinfo]") {
  // Two kinds of core, in order of first appearance.
  auto mixed = cmax::ParseCpuinfo(
      "processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: 0xd49\n\n"
      "processor\t: 1\nCPU implementer\t: 0x41\nCPU part\t: 0xd4f\n\n"
      "processor\t: 2\nCPU implementer\t: 0x41\nCPU part\t: 0xd49\n");
  REQUIRE(mixed.arm_cores.size() == 2);
  CHECK(mixed.arm_cores[0].processors == 2);
  CHECK(cmax::CpuModelName(mixed) == "Arm Neoverse-N2 + Arm Neoverse-V2");

  // A 32-bit reader of an arm64 kernel's file also sees a generic model name.
  auto compat = cmax::ParseCpuinfo(
      "processor\t: 0\nmodel name\t: ARMv8 Processor rev 0 (v8l)\n"
      "CPU implementer\t: 0x41\nCPU part\t: 0xd4f\n");
  CHECK(cmax::CpuModelName(compat) == "Arm Neoverse-V2");

  // A part that is not hex leaves its block unnamed; processors still count.
  auto bad =
      cmax::ParseCpuinfo("processor\t: 0\nCPU implementer\t: 0x41\nCPU part\t: ?\n");
  CHECK(bad.processors == 1);
  CHECK(bad.arm_cores.empty());
  CHECK(cmax::CpuModelName(bad).empty());

  auto empty = cmax::ParseCpuinfo("");
  CHECK(empty.processors == 0);
  CHECK(cmax::CpuModelName(empty).empty());
}

TEST_CASE("cpuinfo: the GB200 fixture reads as 144 Neoverse-V2 processors", "[cpuinfo]") {
  cmax::Sysroot root(std::string(CMAX_SOURCE_DIR) +
                     "/tests/fixtures/hostcheck/grace-gb200");
  auto text = root.Read("/proc/cpuinfo");
  REQUIRE(text.ok());
  cmax::CpuinfoSummary s = cmax::ParseCpuinfo(*text);
  CHECK(s.processors == 144);
  REQUIRE(s.arm_cores.size() == 1);
  CHECK(s.arm_cores[0].processors == 144);
  CHECK(cmax::CpuModelName(s) == "Arm Neoverse-V2");
}
