// GPU–NIC topology (benchmarks/hostcheck/topology.h and its checks in
// hostcheck.cc): the parsers, the readers on trees built from
// tests/fixtures/hostcheck/topology/*.topo, `cmax-bench hostcheck --root
// <tree>` as a user runs it, and the no-RDMA node's records through the
// real scorecard.
#include "benchmarks/hostcheck/topology.h"

#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "cmax/v1/inventory.pb.h"
#include "google/protobuf/util/json_util.h"
#include "reports/run_data.h"
#include "reports/scorecard.h"
#include "tests/benchmarks/hostcheck/topology_tree.h"
#include "tests/benchmarks/suite_run.h"
#include "tests/reports/scorecard_test_util.h"
#include "tests/scratch_dir.h"

namespace hc = cmax::bench::hostcheck;
using cmax::testing::BuildTopologyTree;
using cmax::testing::ScratchDir;
using cmax::testing::SuiteRun;
using cmax::testing::TopologyFixture;

namespace {

struct Tree {
  ScratchDir dir;
  explicit Tree(const std::string& name, cmax::testing::TopologyTreeOptions o = {}) {
    BuildTopologyTree(TopologyFixture(name), dir.path, o);
  }
  cmax::Sysroot root() const { return cmax::Sysroot(dir.path); }
};

// `cmax-bench hostcheck --root=<root>`: with --jsonl its records, without it
// the human table (in `out`, no records).
SuiteRun Hostcheck(const std::string& root, bool jsonl = true) {
  std::vector<std::string> args = {"hostcheck", "--root=" + root};
  if (jsonl) {
    args.push_back("--jsonl");
    return cmax::testing::RunSuite("cmax-bench", args, std::chrono::seconds(30));
  }
  args.insert(args.begin(), std::string(CMAX_TEST_BIN_DIR) + "/cmax-bench");
  auto r = cmax::RunCommand(args, std::chrono::seconds(30));
  REQUIRE(r.ok());
  REQUIRE(r->exit.exited);
  SuiteRun run;
  run.exit_code = r->exit.code;
  run.out = r->out;
  run.err = r->err;
  return run;
}

std::vector<cmax::v1::Finding> Findings(const SuiteRun& r, const std::string& id) {
  std::vector<cmax::v1::Finding> out;
  for (const auto& rec : r.records) {
    if (rec.has_finding() && rec.finding().check_id() == id) out.push_back(rec.finding());
  }
  return out;
}

std::vector<cmax::v1::Measurement> Metrics(const SuiteRun& r, const std::string& name) {
  std::vector<cmax::v1::Measurement> out;
  for (const auto& rec : r.records) {
    if (rec.has_measurement() && rec.measurement().metric() == name)
      out.push_back(rec.measurement());
  }
  return out;
}

std::string Dump(const SuiteRun& r) {
  std::string s = absl::StrCat("exit ", r.exit_code, "\nstderr: ", r.err, "\n");
  for (const auto& rec : r.records)
    absl::StrAppend(&s, cmax::RecordToJsonLine(rec), "\n");
  return s;
}

const char* const kTopologyChecks[] = {
    "hostcheck.gpu_nic_affinity", "hostcheck.nic_rate", "hostcheck.nic_pcie",
    "hostcheck.pcie_acs",         "hostcheck.iommu",    "hostcheck.topology"};

}  // namespace

// ---- parsers ------------------------------------------------------------------

TEST_CASE("topology: sysfs link speeds, IB rates and PCI paths parse",
          "[hostcheck][topology]") {
  CHECK(hc::ParseLinkSpeed("32.0 GT/s PCIe\n") == 32.0);
  CHECK(hc::ParseLinkSpeed("8 GT/s") == 8.0);  // kernels before 5.x
  CHECK(hc::ParseLinkSpeed("2.5 GT/s PCIe") == 2.5);
  CHECK_FALSE(hc::ParseLinkSpeed("Unknown").has_value());
  CHECK(hc::ParseIbRate("400 Gb/sec (4X NDR)") == 400.0);
  CHECK(hc::ParseIbRate("25 Gb/sec (1X EDR)") == 25.0);
  CHECK_FALSE(hc::ParseIbRate("fast").has_value());
  std::string host;
  std::vector<std::string> fns;
  REQUIRE(hc::ParsePciPath(
      "/sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/0000:18:00.0",
      &host, &fns));
  CHECK(host == "pci0000:15");
  CHECK(fns == std::vector<std::string>{"0000:15:01.0", "0000:16:00.0", "0000:17:00.0",
                                        "0000:18:00.0"});
  REQUIRE(hc::ParsePciPath("/sys/devices/pci0000:00/0000:00:01.0/infiniband/mlx5_0",
                           &host, &fns));
  CHECK(fns == std::vector<std::string>{"0000:00:01.0"});
  CHECK_FALSE(hc::ParsePciPath("/sys/devices/virtual/net/lo", &host, &fns));
  CHECK(hc::IsBdf("0000:9a:00.0"));
  CHECK_FALSE(hc::IsBdf("0000:9a:00"));
}

