#include "benchmarks/hostcheck/host_facts.h"

#include <sys/timex.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <optional>
#include <string>

#include "benchmarks/hostcheck/cpu_topology.h"
#include "benchmarks/hostcheck/pci_ids.h"
#include "benchmarks/hostcheck/topology.h"

namespace hc = cmax::bench::hostcheck;

namespace {
cmax::Sysroot Fixture(const std::string& name) {
  return cmax::Sysroot(std::string(CMAX_SOURCE_DIR) + "/tests/fixtures/hostcheck/" +
                       name);
}
}  // namespace

TEST_CASE("hostcheck: NVRM lines of both kernel module flavours give the version",
          "[hostcheck]") {
  bool open = true;
  auto v = hc::ParseNvrmVersion(
      "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.135  Fri Jan 10 20:00:00 UTC "
      "2025\n"
      "GCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n",
      &open);
  REQUIRE(v.ok());
  CHECK(*v == "550.135");
  CHECK_FALSE(open);

  v = hc::ParseNvrmVersion(
      "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.65.06  Release Build "
      " "
      "(dvs-builder@U16-I3-B03-4-3)  Sun Jul 27 06:54:38 UTC 2025\n",
      &open);
  REQUIRE(v.ok());
  CHECK(*v == "580.65.06");
  CHECK(open);

  v = hc::ParseNvrmVersion(
      "NVRM version: NVIDIA UNIX Open Kernel Module for aarch64  570.86.15  Release "
      "Build\n");
  REQUIRE(v.ok());
  CHECK(*v == "570.86.15");

  CHECK(absl::IsInvalidArgument(hc::ParseNvrmVersion("GCC version: gcc 12\n").status()));
  CHECK(absl::IsInvalidArgument(
      hc::ParseNvrmVersion("NVRM version: NVIDIA UNIX x86_64 Kernel Module  \n")
          .status()));
}

TEST_CASE("hostcheck: CPU lists and cpuinfo are counted", "[hostcheck]") {
  CHECK(*hc::CountCpuList("0-63\n") == 64);
  CHECK(*hc::CountCpuList("0-31,64-95") == 64);
  CHECK(*hc::CountCpuList("0") == 1);
  CHECK(*hc::CountCpuList("0,2,4-5") == 4);
  CHECK_FALSE(hc::CountCpuList("").ok());
  CHECK_FALSE(hc::CountCpuList("5-3").ok());
  CHECK_FALSE(hc::CountCpuList("a-b").ok());
  CHECK(hc::CountCpuinfoProcessors(
            "processor\t: 0\nmodel name\t: x\n\nprocessor\t: 1\n") == 2);
  CHECK(hc::CountCpuinfoProcessors("") == 0);
}

TEST_CASE("hostcheck: meminfo and swaps and os-release parse", "[hostcheck]") {
  std::string meminfo = "MemTotal:       65536000 kB\nMemFree:        60000000 kB\n";
  CHECK(*hc::ParseMeminfoKib(meminfo, "MemTotal") == 65536000u);
  CHECK(*hc::ParseMeminfoKib(meminfo, "MemFree") == 60000000u);
  CHECK(absl::IsNotFound(hc::ParseMeminfoKib(meminfo, "MemAvailable").status()));
  CHECK(absl::IsInvalidArgument(
      hc::ParseMeminfoKib("MemTotal: lots kB\n", "MemTotal").status()));

  std::string header = "Filename\t\t\t\tType\t\tSize\t\tUsed\t\tPriority\n";
  auto none = hc::ParseSwaps(header);
  REQUIRE(none.ok());
  CHECK(none->empty());
  auto two = hc::ParseSwaps(
      header +
      "/swap.img                               file\t\t8388604\t\t1024\t\t-2\n"
      "/dev/nvme0n1p3                          partition\t2097148\t\t0\t\t-3\n");
  REQUIRE(two.ok());
  REQUIRE(two->size() == 2);
  CHECK((*two)[0].name == "/swap.img");
  CHECK((*two)[0].type == "file");
  CHECK((*two)[0].size_kib == 8388604u);
  CHECK((*two)[0].used_kib == 1024u);
  CHECK((*two)[1].type == "partition");
  CHECK_FALSE(hc::ParseSwaps(header + "/swap.img file big\n").ok());

  CHECK(hc::ParseOsReleasePrettyName("NAME=x\nPRETTY_NAME=\"Ubuntu 22.04.5 LTS\"\n") ==
        "Ubuntu 22.04.5 LTS");
  CHECK(hc::ParseOsReleasePrettyName("PRETTY_NAME=Plain\n") == "Plain");
  CHECK(hc::ParseOsReleasePrettyName("NAME=x\n").empty());
}

