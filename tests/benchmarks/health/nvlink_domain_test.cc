// The scorecard's NVLink domain judge (benchmarks/health/nvlink_domain_judge.cc)
// on an NVL72-like rack built here from 18 copies of the GB200 tray fixture
// (tests/fixtures/health/gb200_tray), each run through the health suite's
// own fabric check (CheckFabricDomain) as a node of its own.
#include <catch2/catch.hpp>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "benchmarks/health/fabric_domain.h"
#include "benchmarks/health/file_gpu_probe.h"
#include "benchmarks/health/nvlink_platforms.h"
#include "generated/suite_judges.h"
#include "reports/run_data.h"
#include "reports/scorecard.h"


namespace fs = std::filesystem;
using namespace cmax;

namespace {

constexpr char kRack[] = "6c1f3e2a-9b4d-4e8f-a1c2-3d4e5f607182";

health::GpuInventory Tray() {
  auto inv =
      health::FileGpuProbe((fs::path(CMAX_SOURCE_DIR) /
                            "tests/fixtures/health/gb200_tray/cmax-fixture/gpus.yaml")
                               .string())
          .Probe();
  REQUIRE(inv.ok());
  return *inv;
}

// `trays` nodes node-1 .. node-N, each the clean tray changed by `edit`.
reports::RunData Rack(
    int trays, const std::function<void(int tray, health::GpuInventory*)>& edit = {}) {
  reports::RunData d;
  d.run.set_run_id("run-rack");
  d.plan.add_suites()->set_suite("health");
  const health::ImexState imex{100, std::vector<std::string>(18, "x"), ""};
  for (int t = 1; t <= trays; ++t) {
    const std::string node = absl::StrCat("node-", t);
    d.nodes.push_back(node);
    health::GpuInventory inv = Tray();
    if (edit) edit(t, &inv);
    health::HealthResult r;
    health::CheckFabricDomain({}, inv.gpus.size(), inv, imex,
                              health::NvLinkPlatforms::Default(), &r);
    int64_t seq = 0;
    for (const auto& m : r.measurements) {
      v1::ExportedRecord rec;
      rec.set_node(node);
      rec.set_suite("health");
      rec.set_task_id("health@" + node);
      rec.set_attempt(1);
      rec.set_seq(++seq);
      *rec.mutable_record()->mutable_measurement() = m;
      d.records.push_back(std::move(rec));
    }
  }
  return d;
}

std::vector<v1::RuleResult> Judge(const reports::RunData& d) {
  std::vector<v1::RuleResult> out;
  reports::NvlinkDomainJudge(d, &out);
  return out;
}

std::vector<const v1::RuleResult*> WithId(const std::vector<v1::RuleResult>& rs,
                                          const std::string& id) {
  std::vector<const v1::RuleResult*> out;
  for (const auto& r : rs) {
    if (r.rule_id() == id) out.push_back(&r);
  }
  return out;
}

}  // namespace

TEST_CASE("an NVL72 rack of 18 clean trays is one domain of 72 GPUs in one clique",
          "[reports][nvlink_domain]") {
  auto rs = Judge(Rack(18));
  CHECK(WithId(rs, "nvlink.domain_clique").empty());
  auto domain = WithId(rs, "nvlink.domain");
  REQUIRE(domain.size() == 1);
  CHECK(domain[0]->outcome() == "pass");
  CHECK(domain[0]->node().empty());
  CHECK(domain[0]->subject() == absl::StrCat("domain:", kRack));
  CHECK(
      domain[0]->message() ==
      absl::StrCat("domain ", kRack, ": 72 GPUs registered on 18 nodes, one clique (1)"));
  CHECK(domain[0]->value() == 72);
  CHECK(domain[0]->expected() == 72);
}