TEST_CASE("topology: the ACS control register is found in the extended capability list",
          "[hostcheck][topology]") {
  using cmax::testing::topology_tree_internal::BridgeConfig;
  auto acs = hc::ParseAcsControl(BridgeConfig(0x1000, 0xc030, true, 0x0015));
  REQUIRE(acs.ok());
  REQUIRE(acs->has_value());
  CHECK(**acs == 0x0015);
  CHECK(
      hc::DescribeAcsControl(0x0015) ==
      "SrcValid+ TransBlk- ReqRedir+ CmpltRedir- UpstreamFwd+ EgressCtrl- DirectTrans-");
  // AER only: no ACS capability, nothing can redirect.
  acs = hc::ParseAcsControl(BridgeConfig(0x1000, 0xc030, false, 0));
  REQUIRE(acs.ok());
  CHECK_FALSE(acs->has_value());
  // What a non-root reader gets: the 64-byte header only.
  acs = hc::ParseAcsControl(BridgeConfig(0x1000, 0xc030, true, 0x0015).substr(0, 64));
  CHECK(acs.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(acs.status().message()), Catch::Contains("root"));
  // 256 bytes: a conventional PCI function, no extended space, so no ACS.
  acs = hc::ParseAcsControl(std::string(256, '\0'));
  REQUIRE(acs.ok());
  CHECK_FALSE(acs->has_value());
  // A list that points back at itself is malformed, not an endless loop.
  std::string loop = BridgeConfig(0x1000, 0xc030, false, 0);
  loop[0x102] = 0x02;  // next = 0x100 (bits 31:20), version 2
  loop[0x103] = 0x10;
  CHECK(hc::ParseAcsControl(loop).status().code() == absl::StatusCode::kInvalidArgument);
}

// ---- readers ------------------------------------------------------------------

TEST_CASE("topology: the DGX-H100-like tree reads as 8 GPUs and 8 NICs paired per switch",
          "[hostcheck][topology]") {
  Tree tree("dgx-h100-clean");
  auto t = hc::ReadTopology(tree.root());
  REQUIRE(t.ok());
  REQUIRE(t->gpus.size() == 8);
  REQUIRE(t->nics.size() == 10);  // 8 GPU-side, 2 storage NICs
  const hc::PciPlace& g0 = t->gpu_pci[0];
  CHECK(g0.path_known);
  CHECK(g0.host_bridge == "pci0000:15");
  CHECK(g0.upstream ==
        std::vector<std::string>{"0000:15:01.0", "0000:16:00.0", "0000:17:00.0"});
  CHECK(g0.link.width == 16);
  CHECK(g0.link.speed_gts == 32.0);
  CHECK(t->nics[0].name == "mlx5_0");
  CHECK(t->nics[0].pci.bdf == "0000:19:00.0");
  CHECK(t->nics[0].netdevs == std::vector<std::string>{"ibp25s0"});
  REQUIRE(t->nics[0].ports.size() == 1);
  CHECK(t->nics[0].ports[0].rate_gbps == 400);
  CHECK(t->nics[0].ports[0].active());
  CHECK(t->nics[6].pci.numa_node == 1);
  CHECK(t->iommu.mode == hc::IommuMode::kPassthrough);

  auto pairs = hc::PairGpusWithNics(*t);
  REQUIRE(pairs.size() == 8);
  CHECK(
      hc::GpuNicMapFact(pairs) ==
      "0000:18:00.0=mlx5_0,0000:1a:00.0=mlx5_1,0000:3a:00.0=mlx5_2,0000:3c:00.0=mlx5_3,"
      "0000:9a:00.0=mlx5_4,0000:9c:00.0=mlx5_5,0000:ba:00.0=mlx5_6,0000:bc:00.0=mlx5_7");
  for (const auto& p : pairs) {
    INFO(p.gpu_bdf);
    CHECK(p.shared_switch);
  }
  CHECK(pairs[0].common_bridge == "0000:16:00.0");
  CHECK(pairs[0].bridges_between ==
        std::vector<std::string>{"0000:16:00.0", "0000:17:00.0", "0000:17:01.0"});
}