TEST_CASE("hostcheck: PCI hex values and GPU classes and model names", "[hostcheck]") {
  CHECK(hc::ParseSysfsHex("0x10de\n") == 0x10deu);
  CHECK(hc::ParseSysfsHex("0x030200") == 0x030200u);
  CHECK_FALSE(hc::ParseSysfsHex("nvidia").has_value());
  CHECK_FALSE(hc::ParseSysfsHex("").has_value());
  CHECK(hc::IsGpuClass(0x030200));        // 3D controller (data-centre GPUs)
  CHECK(hc::IsGpuClass(0x030000));        // VGA
  CHECK_FALSE(hc::IsGpuClass(0x068000));  // NVSwitch: other bridge
  CHECK_FALSE(hc::IsGpuClass(0x040300));  // HD audio function of a GPU board
  CHECK(hc::NvidiaGpuModel(0x2330) == "NVIDIA H100 SXM5 80GB");
  CHECK(hc::NvidiaGpuModel(0x2335) == "NVIDIA H200 SXM 141GB");
  CHECK(hc::NvidiaGpuModel(0x20b2) == "NVIDIA A100 SXM4 80GB");
  CHECK(hc::NvidiaGpuModel(0x2901) == "NVIDIA B200");
  CHECK(hc::NvidiaGpuModel(0x26b9) == "NVIDIA L40S");
  CHECK(hc::NvidiaGpuModel(0x27b8) == "NVIDIA L4");
  CHECK(hc::NvidiaGpuModel(0x1234) == "NVIDIA device 0x1234");
  CHECK_FALSE(hc::IsKnownNvidiaGpu(0x22a3));  // the NVSwitch is not a GPU model
}

TEST_CASE("hostcheck: GPUs of the healthy fixture in bus order without NVSwitches",
          "[hostcheck]") {
  auto gpus = hc::ReadNvidiaGpus(Fixture("healthy-8xh100"));
  REQUIRE(gpus.ok());
  REQUIRE(gpus->size() == 8);
  CHECK((*gpus)[0].bus_id == "0000:18:00.0");
  CHECK((*gpus)[7].bus_id == "0000:db:00.0");
  for (const auto& g : *gpus) {
    CHECK(g.device_id == 0x2330u);
    CHECK(g.class_code == 0x030200u);
    CHECK(g.model == "NVIDIA H100 SXM5 80GB");
  }
  auto missing = hc::ReadNvidiaGpus(Fixture("missing-gpu"));
  REQUIRE(missing.ok());
  CHECK(missing->size() == 7);
  auto cpu = hc::ReadNvidiaGpus(Fixture("cpu-only"));
  REQUIRE(cpu.ok());
  CHECK(cpu->empty());  // the ASPEED VGA controller is not an NVIDIA GPU
  CHECK(absl::IsNotFound(hc::ReadNvidiaGpus(Fixture("no-such-tree")).status()));
}

TEST_CASE("hostcheck: driver open or proprietary or absent", "[hostcheck]") {
  auto open = hc::ReadDriver(Fixture("healthy-8xh100"));
  CHECK(open.loaded);
  CHECK(open.version == "580.65.06");
  CHECK(open.open_kernel_module);
  CHECK(open.source == "/proc/driver/nvidia/version");
  CHECK(open.module_version == "580.65.06");
  auto prop = hc::ReadDriver(Fixture("missing-gpu"));
  CHECK(prop.version == "580.65.06");
  CHECK_FALSE(prop.open_kernel_module);
  auto none = hc::ReadDriver(Fixture("no-driver"));
  CHECK_FALSE(none.loaded);
  CHECK(none.version.empty());
}

