#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "generated/suite_judges.h"
#include "reports/judges.h"
#include "reports/run_data.h"

namespace cmax::reports {

namespace {

void AddVersion(RunData* data, const std::string& node, const std::string& component,
                const std::string& version) {
  v1::ExportedRecord rec;
  rec.set_node(node);
  rec.set_suite("audit");
  auto* m = rec.mutable_record()->mutable_measurement();
  m->set_suite("audit");
  m->set_metric("component_version");
  m->set_value(1);
  m->set_unit("count");
  (*m->mutable_labels())["component"] = component;
  (*m->mutable_labels())["version"] = version;
  (*m->mutable_labels())["source"] = "file";
  data->records.push_back(rec);
}

const v1::RuleResult* ForComponent(const std::vector<v1::RuleResult>& rules,
                                   const std::string& component) {
  for (const auto& r : rules) {
    if (r.subject() == "component:" + component) return &r;
  }
  return nullptr;
}

TEST_CASE("driver drift across three nodes names the nodes on each version", "[judge][audit]") {
  RunData data;
  data.nodes = {"node-1", "node-2", "node-3"};
  AddVersion(&data, "node-1", "driver", "580.65.06");
  AddVersion(&data, "node-2", "driver", "580.65.06");
  AddVersion(&data, "node-3", "driver", "570.124.06");
  for (const char* n : {"node-1", "node-2", "node-3"}) {
    AddVersion(&data, n, "nccl", "2.28.9");
    AddVersion(&data, n, "slurm", "not installed");
  }
  std::vector<v1::RuleResult> rules;
  JudgeAuditDrift(data, &rules);

  const v1::RuleResult* driver = ForComponent(rules, "driver");
  REQUIRE(driver != nullptr);
  CHECK(driver->outcome() == "warn");
  CHECK(driver->category() == "Lifecycle");
  CHECK(driver->node().empty());
  CHECK(driver->message() == "driver: 580.65.06 on node-1, node-2; 570.124.06 on node-3");
  CHECK(driver->evidence_size() == 2);
  CHECK(driver->value() == 2);

  const v1::RuleResult* nccl = ForComponent(rules, "nccl");
  REQUIRE(nccl != nullptr);
  CHECK(nccl->outcome() == "pass");
  CHECK(absl::StrContains(nccl->message(), "on all 3 nodes"));

  CHECK(ForComponent(rules, "slurm") == nullptr);  // absent everywhere: nothing to compare
}

TEST_CASE("the audit judge is registered and ignores other suites", "[judge][audit]") {
  bool registered = false;
  for (Judge j : AllJudges()) registered |= (j == &JudgeAuditDrift);
  CHECK(registered);

  RunData data;
  AddVersion(&data, "node-1", "driver", "580.65.06");
  AddVersion(&data, "node-2", "driver", "570.124.06");
  data.records[1].set_suite("hostcheck");
  std::vector<v1::RuleResult> rules;
  JudgeAuditDrift(data, &rules);
  CHECK(rules.empty());  // one audit node: no drift to report
}

}  // namespace
}  // namespace cmax::reports