TEST_CASE("topology: NICs on their own root ports share no switch with the GPUs",
          "[hostcheck][topology]") {
  Tree tree("dgx-h100-nic-off-switch");
  auto t = hc::ReadTopology(tree.root());
  REQUIRE(t.ok());
  auto pairs = hc::PairGpusWithNics(*t);
  REQUIRE(pairs.size() == 8);
  for (size_t i = 0; i < 6; ++i) CHECK(pairs[i].shared_switch);
  CHECK_FALSE(pairs[6].shared_switch);  // 0000:ba:00.0
  CHECK_FALSE(pairs[7].shared_switch);  // 0000:bc:00.0
  CHECK(pairs[6].bridges_between.empty());
}

TEST_CASE("topology: IOMMU mode from group types, the class folder and the command line",
          "[hostcheck][topology]") {
  ScratchDir d;
  cmax::testing::topology_tree_internal::WriteText(d.path + "/proc/cmdline",
                                                   "ro quiet\n");
  cmax::Sysroot root(d.path);
  CHECK(hc::ReadIommu(root, {}).mode == hc::IommuMode::kOff);
  std::filesystem::create_directories(d.path + "/sys/class/iommu/dmar0");
  CHECK(hc::ReadIommu(root, {}).mode == hc::IommuMode::kUnknown);
  cmax::testing::topology_tree_internal::WriteText(d.path + "/proc/cmdline",
                                                   "ro intel_iommu=on iommu=pt\n");
  auto io = hc::ReadIommu(root, {});
  CHECK(io.mode == hc::IommuMode::kPassthrough);
  CHECK_THAT(io.how, Catch::Contains("iommu=pt"));
  cmax::testing::topology_tree_internal::WriteText(
      d.path + "/sys/kernel/iommu_groups/3/type", "DMA\n");
  io = hc::ReadIommu(root, {});  // the group's type wins over the command line
  CHECK(io.mode == hc::IommuMode::kTranslated);
  CHECK_THAT(io.how, Catch::Contains("DMA x1"));
}

TEST_CASE("topology: this machine's PCI functions resolve and their config space parses",
          "[hostcheck][topology]") {
  cmax::Sysroot real("/");
  const std::vector<std::string> bdfs = real.List("/sys/bus/pci/devices");
  // A test that cannot do what it is for fails: it needs a mounted /sys.
  REQUIRE_FALSE(bdfs.empty());
  for (const std::string& bdf : bdfs) {
    INFO(bdf);
    hc::PciPlace p = hc::ReadPciPlace(real, bdf);
    CHECK(p.path_known);
    CHECK(absl::StartsWith(p.host_bridge, "pci"));
    CHECK(absl::EndsWith(p.path, bdf));
    // As root the whole space is read (OK: an ACS value or none); otherwise
    // only the header, which must say so, never a malformed list.
    auto acs = hc::ReadAcsControl(real, bdf);
    INFO(acs.status().ToString());
    CHECK((acs.ok() || acs.status().code() == absl::StatusCode::kFailedPrecondition));
    if (geteuid() == 0) CHECK(acs.ok());
  }
}

// ---- the suite, as a user runs it ------------------------------------------------

TEST_CASE(
    "topology: the clean DGX-H100-like node has no topology finding and maps every GPU",
    "[hostcheck][topology][cli]") {
  Tree tree("dgx-h100-clean");
  SuiteRun r = Hostcheck(tree.dir.path);
  INFO(Dump(r));
  CHECK(r.exit_code == 0);
  for (const char* id : kTopologyChecks) {
    INFO(id);
    CHECK(Findings(r, id).empty());
  }
  auto map = Metrics(r, "gpu_nic_map");
  REQUIRE(map.size() == 8);
  CHECK(map[0].labels().at("gpu_bdf") == "0000:18:00.0");
  CHECK(map[0].labels().at("nic") == "mlx5_0");
  CHECK(map[0].labels().at("shared_switch") == "yes");
  CHECK(map[0].labels().at("numa") == "0");
  CHECK(map[7].labels().at("nic") == "mlx5_7");
  CHECK(map[7].labels().at("numa") == "1");
  CHECK(Metrics(r, "gpu_pcie_path").size() == 8);

  SuiteRun human = Hostcheck(tree.dir.path, /*jsonl=*/false);
  CHECK(human.exit_code == 0);
  for (const char* row :
       {"gpu_nic_affinity", "nic_rate", "nic_pcie", "pcie_acs", "iommu"}) {
    INFO(row << "\n" << human.out);
    CHECK(human.out.find(row) != std::string::npos);
  }
  CHECK_THAT(human.out, Catch::Contains("8/8"));
  CHECK_THAT(human.out, Catch::Contains("passthrough"));
}

