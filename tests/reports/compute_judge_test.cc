#include <catch2/catch.hpp>

#include "reports/gpu_specs.h"
#include "reports/judges.h"

namespace {

using cmax::reports::RunData;

void AddMeasurement(RunData* d, const std::string& node, const std::string& metric, double value,
                    std::map<std::string, std::string> labels) {
  cmax::v1::ExportedRecord er;
  er.set_node(node);
  er.set_suite(metric == "gemm_tflops" ? "gemm" : "memory");
  auto* m = er.mutable_record()->mutable_measurement();
  m->set_metric(metric);
  m->set_value(value);
  for (auto& [k, v] : labels) (*m->mutable_labels())[k] = v;
  d->records.push_back(er);
}

std::map<std::string, std::string> Gpu(int index, const std::string& model) {
  return {{"gpu", std::to_string(index)},
          {"uuid", "GPU-0000000" + std::to_string(index)},
          {"model", model},
          {"pci_bus_id", "0000:1b:00.0"},
          {"numa_node", "0"}};
}

// The compute judge's results, as registered among all judges (the fleet
// and expectation judges have tests of their own).
std::vector<cmax::v1::RuleResult> Judge(const RunData& d) {
  std::vector<cmax::v1::RuleResult> all, out;
  for (auto judge : cmax::reports::AllJudges()) judge(d, &all);
  for (auto& r : all) {
    if (r.rule_id().rfind("compute.", 0) == 0) out.push_back(std::move(r));
  }
  return out;
}

const cmax::v1::RuleResult* Find(const std::vector<cmax::v1::RuleResult>& rs,
                                 const std::string& rule, const std::string& node,
                                 const std::string& subject_prefix) {
  for (const auto& r : rs) {
    if (r.rule_id() == rule && r.node() == node &&
        r.subject().rfind(subject_prefix, 0) == 0) {
      return &r;
    }
  }
  return nullptr;
}

}  // namespace

TEST_CASE("GPU models map to their datasheet entries", "[gpu_specs]") {
  using cmax::reports::FindGpuSpec;
  CHECK(FindGpuSpec("NVIDIA H200")->name == "H200 SXM");
  CHECK(FindGpuSpec("NVIDIA H200 NVL")->name == "H200 NVL");
  // A Grace Hopper GPU is no H200 SXM, though its name contains "H200".
  CHECK(FindGpuSpec("NVIDIA GH200 480GB")->name == "GH200");
  CHECK(FindGpuSpec("NVIDIA GH200 480GB")->memory_gbps == 4000);
  CHECK(FindGpuSpec("NVIDIA GH200 480GB")->pcie_gen == 0);
  CHECK(FindGpuSpec("NVIDIA GH200 144G HBM3e")->name == "GH200 144GB HBM3e");
  CHECK(FindGpuSpec("NVIDIA GH200 144G HBM3e")->memory_gbps == 4900);
  CHECK(FindGpuSpec("NVIDIA H100 80GB HBM3")->name == "H100 SXM");
  CHECK(FindGpuSpec("NVIDIA H100 PCIe")->name == "H100 PCIe");
  CHECK(FindGpuSpec("NVIDIA A100-SXM4-80GB")->name == "A100 80GB SXM");
  CHECK(FindGpuSpec("NVIDIA A100-PCIE-40GB")->name == "A100 40GB PCIe");
  CHECK(FindGpuSpec("NVIDIA GB200")->name == "GB200");
  CHECK(FindGpuSpec("NVIDIA B200")->name == "B200");
  CHECK(FindGpuSpec("NVIDIA GB300")->name == "GB300");
  CHECK(FindGpuSpec("NVIDIA B300 SXM6 AC")->name == "B300");
  CHECK(FindGpuSpec("NVIDIA L40S")->name == "L40S");
  CHECK_FALSE(FindGpuSpec("NVIDIA GeForce RTX 4090"));
  CHECK_FALSE(FindGpuSpec(""));
  auto h200 = *FindGpuSpec("NVIDIA H200");
  // Dense, not sparse; tensor TF32 and non-tensor FP32 kept apart.
  CHECK(cmax::reports::PeakTflops(h200, "bf16") == Approx(989.5));
  CHECK(cmax::reports::PeakTflops(h200, "tf32") == Approx(494.5));
  CHECK(cmax::reports::PeakTflops(h200, "fp32") == Approx(67));
  CHECK(cmax::reports::PeakTflops(h200, "fp64") == Approx(67));
  CHECK(cmax::reports::PeakTflops(*FindGpuSpec("NVIDIA A100-SXM4-80GB"), "fp8") == 0);
  for (const auto& s : cmax::reports::AllGpuSpecs()) {
    INFO(s.name);
    CHECK(s.bf16 > 0);
    CHECK(s.memory_gbps > 0);
    CHECK(s.tf32 < s.bf16);  // TF32 runs at half the 16-bit rate on every listed part
  }
}

