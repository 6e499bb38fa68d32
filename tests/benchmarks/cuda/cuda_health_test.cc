// cmax-bench-cuda burnin and consistency end to end: on a GPU machine they
// must run, verify and report; without a GPU they say "not measured", exit 2
// and write no Measurement.
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/benchmarks/cuda/cuda_test_util.h"
#include "tests/skip.h"

using cmax::testing::RunCuda;
using cmax::testing::SuiteRun;
using cmax::testing::UsableGpus;

TEST_CASE("without a GPU burnin and consistency say not measured and exit 2", "[cuda]") {
  std::string why;
  if (UsableGpus(&why) > 0) {
    CMAX_SKIP("this machine has a GPU: the no-GPU path is covered by driver_check_test");
  }
  for (std::vector<std::string> args :
       {std::vector<std::string>{"burnin", "--duration", "2", "--jsonl"},
        std::vector<std::string>{"consistency", "--jsonl"}}) {
    INFO(args[0]);
    SuiteRun r = RunCuda(args);
    CHECK(r.exit_code == 2);
    bool said_why = false;
    for (const auto& rec : r.records) {
      CHECK_FALSE(rec.has_measurement());
      if (rec.has_finding() && (rec.finding().title().find("not measured") != std::string::npos ||
                                rec.finding().check_id() == "gpu.driver_too_old")) {
        said_why = true;
      }
    }
    CHECK(said_why);
  }
}

TEST_CASE("GPU burn-in loads every GPU, streams telemetry and verifies", "[gpu]") {
  std::string why;
  int n = UsableGpus(&why);
  if (n == 0) {
    CMAX_SKIP("no usable GPU (" << why << ")");
  }
  SuiteRun r = RunCuda({"burnin", "--duration", "6", "--size", "4096", "--jsonl"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  std::map<std::string, int> metrics;
  std::set<std::string> sampled;
  int progress = 0;
  for (const auto& rec : r.records) {
    if (rec.has_measurement()) {
      ++metrics[rec.measurement().metric()];
      CHECK(rec.measurement().labels().at("uuid").rfind("GPU-", 0) == 0);
      CHECK_FALSE(rec.measurement().labels().at("pci_bus_id").empty());
    }
    if (rec.has_sample()) sampled.insert(rec.sample().metric());
    if (rec.has_progress()) ++progress;
    if (rec.has_finding()) CHECK(rec.finding().severity() < cmax::v1::SEVERITY_FAIL);
  }
  CHECK(metrics["burnin_tflops_mean"] == n);
  CHECK(metrics["burnin_mismatches"] == n);
  CHECK(sampled.count("burnin_tflops") == 1);
  CHECK(sampled.count("gpu_temperature_c") == 1);
  CHECK(progress >= 2);
  for (const auto& rec : r.records) {
    if (rec.has_measurement() && rec.measurement().metric() == "burnin_mismatches") {
      CHECK(rec.measurement().value() == 0);
    }
    if (rec.has_measurement() && rec.measurement().metric() == "burnin_tflops_mean") {
      CHECK(rec.measurement().value() > 1.0);
    }
  }

  // TEST ONLY fault injection: one corrupted element must be a critical finding.
  SuiteRun bad = RunCuda({"burnin", "--duration", "3", "--size", "2048", "--gpus", "0",
                      "--fault-inject", "5", "--jsonl"});
  CHECK(bad.exit_code == 1);
  bool found = false;
  for (const auto& rec : bad.records) {
    if (rec.has_finding() && rec.finding().check_id() == "burnin.gpu_mismatch") {
      found = true;
      CHECK(rec.finding().severity() == cmax::v1::SEVERITY_CRITICAL);
      CHECK(rec.finding().subject() == "gpu:0");
    }
  }
  CHECK(found);
}

TEST_CASE("GPU consistency digests repeat on the same GPU", "[gpu]") {
  std::string why;
  int n = UsableGpus(&why);
  if (n == 0) {
    CMAX_SKIP("no usable GPU (" << why << ")");
  }
  SuiteRun r = RunCuda({"consistency", "--jsonl"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  std::set<std::string> workloads;
  for (const auto& rec : r.records) {
    if (!rec.has_measurement()) continue;
    const auto& m = rec.measurement();
    CHECK(m.metric() == "consistency_digest");
    CHECK(m.labels().at("digest").size() == 16);
    CHECK(m.labels().count("versions") == 1);
    workloads.insert(m.labels().at("workload"));
  }
  for (const char* w : {"gemm_bf16", "gemm_fp32", "reduction_fp32", "fma_chain_fp64",
                        "memory_pattern"}) {
    INFO(w);
    CHECK(workloads.count(w) == 1);
  }
  // A second run gives the same digests (fixed seeds, fixed algorithms).
  SuiteRun again = RunCuda({"consistency", "--repeats", "1", "--jsonl"});
  std::map<std::string, std::string> first, second;
  for (const auto& rec : r.records) {
    if (rec.has_measurement()) {
      const auto& l = rec.measurement().labels();
      first[l.at("gpu") + "/" + l.at("workload")] = l.at("digest");
    }
  }
  for (const auto& rec : again.records) {
    if (rec.has_measurement()) {
      const auto& l = rec.measurement().labels();
      second[l.at("gpu") + "/" + l.at("workload")] = l.at("digest");
    }
  }
  CHECK(first == second);
}