TEST_CASE(
    "topology: the faulty node names the x8 NIC, the slow port, the ACS bridge and "
    "the IOMMU",
    "[hostcheck][topology][cli]") {
  Tree tree("dgx-h100-faults");
  SuiteRun r = Hostcheck(tree.dir.path);
  INFO(Dump(r));
  CHECK(r.exit_code == 1);  // the ACS redirect fails the node

  auto pcie = Findings(r, "hostcheck.nic_pcie");
  REQUIRE(pcie.size() == 1);
  CHECK(pcie[0].severity() == cmax::v1::SEVERITY_WARN);
  CHECK(pcie[0].category() == "networking");
  CHECK(pcie[0].subject() == "nic:mlx5_3");
  CHECK_THAT(pcie[0].title(), Catch::Contains("x8") && Catch::Contains("x16"));
  CHECK_THAT(pcie[0].detail(), Catch::Contains("0000:3d:00.0"));

  auto rate = Findings(r, "hostcheck.nic_rate");
  REQUIRE(rate.size() == 1);
  CHECK(rate[0].severity() == cmax::v1::SEVERITY_WARN);
  CHECK(rate[0].subject() == "nic:mlx5_5");
  CHECK_THAT(rate[0].title(), Catch::Contains("200 Gb/s") && Catch::Contains("400 Gb/s"));
  CHECK_THAT(rate[0].detail(), Catch::Contains("200 Gb/sec (4X HDR)"));

  auto acs = Findings(r, "hostcheck.pcie_acs");
  REQUIRE(acs.size() == 1);
  CHECK(acs[0].severity() == cmax::v1::SEVERITY_FAIL);
  CHECK_FALSE(acs[0].not_measured());
  CHECK(acs[0].subject() == "bridge:0000:99:00.0");
  CHECK_THAT(acs[0].detail(),
             Catch::Contains("ReqRedir+") && Catch::Contains("0000:9a:00.0 <-> mlx5_4"));
  CHECK_THAT(acs[0].action(),
             Catch::Contains("setpci -s 0000:99:00.0") && Catch::Contains("BIOS"));
  CHECK(acs[0].links_size() == 1);

  auto iommu = Findings(r, "hostcheck.iommu");
  REQUIRE(iommu.size() == 1);
  CHECK(iommu[0].severity() == cmax::v1::SEVERITY_WARN);
  CHECK_THAT(iommu[0].detail(), Catch::Contains("DMA-FQ"));
  CHECK_THAT(iommu[0].action(), Catch::Contains("iommu=pt"));

  // Every GPU still shares its switch with a NIC.
  CHECK(Findings(r, "hostcheck.gpu_nic_affinity").empty());

  SuiteRun human = Hostcheck(tree.dir.path, /*jsonl=*/false);
  INFO(human.out);
  CHECK(human.exit_code == 1);
  CHECK_THAT(human.out,
             Catch::Contains("mlx5_3 PCIe link x8 at 32.0 GT/s, its peers x16"));
  CHECK_THAT(human.out,
             Catch::Contains("mlx5_5 port 1 at 200 Gb/s, its peers at 400 Gb/s"));
  CHECK_THAT(human.out, Catch::Contains("ACS redirect enabled on bridge 0000:99:00.0"));
  CHECK_THAT(human.out, Catch::Contains("IOMMU translating DMA"));
}