TEST_CASE(
    "the odd GPU of a rack is named with its node, clique and the rest of the domain",
    "[reports][nvlink_domain]") {
  auto rs = Judge(Rack(18, [](int tray, health::GpuInventory* inv) {
    if (tray == 7) inv->gpus[3].fabric_clique_id = 2;
  }));
  auto odd = WithId(rs, "nvlink.domain_clique");
  REQUIRE(odd.size() == 1);
  CHECK(odd[0]->outcome() == "fail");
  CHECK(odd[0]->node() == "node-7");
  CHECK(odd[0]->category() == "Reliability");
  CHECK(odd[0]->message() ==
        absl::StrCat("node-7 GPU 3 in clique 2, the other 71 GPUs of domain ", kRack,
                     " in clique 1"));
  CHECK(absl::StrContains(odd[0]->evidence(0), "clique 1: 71 GPUs; clique 2: 1 GPU"));
  auto domain = WithId(rs, "nvlink.domain");
  REQUIRE(domain.size() == 1);
  CHECK(absl::StrContains(domain[0]->message(), "2 cliques"));
  // The scorecard fails that node, and only that node, for it.
  v1::Scorecard card =
      reports::BuildScorecard(Rack(18, [](int tray, health::GpuInventory* inv) {
        if (tray == 7) inv->gpus[3].fabric_clique_id = 2;
      }));
  for (const auto& v : card.nodes()) {
    bool names_clique = false;
    for (const auto& reason : v.reasons()) {
      names_clique = names_clique || absl::StrContains(reason, "in clique 2");
    }
    INFO(v.node() << " " << v.verdict());
    CHECK(names_clique == (v.node() == "node-7"));
    if (v.node() == "node-7") CHECK(v.verdict() == "fail");
  }
}

TEST_CASE(
    "a rack with fewer registered GPUs than NVL72 warns naming the domain and count",
    "[reports][nvlink_domain]") {
  // 17 trays in the run, and one GPU of tray 2 not registered.
  auto rs = Judge(Rack(17, [](int tray, health::GpuInventory* inv) {
    if (tray == 2) inv->gpus[1].fabric_state = health::FabricState::kInProgress;
  }));
  auto domain = WithId(rs, "nvlink.domain");
  REQUIRE(domain.size() == 1);
  CHECK(domain[0]->outcome() == "warn");
  CHECK(domain[0]->message() ==
        absl::StrCat("domain ", kRack,
                     ": 67 GPUs registered on 17 nodes (1 more not registered), "
                     "one clique (1); the platform's domain has 72 GPUs"));
  CHECK(domain[0]->value() == 67);
  CHECK(domain[0]->expected() == 72);
  bool names = false;
  for (const auto& e : domain[0]->evidence())
    names = names || e == "not registered: node-2 GPU 1";
  CHECK(names);
  CHECK(absl::StrContains(domain[0]->action(), "find the missing 5 GPUs"));
  CHECK(WithId(rs, "nvlink.domain_clique")
            .empty());  // unregistered is not a clique question
}

TEST_CASE("a plan that runs health twice counts each GPU once, as the later run saw it",
          "[reports][nvlink_domain]") {
  reports::RunData first = Rack(18, [](int tray, health::GpuInventory* inv) {
    if (tray == 7) inv->gpus[3].fabric_clique_id = 2;  // odd in the first run only
  });
  reports::RunData second = Rack(18);
  for (auto rec : second.records) {
    rec.set_task_id(rec.task_id() + "-after");
    first.records.push_back(std::move(rec));
  }
  auto rs = Judge(first);
  CHECK(WithId(rs, "nvlink.domain_clique").empty());
  auto domain = WithId(rs, "nvlink.domain");
  REQUIRE(domain.size() == 1);
  CHECK(domain[0]->value() == 72);
  CHECK(domain[0]->outcome() == "pass");
}

TEST_CASE("single-node NVSwitch fabrics (zero cluster UUID) form no domain",
          "[reports][nvlink_domain]") {
  auto rs = Judge(Rack(2, [](int, health::GpuInventory* inv) {
    for (auto& g : inv->gpus)
      g.fabric_cluster_uuid = "00000000-0000-0000-0000-000000000000";
  }));
  CHECK(rs.empty());
}