TEST_CASE("the compute judge grades a planted low-efficiency GPU", "[compute_judge]") {
  RunData d;
  // Eight H200s: seven at the ~790 TFLOPS measured with cuBLASLt on random
  // data, one at 60% of peak, one fp16 figure at 45% on another node.
  for (int g = 0; g < 8; ++g) {
    auto labels = Gpu(g, "NVIDIA H200");
    labels["dtype"] = "bf16";
    labels["m"] = labels["n"] = labels["k"] = "8192";
    labels["verified"] = "true";
    AddMeasurement(&d, "node-1", "gemm_tflops", g == 5 ? 0.60 * 989.5 : 790, labels);
    // A smaller LLM-like shape is slower; only the best shape is graded.
    labels["m"] = "4096";
    AddMeasurement(&d, "node-1", "gemm_tflops", 500, labels);
  }
  auto slow16 = Gpu(2, "NVIDIA H100 80GB HBM3");
  slow16["dtype"] = "fp16";
  slow16["verified"] = "true";
  AddMeasurement(&d, "node-2", "gemm_tflops", 0.45 * 989.5, slow16);
  auto rs = Judge(d);

  int gemm_rules = 0;
  for (const auto& r : rs) {
    if (r.rule_id() != "compute.gemm_vs_peak") continue;
    ++gemm_rules;
    CHECK(r.category() == "Compute");
  }
  CHECK(gemm_rules == 9);
  auto* ok = Find(rs, "compute.gemm_vs_peak", "node-1", "gpu:0");
  REQUIRE(ok);
  CHECK(ok->outcome() == "pass");
  CHECK(ok->value() == Approx(790));
  CHECK(ok->expected() == Approx(989.5));

  auto* slow = Find(rs, "compute.gemm_vs_peak", "node-1", "gpu:5");
  REQUIRE(slow);
  CHECK(slow->outcome() == "warn");
  CHECK_THAT(slow->message(), Catch::Contains("GPU-00000005"));
  CHECK_THAT(slow->message(), Catch::Contains("60%"));
  CHECK_FALSE(slow->action().empty());

  auto* bad = Find(rs, "compute.gemm_vs_peak", "node-2", "gpu:2");
  REQUIRE(bad);
  CHECK(bad->outcome() == "fail");
  CHECK_THAT(bad->message(), Catch::Contains("H100 SXM"));
}

TEST_CASE("wrong results, unknown models and host GEMMs are not graded against a peak",
          "[compute_judge]") {
  RunData d;
  auto wrong = Gpu(0, "NVIDIA H200");
  wrong["dtype"] = "bf16";
  wrong["verified"] = "false";
  AddMeasurement(&d, "node-1", "gemm_tflops", 2000, wrong);
  auto unknown = Gpu(1, "NVIDIA Future X1");
  unknown["dtype"] = "bf16";
  AddMeasurement(&d, "node-1", "gemm_tflops", 123, unknown);
  AddMeasurement(&d, "node-1", "gemm_tflops", 0.5,
                 {{"backend", "cpu"}, {"dtype", "fp64"}, {"threads", "64"}});
  auto rs = Judge(d);
  REQUIRE(rs.size() == 1);
  CHECK(rs[0].outcome() == "not_measured");
  CHECK_THAT(rs[0].message(), Catch::Contains("NVIDIA Future X1"));
}

TEST_CASE("memory bandwidth against the datasheet and PCIe generation", "[compute_judge]") {
  RunData d;
  auto hbm = Gpu(0, "NVIDIA H200");
  hbm["test"] = "d2d";
  AddMeasurement(&d, "n", "memory_bandwidth_gbps", 4300, hbm);  // measured on one H200
  auto slow_hbm = Gpu(1, "NVIDIA H200");
  slow_hbm["test"] = "hbm";
  AddMeasurement(&d, "n", "memory_bandwidth_gbps", 3000, slow_hbm);
  auto h2d = Gpu(2, "NVIDIA H200");
  h2d["test"] = "h2d";
  AddMeasurement(&d, "n", "memory_bandwidth_gbps", 53, h2d);
  auto slow_h2d = Gpu(3, "NVIDIA H200");
  slow_h2d["test"] = "d2h";
  AddMeasurement(&d, "n", "memory_bandwidth_gbps", 26, slow_h2d);  // a Gen4 link or x8
  auto a100 = Gpu(4, "NVIDIA A100-SXM4-80GB");
  a100["test"] = "h2d";
  AddMeasurement(&d, "n", "memory_bandwidth_gbps", 25, a100);
  auto gb200 = Gpu(5, "NVIDIA GB200");
  gb200["test"] = "h2d";
  AddMeasurement(&d, "n", "memory_bandwidth_gbps", 400, gb200);  // C2C: not graded
  auto all = Gpu(6, "NVIDIA H200");
  all["test"] = "h2d_all";
  AddMeasurement(&d, "n", "memory_bandwidth_gbps", 10, all);  // fleet judge's business
  auto rs = Judge(d);
  CHECK(rs.size() == 5);
  CHECK(Find(rs, "compute.memory_vs_spec", "n", "gpu:0")->outcome() == "pass");
  CHECK(Find(rs, "compute.memory_vs_spec", "n", "gpu:1")->outcome() == "warn");
  CHECK(Find(rs, "compute.host_link", "n", "gpu:2")->outcome() == "pass");
  auto* slow = Find(rs, "compute.host_link", "n", "gpu:3");
  REQUIRE(slow);
  CHECK(slow->outcome() == "warn");
  CHECK(slow->expected() == Approx(48));
  CHECK(Find(rs, "compute.host_link", "n", "gpu:4")->outcome() == "pass");  // Gen4: 24
  CHECK_FALSE(Find(rs, "compute.host_link", "n", "gpu:5"));
}