TEST_CASE("hostcheck: CPU memory swap NUMA and identity of the fixtures", "[hostcheck]") {
  auto healthy = Fixture("healthy-8xh100");
  auto cpus = hc::ReadCpuCount(healthy);
  REQUIRE(cpus.ok());
  CHECK(cpus->logical_cpus == 64);
  CHECK(cpus->source == "/sys/devices/system/cpu/online");
  CHECK(*hc::ReadMemTotalKib(healthy) == 2113515712u);
  CHECK(hc::ReadSwaps(healthy)->empty());
  CHECK(*hc::CountNumaNodes(healthy) == 2);
  auto id = hc::ReadHostIdentity(healthy);
  CHECK(id.hostname == "gpu-node-01");
  CHECK(id.kernel == "5.15.0-143-generic");
  CHECK(id.os == "Ubuntu 22.04.5 LTS");
  CHECK(id.boot_id.size() == 36);

  auto cpu_only = Fixture("cpu-only");
  auto cpus2 = hc::ReadCpuCount(cpu_only);
  REQUIRE(cpus2.ok());
  CHECK(cpus2->logical_cpus == 4);
  CHECK(cpus2->source == "/proc/cpuinfo");
  auto swaps = hc::ReadSwaps(cpu_only);
  REQUIRE(swaps.ok());
  REQUIRE(swaps->size() == 1);
  CHECK((*swaps)[0].size_kib == 8388604u);
}

TEST_CASE("hostcheck: clock from adjtimex or the fixture seam or not measured",
          "[hostcheck]") {
  CHECK(hc::InterpretAdjtimex(TIME_OK, 0, 1000).state == hc::ClockState::kSynchronized);
  CHECK(hc::InterpretAdjtimex(TIME_ERROR, 0, 16000000).state ==
        hc::ClockState::kUnsynchronized);
  auto unsync = hc::InterpretAdjtimex(TIME_OK, STA_UNSYNC, 16000000);
  CHECK(unsync.state == hc::ClockState::kUnsynchronized);
  CHECK(unsync.how.find("STA_UNSYNC") != std::string::npos);
  CHECK(hc::InterpretAdjtimex(-1, 0, 0).state == hc::ClockState::kNotMeasured);

  CHECK(hc::ReadClockSync(Fixture("healthy-8xh100")).state ==
        hc::ClockState::kSynchronized);
  CHECK(hc::ReadClockSync(Fixture("cpu-only")).state == hc::ClockState::kUnsynchronized);
  auto unknown = hc::ReadClockSync(Fixture("missing-gpu"));
  CHECK(unknown.state == hc::ClockState::kNotMeasured);
  CHECK(unknown.how.find("not measured under a fixture root") != std::string::npos);
  // The real root asks the kernel; whatever the answer, it says how.
  auto real = hc::ReadClockSync(cmax::Sysroot("/"));
  CHECK(real.how.find("adjtimex()") != std::string::npos);
}

TEST_CASE("hostcheck: root file system space is read with statvfs", "[hostcheck]") {
  auto d = hc::ReadRootDiskSpace(Fixture("healthy-8xh100"));
  REQUIRE(d.ok());
  CHECK(d->total_bytes > 0);
  CHECK(d->avail_bytes <= d->total_bytes);
  CHECK(d->free_pct >= 0);
  CHECK(d->free_pct <= 100);
  CHECK_FALSE(hc::ReadRootDiskSpace(Fixture("no-such-tree")).ok());
}

