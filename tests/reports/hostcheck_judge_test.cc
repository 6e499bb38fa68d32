// The inventory-uniformity judge, run the way the scorecard runs it: through
// AllJudges(), keeping only its rules (inventory.*).
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "reports/judges.h"

using cmax::reports::RunData;
using cmax::v1::RuleResult;

namespace {

cmax::v1::Inventory Node(int gpus, const std::string& model, const std::string& driver,
                         const std::string& kernel = "5.15.0-143-generic") {
  cmax::v1::Inventory inv;
  inv.set_gpu_count(gpus);
  inv.set_gpu_model(model);
  inv.set_driver_version(driver);
  inv.set_kernel(kernel);
  return inv;
}

std::vector<RuleResult> Judge(const RunData& data) {
  std::vector<RuleResult> all, mine;
  for (auto judge : cmax::reports::AllJudges()) judge(data, &all);
  for (auto& r : all) {
    if (r.rule_id().rfind("inventory.", 0) == 0) mine.push_back(r);
  }
  return mine;
}

const RuleResult* Fleet(const std::vector<RuleResult>& results, const std::string& rule) {
  for (const auto& r : results) {
    if (r.rule_id() == rule && r.node().empty()) return &r;
  }
  return nullptr;
}

std::vector<std::string> WarnedNodes(const std::vector<RuleResult>& results,
                                     const std::string& rule) {
  std::vector<std::string> nodes;
  for (const auto& r : results) {
    if (r.rule_id() == rule && !r.node().empty() && r.outcome() == "warn") {
      nodes.push_back(r.node());
    }
  }
  return nodes;
}

constexpr char kH100[] = "NVIDIA H100 SXM5 80GB";

}  // namespace

TEST_CASE("inventory: a uniform fleet passes every attribute", "[judge][inventory]") {
  RunData data;
  for (const char* n : {"node-a", "node-b", "node-c"}) {
    data.inventories[n] = Node(8, kH100, "580.65.06");
  }
  auto results = Judge(data);
  REQUIRE(results.size() == 4);
  for (const auto& r : results) {
    INFO(r.rule_id());
    CHECK(r.outcome() == "pass");
    CHECK(r.category() == "Lifecycle");
    CHECK(r.node().empty());
  }
  CHECK(Fleet(results, "inventory.uniform_driver_version")->message().find("580.65.06") !=
        std::string::npos);
}

TEST_CASE("inventory: an odd driver and a node short of a GPU are named",
          "[judge][inventory]") {
  RunData data;
  data.inventories["node-a"] = Node(8, kH100, "580.65.06");
  data.inventories["node-b"] = Node(8, kH100, "580.65.06");
  data.inventories["node-c"] = Node(7, kH100, "580.65.06");
  data.inventories["node-d"] = Node(8, kH100, "570.133.20");
  auto results = Judge(data);

  const RuleResult* drivers = Fleet(results, "inventory.uniform_driver_version");
  REQUIRE(drivers);
  CHECK(drivers->outcome() == "warn");
  CHECK(drivers->value() == 2);
  REQUIRE(drivers->evidence_size() == 2);
  CHECK(drivers->evidence(0) == "driver_version=580.65.06: node-a, node-b, node-c");
  CHECK(drivers->evidence(1) == "driver_version=570.133.20: node-d");
  CHECK(WarnedNodes(results, "inventory.uniform_driver_version") ==
        std::vector<std::string>{"node-d"});

  const RuleResult* counts = Fleet(results, "inventory.uniform_gpu_count");
  REQUIRE(counts);
  CHECK(counts->outcome() == "warn");
  CHECK(counts->message().find("8 on 3 nodes") != std::string::npos);
  CHECK(WarnedNodes(results, "inventory.uniform_gpu_count") ==
        std::vector<std::string>{"node-c"});

  CHECK(Fleet(results, "inventory.uniform_gpu_model")->outcome() == "pass");
  CHECK(Fleet(results, "inventory.uniform_kernel")->outcome() == "pass");
}

TEST_CASE("inventory: a tie names only the fleet and no node", "[judge][inventory]") {
  RunData data;
  data.inventories["node-a"] = Node(8, kH100, "580.65.06");
  data.inventories["node-b"] = Node(8, "NVIDIA H200 SXM 141GB", "580.65.06");
  auto results = Judge(data);
  const RuleResult* models = Fleet(results, "inventory.uniform_gpu_model");
  REQUIRE(models);
  CHECK(models->outcome() == "warn");
  CHECK(WarnedNodes(results, "inventory.uniform_gpu_model").empty());
}

TEST_CASE(
    "inventory: CPU nodes differ in GPU count only and unselected nodes are ignored",
    "[judge][inventory]") {
  RunData data;
  data.inventories["gpu-1"] = Node(8, kH100, "580.65.06");
  data.inventories["gpu-2"] = Node(8, kH100, "580.65.06");
  data.inventories["gpu-3"] = Node(8, kH100, "580.65.06");
  data.inventories["cpu-1"] = Node(0, "", "");
  data.inventories["old-node"] = Node(8, kH100, "535.54.03");  // not in this run
  data.nodes = {"gpu-1", "gpu-2", "gpu-3", "cpu-1"};
  auto results = Judge(data);
  CHECK(Fleet(results, "inventory.uniform_gpu_count")->outcome() == "warn");
  CHECK(WarnedNodes(results, "inventory.uniform_gpu_count") ==
        std::vector<std::string>{"cpu-1"});
  CHECK(Fleet(results, "inventory.uniform_gpu_model")->outcome() == "pass");
  CHECK(Fleet(results, "inventory.uniform_driver_version")->outcome() == "pass");
}

TEST_CASE("inventory: one node gives nothing to compare, said as not measured",
          "[judge][inventory]") {
  RunData data;
  data.inventories["node-a"] = Node(8, kH100, "580.65.06");
  const auto results = Judge(data);
  // One result, not measured: never a pass on nothing compared.
  REQUIRE(results.size() == 1);
  CHECK(results[0].rule_id() == "inventory.uniform");
  CHECK(results[0].outcome() == "not_measured");
  CHECK(results[0].node().empty());
  CHECK(results[0].category() == "Lifecycle");
  CHECK(results[0].message() ==
        "inventory uniformity needs two or more nodes to compare; only node-a has an inventory");
  CHECK(Judge(RunData{}).empty());  // no inventory at all: nothing to say
}