TEST_CASE("topology: GPUs whose switch has no NIC are named, with their nearest NIC",
          "[hostcheck][topology][cli]") {
  Tree tree("dgx-h100-nic-off-switch");
  SuiteRun r = Hostcheck(tree.dir.path);
  INFO(Dump(r));
  CHECK(r.exit_code == 0);  // warnings only
  auto f = Findings(r, "hostcheck.gpu_nic_affinity");
  REQUIRE(f.size() == 2);
  std::set<std::string> subjects;
  for (const auto& x : f) {
    subjects.insert(x.subject());
    CHECK(x.severity() == cmax::v1::SEVERITY_WARN);
    CHECK(x.category() == "networking");
    CHECK_THAT(x.detail(), Catch::Contains("6 of 8 GPUs") && Catch::Contains("rule:"));
    CHECK_FALSE(x.action().empty());
  }
  CHECK(subjects == std::set<std::string>{"gpu:0000:ba:00.0", "gpu:0000:bc:00.0"});
  auto map = Metrics(r, "gpu_nic_map");
  REQUIRE(map.size() == 8);
  CHECK(map[6].labels().at("shared_switch") == "no");
  CHECK(map[0].labels().at("shared_switch") == "yes");

  SuiteRun human = Hostcheck(tree.dir.path, /*jsonl=*/false);
  CHECK_THAT(human.out,
             Catch::Contains("GPU 0000:ba:00.0 has no RDMA NIC under its PCIe switch"));
}

TEST_CASE(
    "topology: config space read without root leaves ACS not measured, never a pass",
    "[hostcheck][topology][cli]") {
  Tree tree("dgx-h100-faults", {.header_only_config = true});
  SuiteRun r = Hostcheck(tree.dir.path);
  INFO(Dump(r));
  auto acs = Findings(r, "hostcheck.pcie_acs");
  REQUIRE(acs.size() == 1);  // the ReqRedir bridge cannot be seen: no fail, no pass
  CHECK(acs[0].not_measured());
  CHECK(acs[0].category() == "networking");
  CHECK_THAT(acs[0].title(), Catch::Contains("ACS not measured"));
  CHECK_THAT(acs[0].detail(),
             Catch::Contains("only 64 bytes") && Catch::Contains("root"));
  CHECK_THAT(acs[0].action(), Catch::Contains("as root"));
  CHECK(r.exit_code == 0);  // the other findings are warnings
  SuiteRun human = Hostcheck(tree.dir.path, /*jsonl=*/false);
  CHECK_THAT(human.out, Catch::Contains("N/M") && Catch::Contains("ACS not measured"));
}

TEST_CASE("topology: without RDMA devices the GPUs are measured and affinity is not",
          "[hostcheck][topology][cli]") {
  Tree tree("dgx-h100-no-rdma");
  SuiteRun r = Hostcheck(tree.dir.path);
  INFO(Dump(r));
  CHECK(r.exit_code == 0);
  CHECK(Metrics(r, "gpu_pcie_path").size() == 8);
  CHECK(Metrics(r, "gpu_nic_map").empty());
  auto f = Findings(r, "hostcheck.gpu_nic_affinity");
  REQUIRE(f.size() == 1);
  CHECK(f[0].not_measured());
  CHECK(f[0].category() == "networking");
  CHECK_THAT(f[0].detail(), Catch::Contains("no RDMA device") &&
                                Catch::Contains("/sys/class/infiniband does not exist"));
  for (const char* id : {"hostcheck.nic_rate", "hostcheck.nic_pcie", "hostcheck.pcie_acs",
                         "hostcheck.iommu"}) {
    INFO(id);
    CHECK(Findings(r, id).empty());
  }
}

TEST_CASE("topology: software RDMA devices alone leave GPU-NIC affinity not measured",
          "[hostcheck][topology][cli]") {
  Tree tree("dgx-h100-no-rdma");
  // soft-RoCE (rdma_rxe): an RDMA device with ports but no PCI function.
  const std::string rxe = tree.dir.path + "/sys/class/infiniband/rxe0";
  cmax::testing::topology_tree_internal::WriteText(rxe + "/ports/1/state", "4: ACTIVE\n");
  cmax::testing::topology_tree_internal::WriteText(rxe + "/ports/1/link_layer",
                                                   "Ethernet\n");
  SuiteRun r = Hostcheck(tree.dir.path);
  INFO(Dump(r));
  auto f = Findings(r, "hostcheck.gpu_nic_affinity");
  REQUIRE(f.size() == 1);
  CHECK(f[0].not_measured());
  CHECK_THAT(f[0].detail(), Catch::Contains("rxe0") && Catch::Contains("PCI function"));
  CHECK(Metrics(r, "gpu_nic_map").empty());
}