TEST_CASE("hostcheck: on this machine CPUs and memory match sysconf", "[hostcheck]") {
  cmax::Sysroot real("/");
  auto cpus = hc::ReadCpuCount(real);
  REQUIRE(cpus.ok());
  CHECK(cpus->logical_cpus == sysconf(_SC_NPROCESSORS_ONLN));
  auto kib = hc::ReadMemTotalKib(real);
  REQUIRE(kib.ok());
  double sysconf_kib =
      static_cast<double>(sysconf(_SC_PHYS_PAGES)) * sysconf(_SC_PAGESIZE) / 1024;
  CHECK(static_cast<double>(*kib) ==
        Approx(sysconf_kib).margin(sysconf(_SC_PAGESIZE) / 1024));
}

// ---- Grace (GB200 tray): the readers that x86-only code would get wrong ----

TEST_CASE("hostcheck: a GB200 tray's CPUs are 144 Neoverse-V2 cores in 2 sockets",
          "[hostcheck][grace]") {
  auto grace = Fixture("grace-gb200");
  auto cpus = hc::ReadCpuCount(grace);
  REQUIRE(cpus.ok());
  CHECK(cpus->logical_cpus == 144);
  CHECK(cpus->source == "/sys/devices/system/cpu/online");
  // No "model name" in an arm64 /proc/cpuinfo: the model comes from the MIDR
  // implementer and part.
  auto model = hc::ReadCpuModel(grace);
  REQUIRE(model.ok());
  CHECK(model->name == "Arm Neoverse-V2");
  CHECK_THAT(model->source,
             Catch::Contains("CPU implementer 0x41, CPU part 0xd4f (144 CPUs)"));
  // No "physical id" either: sockets come from sysfs.
  auto sockets = hc::ReadCpuSockets(grace);
  REQUIRE(sockets.ok());
  CHECK(sockets->sockets == 2);
  CHECK(sockets->cpus_read == 144);

  // x86 fixtures: the model name line; sockets not measured without topology.
  auto xeon = hc::ReadCpuModel(Fixture("cpu-only"));
  REQUIRE(xeon.ok());
  CHECK(xeon->name == "Intel(R) Xeon(R) Gold 6338 CPU @ 2.00GHz");
  CHECK(absl::IsNotFound(hc::ReadCpuModel(Fixture("healthy-8xh100")).status()));
  CHECK(absl::IsNotFound(hc::ReadCpuSockets(Fixture("healthy-8xh100")).status()));
}

TEST_CASE("hostcheck: a GB200 tray has 2 NUMA nodes with CPUs and 4 holding GPU memory",
          "[hostcheck][grace]") {
  auto grace = Fixture("grace-gb200");
  // What counting node* directories says: 34, the kernel's count (2 Grace
  // nodes and 8 a GPU), not the sockets.
  CHECK(*hc::CountNumaNodes(grace) == 34);
  auto numa = hc::ReadNumaTopology(grace);
  REQUIRE(numa.ok());
  REQUIRE(numa->nodes.size() == 34);
  CHECK(numa->WithCpus() == 2);
  CHECK(numa->MemoryOnly() == 4);
  CHECK(numa->Empty() == 28);
  CHECK(numa->nodes[0].cpus == 72);
  CHECK(numa->nodes[1].cpulist == "72-143");
  CHECK(numa->nodes[2].memory_only());
  CHECK(numa->nodes[2].mem_total_kib == 194018304u);
  CHECK_FALSE(numa->nodes[3].memory_only());  // neither CPUs nor memory
  CHECK(numa->nodes[10].memory_only());
  CHECK(numa->CpuNodeMemKib() == 467304448u + 468361216u);
  CHECK(numa->MemoryOnlyKib() == 4u * 194018304u);
  // /proc/meminfo's MemTotal counts the HBM too.
  CHECK(*hc::ReadMemTotalKib(grace) == *numa->CpuNodeMemKib() + numa->MemoryOnlyKib());
  // The two Grace nodes are balanced; the memory-only nodes are not compared.
  CHECK(hc::NumaImbalances(*numa).empty());

  auto healthy = hc::ReadNumaTopology(Fixture("healthy-8xh100"));
  REQUIRE(healthy.ok());
  CHECK(healthy->WithCpus() == 2);
  CHECK(healthy->MemoryOnly() == 0);
  CHECK_FALSE(healthy->CpuNodeMemKib().has_value());  // no node meminfo there
  CHECK(hc::NumaImbalances(*healthy).empty());
  CHECK(absl::IsNotFound(hc::ReadNumaTopology(Fixture("no-such-tree")).status()));
}

