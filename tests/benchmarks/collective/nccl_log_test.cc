// The NCCL_DEBUG=INFO parser on log excerpts in NCCL's formats
// (tests/fixtures/collective/NOTE.md): transport, GPUDirect RDMA, NVLS,
// channels, and the findings with their evidence lines.
#include <catch2/catch.hpp>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "benchmarks/collective_common/nccl_log.h"

using namespace cmax::collective;

namespace {

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(CMAX_SOURCE_DIR) + "/tests/fixtures/collective/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  REQUIRE(!ss.str().empty());
  return ss.str();
}

const cmax::v1::Finding* FindCheck(const std::vector<cmax::v1::Finding>& fs, const std::string& id) {
  for (const auto& f : fs) {
    if (f.check_id() == id) return &f;
  }
  return nullptr;
}

bool EvidenceHas(const cmax::v1::Finding& f, const std::string& text) {
  for (const auto& e : f.evidence()) {
    if (absl::StrContains(e, text)) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("nccl log: InfiniBand with GPUDirect RDMA", "[collective][nccl_log]") {
  NcclLogFacts f = ParseNcclLog(Fixture("ib_gdr.log"));
  CHECK(f.version == "2.28.9+cuda13.0");
  CHECK(f.network == "IB");
  CHECK(f.transport == "IB");
  CHECK(f.net_plugin == "internal");
  CHECK(f.ib_devices.size() == 4);
  CHECK(f.net_connections == 4);
  CHECK(f.gdr_connections == 4);
  CHECK(f.gdr_enabled_line);
  CHECK(f.channels == 4);
  CHECK(f.nvls_channels == 0);
  CHECK(f.trees);
  CHECK(f.nodes == 2);
  auto labels = TransportLabels(f);
  CHECK(labels["gdr"] == "yes");
  CHECK(labels["nvls"] == "no");
  auto findings = TransportFindings(f, {.rdma_devices_present = true, .expect_gdr = true});
  CHECK(FindCheck(findings, "collective.nccl_socket_fallback") == nullptr);
  CHECK(FindCheck(findings, "collective.nccl_gdr_off") == nullptr);
  const auto* info = FindCheck(findings, "collective.nccl_transport");
  REQUIRE(info != nullptr);
  CHECK(absl::StrContains(info->title(), "IB"));
}

TEST_CASE("nccl log: GPUDirect RDMA off where the plan expects it", "[collective][nccl_log]") {
  NcclLogFacts f = ParseNcclLog(Fixture("ib_no_gdr.log"));
  CHECK(f.transport == "IB");
  CHECK(f.net_connections == 4);
  CHECK(f.gdr_connections == 0);
  CHECK(f.gdr_disabled_line);
  auto findings = TransportFindings(f, {.rdma_devices_present = true, .expect_gdr = true});
  const auto* off = FindCheck(findings, "collective.nccl_gdr_off");
  REQUIRE(off != nullptr);
  CHECK(off->severity() == cmax::v1::SEVERITY_FAIL);
  CHECK(EvidenceHas(*off, "via NET/IB/0"));
  CHECK(EvidenceHas(*off, "GPU Direct RDMA Disabled"));
  // Without the expectation it is not a failure.
  auto relaxed = TransportFindings(f, {.rdma_devices_present = true, .expect_gdr = false});
  CHECK(FindCheck(relaxed, "collective.nccl_gdr_off") == nullptr);
}

TEST_CASE("nccl log: NVLS inside one node", "[collective][nccl_log]") {
  NcclLogFacts f = ParseNcclLog(Fixture("nvls.log"));
  CHECK(f.nvls_available);
  CHECK(f.nvls_channels == 16);
  CHECK(f.coll_channels == 24);
  CHECK(f.channels == 24);
  CHECK(f.nodes == 1);
  CHECK(f.net_connections == 0);
  CHECK(f.intra_node["P2P/CUMEM/read"] == 3);
  auto labels = TransportLabels(f);
  CHECK(labels["nvls"] == "yes");
  CHECK(labels["gdr"] == "n/a");
  // One node: no network traffic, so no GDR or socket verdict.
  auto findings = TransportFindings(f, {.rdma_devices_present = true, .expect_gdr = true});
  CHECK(FindCheck(findings, "collective.nccl_gdr_off") == nullptr);
  CHECK(FindCheck(findings, "collective.nccl_socket_fallback") == nullptr);
}

TEST_CASE("nccl log: socket fallback on a node with RDMA devices fails", "[collective][nccl_log]") {
  NcclLogFacts f = ParseNcclLog(Fixture("socket_fallback.log"));
  CHECK(f.ib_no_device);
  CHECK(f.network == "Socket");
  CHECK(f.transport == "Socket");
  CHECK(f.net_connections == 4);
  CHECK(f.gdr_connections == 0);
  auto findings = TransportFindings(f, {.rdma_devices_present = true, .expect_gdr = false});
  const auto* fb = FindCheck(findings, "collective.nccl_socket_fallback");
  REQUIRE(fb != nullptr);
  CHECK(fb->severity() == cmax::v1::SEVERITY_FAIL);
  CHECK(EvidenceHas(*fb, "Using network Socket"));
  CHECK(EvidenceHas(*fb, "NET/IB : No device found"));
  // A node without RDMA devices: sockets are all it has.
  auto plain = TransportFindings(f, {.rdma_devices_present = false, .expect_gdr = false});
  CHECK(FindCheck(plain, "collective.nccl_socket_fallback") == nullptr);
}

TEST_CASE("nccl log: one rank on one node never judges the network", "[collective][nccl_log]") {
  // NCCL logs "Using network Socket" at init even for a single rank; no
  // channel goes through the network and nothing leaves the node.
  NcclLogFacts f = ParseNcclLog(Fixture("one_rank_socket.log"));
  CHECK(f.network == "Socket");
  CHECK(f.ib_no_device);
  CHECK(f.nodes == 1);
  CHECK(f.ranks == 1);
  CHECK(f.net_connections == 0);
  for (int nodes : {0, 1}) {
    INFO("the suite says the run spans " << nodes << " node(s) (0: unknown)");
    auto findings = TransportFindings(f, {.rdma_devices_present = true, .nodes = nodes});
    CHECK(FindCheck(findings, "collective.nccl_socket_fallback") == nullptr);
    CHECK(FindCheck(findings, "collective.nccl_transport") != nullptr);
  }
  // The same log from a rank of a run the suite knows spans two nodes
  // (NCCL's nNodes line can be cut off): sockets there are a fallback.
  auto two = TransportFindings(f, {.rdma_devices_present = true, .nodes = 2});
  CHECK(FindCheck(two, "collective.nccl_socket_fallback") != nullptr);
}

TEST_CASE("nccl log: an empty log is not measured, never a pass", "[collective][nccl_log]") {
  NcclLogFacts f = ParseNcclLog("some unrelated output\n");
  auto findings = TransportFindings(f, {});
  REQUIRE(findings.size() == 1);
  CHECK(findings[0].check_id() == "collective.nccl_log_missing");
  CHECK(findings[0].severity() == cmax::v1::SEVERITY_WARN);
  CHECK(findings[0].not_measured());
}