TEST_CASE("topology: a root without /sys/bus/pci writes topology not measured",
          "[hostcheck][topology][cli]") {
  ScratchDir d;
  cmax::testing::topology_tree_internal::WriteText(d.path + "/proc/meminfo",
                                                   "MemTotal:       65848712 kB\n");
  SuiteRun r = Hostcheck(d.path);
  INFO(Dump(r));
  auto f = Findings(r, "hostcheck.topology");
  REQUIRE(f.size() == 1);
  CHECK(f[0].not_measured());
  CHECK(f[0].category() == "networking");
  CHECK_THAT(f[0].detail(), Catch::Contains("/sys/bus/pci/devices"));
}

TEST_CASE("topology: --inventory carries the GPU-NIC map for other suites",
          "[hostcheck][topology][cli]") {
  Tree tree("dgx-h100-clean");
  auto run = cmax::RunCommand({std::string(CMAX_TEST_BIN_DIR) + "/cmax-bench",
                               "hostcheck", "--inventory", "--root=" + tree.dir.path},
                              std::chrono::seconds(30));
  REQUIRE(run.ok());
  INFO(run->out << run->err);
  REQUIRE(run->exit.exited);
  CHECK(run->exit.code == 0);
  cmax::v1::Inventory inv;
  REQUIRE(google::protobuf::util::JsonStringToMessage(run->out, &inv).ok());
  REQUIRE(inv.facts().count("gpu_nic_map"));
  CHECK(absl::StartsWith(inv.facts().at("gpu_nic_map"),
                         "0000:18:00.0=mlx5_0,0000:1a:00.0=mlx5_1,"));
  Tree none("dgx-h100-no-rdma");
  run = cmax::RunCommand({std::string(CMAX_TEST_BIN_DIR) + "/cmax-bench", "hostcheck",
                          "--inventory", "--root=" + none.dir.path},
                         std::chrono::seconds(30));
  REQUIRE(run.ok());
  cmax::v1::Inventory inv2;
  REQUIRE(google::protobuf::util::JsonStringToMessage(run->out, &inv2).ok());
  CHECK(inv2.gpu_count() == 8);
  CHECK_FALSE(inv2.facts().count("gpu_nic_map"));  // nothing to map: no fact, not a guess
}

// ---- the scorecard ---------------------------------------------------------------

TEST_CASE("topology: the no-RDMA node's records grade GPU-NIC affinity not measured",
          "[hostcheck][topology][scorecard]") {
  Tree tree("dgx-h100-no-rdma");
  SuiteRun r = Hostcheck(tree.dir.path);
  REQUIRE(r.exit_code == 0);
  namespace rt = cmax::reports::testing;
  cmax::reports::RunData d;
  d.run.set_run_id("run-topo");
  d.run.set_plan_name("topology");
  d.run.set_state("completed");
  d.plan.set_name("topology");
  d.plan.add_suites()->set_suite("hostcheck");
  d.nodes = {"node-1"};
  int64_t seq = 0;
  for (const auto& rec : r.records) {
    cmax::v1::ExportedRecord e;
    e.set_task_id("hostcheck@node-1");
    e.set_attempt(1);
    e.set_seq(++seq);
    e.set_node("node-1");
    e.set_suite("hostcheck");
    *e.mutable_record() = rec;
    d.records.push_back(std::move(e));
  }
  d.tasks.push_back(
      rt::Task("node-1", "hostcheck", cmax::v1::TASK_COMPLETED, 0, "passed"));
  cmax::v1::Scorecard card = cmax::reports::BuildScorecard(d);

  int affinity_rules = 0;
  for (const auto& c : card.categories()) {
    for (const auto& rule : c.rules()) {
      if (rule.rule_id() != "hostcheck.gpu_nic_affinity") continue;
      ++affinity_rules;
      INFO(c.name() << ": " << rule.outcome() << " " << rule.message());
      CHECK(c.name() == "Networking");
      CHECK(rule.outcome() == "not_measured");
    }
  }
  CHECK(affinity_rules == 1);
  const auto& net = rt::Category(card, "Networking");
  INFO(net.grade() << ": " << net.summary());
  CHECK_FALSE(net.measured());  // hostcheck alone measured nothing of Networking here
  CHECK(net.grade() == "not measured");
  for (const auto& reason : rt::NodeOf(card, "node-1").reasons()) {
    if (!absl::StartsWith(reason, "Networking")) continue;
    INFO(reason);
    CHECK(absl::StartsWith(reason, "Networking not measured"));
  }
}
