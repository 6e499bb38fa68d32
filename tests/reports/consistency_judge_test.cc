// The consistency judge: a lone dissenter among peers is a silent data
// corruption suspect, a split without a majority has no culprit, and two
// models side by side diverge without a fault.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "generated/suite_judges.h"
#include "reports/run_data.h"

using namespace cmax;
using namespace cmax::reports;

namespace {

void AddDigest(RunData* data, const std::string& node, const std::string& gpu,
               const std::string& digest, const std::string& model = "NVIDIA H200",
               double value = 1.0, const std::string& workload = "gemm_bf16") {
  v1::ExportedRecord er;
  er.set_node(node);
  er.set_suite("consistency");
  v1::Measurement* m = er.mutable_record()->mutable_measurement();
  m->set_suite("consistency");
  m->set_metric("consistency_digest");
  m->set_value(value);
  (*m->mutable_labels())["workload"] = workload;
  (*m->mutable_labels())["model"] = model;
  (*m->mutable_labels())["versions"] = "driver 580.65; cuda 13.0; cmax 0.1.0";
  (*m->mutable_labels())["digest"] = digest;
  if (!gpu.empty()) {
    (*m->mutable_labels())["gpu"] = gpu;
    (*m->mutable_labels())["uuid"] = "GPU-" + node + "-" + gpu;
  }
  data->records.push_back(er);
}

std::vector<v1::RuleResult> WithOutcome(const std::vector<v1::RuleResult>& all,
                                        const std::string& outcome) {
  std::vector<v1::RuleResult> out;
  for (const auto& r : all) {
    if (r.outcome() == outcome) out.push_back(r);
  }
  return out;
}

}  // namespace

TEST_CASE("one digest differing among sixteen GPUs is flagged with the right GPU",
          "[judge][consistency]") {
  RunData data;
  for (const std::string node : {"node-a", "node-b"}) {
    for (int g = 0; g < 8; ++g) {
      bool bad = node == "node-b" && g == 5;
      AddDigest(&data, node, std::to_string(g), bad ? "deadbeef00000001" : "0123456789abcdef");
    }
  }
  std::vector<v1::RuleResult> results;
  JudgeConsistency(data, &results);
  auto critical = WithOutcome(results, "critical");
  REQUIRE(critical.size() == 1);
  CHECK(critical[0].rule_id() == "consistency.sdc_suspect");
  CHECK(critical[0].category() == "Reliability");
  CHECK(critical[0].node() == "node-b");
  CHECK(critical[0].subject() == "gpu:5");
  CHECK(critical[0].message().find("GPU-node-b-5") != std::string::npos);
  CHECK(critical[0].message().find("silent data corruption suspect") != std::string::npos);
  CHECK(WithOutcome(results, "warn").empty());
}

TEST_CASE("two differing GPUs in a group of two are reported without a culprit",
          "[judge][consistency]") {
  RunData data;
  AddDigest(&data, "node-a", "0", "1111111111111111");
  AddDigest(&data, "node-a", "1", "2222222222222222");
  std::vector<v1::RuleResult> results;
  JudgeConsistency(data, &results);
  CHECK(WithOutcome(results, "critical").empty());
  auto warn = WithOutcome(results, "warn");
  REQUIRE(warn.size() == 1);
  CHECK(warn[0].rule_id() == "consistency.disagreement");
  CHECK(warn[0].node().empty());  // nobody to blame
  CHECK(warn[0].message().find("no culprit") != std::string::npos);
  CHECK(warn[0].evidence_size() == 2);
}

TEST_CASE("two models side by side give divergence, not a fault", "[judge][consistency]") {
  RunData data;
  for (int g = 0; g < 4; ++g) {
    AddDigest(&data, "node-b200", std::to_string(g), "aaaaaaaaaaaaaaaa", "NVIDIA B200", 100.0);
    AddDigest(&data, "node-b300", std::to_string(g), "bbbbbbbbbbbbbbbb", "NVIDIA B300", 100.5);
  }
  std::vector<v1::RuleResult> results;
  JudgeConsistency(data, &results);
  CHECK(WithOutcome(results, "critical").empty());
  CHECK(WithOutcome(results, "warn").empty());
  CHECK(WithOutcome(results, "fail").empty());
  const v1::RuleResult* div = nullptr;
  for (const auto& r : results) {
    if (r.rule_id() == "consistency.model_divergence") div = &r;
  }
  REQUIRE(div != nullptr);
  CHECK(div->outcome() == "pass");
  CHECK(div->value() == Approx(0.5 / 100.5));
  CHECK(div->message().find("divergence across models") != std::string::npos);
}

TEST_CASE("CPU digests that agree pass, and a strict majority of three is needed to blame",
          "[judge][consistency]") {
  RunData agree;
  for (int n = 0; n < 3; ++n) {
    AddDigest(&agree, "cpu-" + std::to_string(n), "", "cccccccccccccccc", "Intel Xeon");
  }
  std::vector<v1::RuleResult> results;
  JudgeConsistency(agree, &results);
  REQUIRE(results.size() == 1);
  CHECK(results[0].outcome() == "pass");

  // Two agree, one differs: the majority has only two peers -> no culprit.
  RunData three;
  AddDigest(&three, "n0", "", "1111111111111111", "Intel Xeon");
  AddDigest(&three, "n1", "", "1111111111111111", "Intel Xeon");
  AddDigest(&three, "n2", "", "2222222222222222", "Intel Xeon");
  results.clear();
  JudgeConsistency(three, &results);
  CHECK(WithOutcome(results, "critical").empty());
  CHECK(WithOutcome(results, "warn").size() == 1);
}