TEST_CASE("hostcheck: node meminfo parses and NUMA imbalance compares CPU nodes only",
          "[hostcheck][grace]") {
  CHECK(*hc::ParseNodeMemTotalKib("Node 1 MemTotal:       468361216 kB\n"
                                  "Node 1 MemFree:        1 kB\n",
                                  1) == 468361216u);
  CHECK(absl::IsNotFound(
      hc::ParseNodeMemTotalKib("Node 0 MemTotal:       1 kB\n", 1).status()));
  CHECK(absl::IsInvalidArgument(
      hc::ParseNodeMemTotalKib("Node 0 MemTotal:       lots kB\n", 0).status()));

  auto node = [](int id, int cpus, std::optional<uint64_t> kib) {
    hc::NumaNode n;
    n.id = id;
    n.cpus = cpus;
    n.cpulist = cpus > 0 ? "0-" + std::to_string(cpus - 1) : "";
    n.mem_total_kib = kib;
    return n;
  };
  hc::NumaTopology t;
  t.nodes = {node(0, 72, 467304448), node(1, 72, 468361216), node(2, 0, 194018304)};
  CHECK(hc::NumaImbalances(t).empty());  // 185 GiB of HBM is not a small socket

  t.nodes[1].mem_total_kib = 233000000;  // half of its DIMMs gone
  auto mem = hc::NumaImbalances(t);
  REQUIRE(mem.size() == 1);
  CHECK_THAT(mem[0], Catch::Contains("node1 has 50% of node0's"));

  t.nodes[1].mem_total_kib = 468361216;
  t.nodes[1].cpus = 64;  // CPUs offline on one socket
  auto cpus = hc::NumaImbalances(t);
  REQUIRE(cpus.size() == 1);
  CHECK_THAT(cpus[0], Catch::Contains("CPUs per NUMA node differ"));

  hc::NumaTopology one;
  one.nodes = {node(0, 72, 1000), node(1, 0, 5000)};
  CHECK(hc::NumaImbalances(one).empty());  // one CPU node: nothing to compare
}

TEST_CASE("hostcheck: a GB200 tray's GPUs are on NVLink-C2C, not PCIe links",
          "[hostcheck][grace]") {
  auto grace = Fixture("grace-gb200");
  auto gpus = hc::ReadNvidiaGpus(grace);
  REQUIRE(gpus.ok());
  REQUIRE(gpus->size() == 4);
  CHECK((*gpus)[0].bus_id == "0008:01:00.0");
  CHECK((*gpus)[3].bus_id == "0019:01:00.0");
  for (const auto& g : *gpus) {
    CHECK(g.model == "NVIDIA HGX GB200");
    CHECK(hc::IsNvlinkC2cGpu(g.device_id));
  }
  CHECK(hc::IsNvlinkC2cGpu(0x2342));        // GH200
  CHECK_FALSE(hc::IsNvlinkC2cGpu(0x2330));  // H100 SXM5: PCIe Gen5 x16 to its host
  CHECK_FALSE(hc::IsNvlinkC2cGpu(0x2901));  // B200 (HGX): PCIe

  // No link files: the link is not described (never read as a slow one).
  auto topo = hc::ReadTopology(grace);
  REQUIRE(topo.ok());
  REQUIRE(topo->gpu_pci.size() == 4);
  for (const auto& p : topo->gpu_pci) {
    CHECK_FALSE(p.link.described);
    CHECK(p.link.width == 0);
  }
  auto h100 = hc::ReadTopology(Fixture("healthy-8xh100"));
  REQUIRE(h100.ok());
  REQUIRE(h100->gpu_pci.size() == 8);
  CHECK(h100->gpu_pci[0].link.described);
  CHECK(h100->gpu_pci[0].link.max_width == 16);
  CHECK(h100->gpu_pci[0].link.max_speed_gts == 32.0);
}
