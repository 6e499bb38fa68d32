// Compute judge: each GPU's GEMM throughput, memory bandwidth and host link
// against the datasheet (reports/gpu_specs.h). Fleet outliers (one GPU slower
// than its peers) are the generic fleet judge's job, not this one's. The rules
// and their rationale are in reports/RULES_COMPUTE.md.
//
// Inputs (records of cmax-bench-cuda):
//   gemm_tflops            labels gpu, uuid, model, dtype, m, n, k, verified
//   memory_bandwidth_gbps  labels gpu, uuid, model, test (h2d, d2h, hbm, d2d, ...)
// Records without a `model` label (the host GEMM) are not graded here.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>

#include "absl/strings/str_format.h"
#include "reports/gpu_specs.h"
#include "reports/judge_util.h"
#include "reports/judges.h"
#include "reports/run_data.h"

namespace cmax::reports {
namespace {

// Fractions of the dense datasheet peak (RULES_COMPUTE.md).
struct GemmThresholds {
  double warn, fail;
};
GemmThresholds GemmThresholdsFor(const std::string& dtype) {
  if (dtype == "bf16" || dtype == "fp16") return {0.70, 0.50};
  return {0.60, 0.40};  // fp8, tf32, fp32, fp64
}
constexpr double kMemoryWarn = 0.80;  // of datasheet memory bandwidth
constexpr double kMemoryFail = 0.50;

// Host link: one GPU alone, pinned memory on its NUMA node. Gen5 x16: Azure
// HPC health checks' H2D/D2H floor of 48 GB/s (github.com/Azure/azurehpc-health-checks); other
// generations scale with the link rate (x2 per generation).
double HostLinkFloorGbps(int pcie_gen) {
  switch (pcie_gen) {
    case 4: return 24;
    case 5: return 48;
    case 6: return 96;
    default: return 0;  // not PCIe (NVLink-C2C) or unknown: not graded
  }
}

std::string GpuSubject(const v1::Measurement& m) {
  std::string s = "gpu:" + LabelValue(m, "gpu");
  std::string uuid = LabelValue(m, "uuid");
  if (!uuid.empty()) s += " (" + uuid + ")";
  return s;
}

std::string Outcome(double ratio, double warn, double fail) {
  if (ratio < fail) return "fail";
  if (ratio < warn) return "warn";
  return "pass";
}

// The best verified figure per (node, gpu, dtype-or-test): the peak shape is
// graded against the peak; smaller LLM-like shapes are reported, not graded.
struct Best {
  v1::Measurement m;
  std::string node;
  std::string shape;
};
using Key = std::tuple<std::string, std::string, std::string>;  // node, gpu, dtype/test

void JudgeCompute(const RunData& data, std::vector<v1::RuleResult>* out) {
  std::map<Key, Best> gemm, memory;
  // Only these two metrics are looked at below: the rest is not parsed.
  RecordFilter filter{v1::Record::kMeasurement};
  filter.metric_in = [](const std::string& metric) {
    return metric == "gemm_tflops" || metric == "memory_bandwidth_gbps";
  };
  // The labels read here and of the Best figures below: the others are not
  // parsed (record_set.h; issue 18).
  filter.label_keys = {"model", "verified", "gpu", "uuid", "dtype", "m",
                       "n",     "k",        "test", "pci_bus_id", "numa_node"};
  ForEachRecord(data, filter, [&](const v1::ExportedRecord& er) {
    if (!er.record().has_measurement()) return;
    const v1::Measurement& m = er.record().measurement();
    if (LabelValue(m, "model").empty()) return;
    if (m.metric() == "gemm_tflops") {
      if (LabelValue(m, "verified") == "false")
        return;  // a wrong result is a failure elsewhere
      Key key{er.node(), LabelValue(m, "gpu") + "|" + LabelValue(m, "uuid"),
              LabelValue(m, "dtype")};
      auto it = gemm.find(key);
      if (it == gemm.end() || m.value() > it->second.m.value()) {
        gemm[key] = {m, er.node(),
                     absl::StrFormat("%sx%sx%s", LabelValue(m, "m"), LabelValue(m, "n"),
                                     LabelValue(m, "k"))};
      }
    } else if (m.metric() == "memory_bandwidth_gbps") {
      std::string test = LabelValue(m, "test");
      if (test != "hbm" && test != "d2d" && test != "h2d" && test != "d2h") return;
      Key key{er.node(), LabelValue(m, "gpu") + "|" + LabelValue(m, "uuid"), test};
      auto it = memory.find(key);
      if (it == memory.end() || m.value() > it->second.m.value())
        memory[key] = {m, er.node(), ""};
    }
  });

  std::set<std::pair<std::string, std::string>> unknown_reported;  // (node, model)
  auto not_graded = [&](const Best& b, const std::string& model) {
    if (!unknown_reported.insert({b.node, model}).second) return;
    v1::RuleResult r;
    r.set_rule_id("compute.vs_datasheet");
    r.set_category("Compute");
    r.set_outcome("not_measured");
    r.set_node(b.node);
    r.set_subject(model);
    r.set_message(absl::StrFormat(
        "no datasheet figures for GPU model '%s': its GEMM and bandwidth are measured "
        "but not graded against a peak",
        model));
    r.set_action("add the model to reports/gpu_specs.cc with its datasheet source");
    out->push_back(r);
  };

  for (const auto& [key, b] : gemm) {
    const std::string model = LabelValue(b.m, "model");
    const std::string dtype = std::get<2>(key);
    auto spec = FindGpuSpec(model);
    if (!spec) {
      not_graded(b, model);
      continue;
    }
    double peak = PeakTflops(*spec, dtype);
    if (peak <= 0) continue;  // no published figure for this dtype
    GemmThresholds t = GemmThresholdsFor(dtype);
    double ratio = b.m.value() / peak;
    v1::RuleResult r;
    r.set_rule_id("compute.gemm_vs_peak");
    r.set_category("Compute");
    r.set_outcome(Outcome(ratio, t.warn, t.fail));
    r.set_node(b.node);
    r.set_subject(GpuSubject(b.m));
    r.set_value(b.m.value());
    r.set_expected(peak);
    r.set_unit("TFLOP/s");
    r.set_message(absl::StrFormat(
        "%s %s %s GEMM %.1f TFLOP/s = %.0f%% of the %s dense peak %.1f (warn below %.0f%%, "
        "fail below %.0f%%)",
        b.node, GpuSubject(b.m), dtype, b.m.value(), 100 * ratio, spec->name, peak,
        100 * t.warn, 100 * t.fail));
    r.add_evidence(absl::StrFormat("best shape m x n x k = %s, model '%s'", b.shape, model));
    r.add_evidence(absl::StrFormat("cmax-bench-cuda gemm --dtype %s --gpus %s", dtype,
                                   LabelValue(b.m, "gpu")));
    if (r.outcome() != "pass") {
      r.set_action(
          "check clocks and throttle reasons (nvidia-smi -q -d PERFORMANCE), power cap, "
          "temperature and the PCIe/NVLink state of this GPU; rerun, then drain it if it stays slow");
    }
    out->push_back(r);
  }

  for (const auto& [key, b] : memory) {
    const std::string model = LabelValue(b.m, "model");
    const std::string test = std::get<2>(key);
    auto spec = FindGpuSpec(model);
    if (!spec) {
      not_graded(b, model);
      continue;
    }
    v1::RuleResult r;
    r.set_category("Compute");
    r.set_node(b.node);
    r.set_subject(GpuSubject(b.m));
    r.set_value(b.m.value());
    r.set_unit("GB/s");
    if (test == "hbm" || test == "d2d") {
      if (spec->memory_gbps <= 0) continue;
      double ratio = b.m.value() / spec->memory_gbps;
      r.set_rule_id("compute.memory_vs_spec");
      r.set_outcome(Outcome(ratio, kMemoryWarn, kMemoryFail));
      r.set_expected(spec->memory_gbps);
      r.set_message(absl::StrFormat(
          "%s %s %s bandwidth %.0f GB/s (bytes read + written) = %.0f%% of the %s datasheet "
          "%.0f GB/s (warn below %.0f%%)",
          b.node, GpuSubject(b.m), test, b.m.value(), 100 * ratio, spec->name, spec->memory_gbps,
          100 * kMemoryWarn));
      if (r.outcome() != "pass") {
        r.set_action("check memory clocks, ECC/row-remap state and throttling of this GPU");
      }
    } else {
      double floor = HostLinkFloorGbps(spec->pcie_gen);
      if (floor <= 0) continue;  // NVLink-C2C hosts: not a PCIe link
      r.set_rule_id("compute.host_link");
      r.set_outcome(b.m.value() >= floor ? "pass" : "warn");
      r.set_expected(floor);
      r.set_message(absl::StrFormat(
          "%s %s %s %.1f GB/s over PCIe Gen%d x16 (expected at least %.0f GB/s)", b.node,
          GpuSubject(b.m), test, b.m.value(), spec->pcie_gen, floor));
      r.add_evidence(absl::StrFormat("pci bus %s, NUMA node %s", LabelValue(b.m, "pci_bus_id"),
                                     LabelValue(b.m, "numa_node")));
      if (r.outcome() != "pass") {
        r.set_action(
            "check the link's negotiated speed and width under load (lspci -vv LnkSta, "
            "nvidia-smi -q -d PCIE), PCIe replay counters, and the host buffer's NUMA node");
      }
    }
    out->push_back(r);
  }
}

}  // namespace

// Declared in judges.cc.
void ComputeJudge(const RunData& data, std::vector<v1::RuleResult>* out) { JudgeCompute(data, out); }

}  // namespace cmax::reports
