// cmax-bench-cuda end to end: on a GPU machine it must measure and verify;
// on a machine without one it must say "not measured" and exit 2.
#include <catch2/catch.hpp>
#include <chrono>
#include <set>
#include <string>
#include <vector>

#include "tests/benchmarks/cuda/cuda_test_util.h"
#include "tests/skip.h"

using cmax::testing::RunCuda;
using cmax::testing::SuiteRun;
using cmax::testing::UsableGpus;

TEST_CASE("without a GPU cmax-bench-cuda says not measured and exits 2", "[cuda]") {
  std::string why;
  if (UsableGpus(&why) > 0) {
    CMAX_SKIP("this machine has a GPU: the no-GPU path is covered by driver_check_test");
  }
  for (const char* suite : {"gemm", "memory", "collective"}) {
    SuiteRun r = RunCuda({suite, "--jsonl"});
    CHECK(r.exit_code == 2);
    bool said_why = false;
    for (const auto& rec : r.records) {
      CHECK_FALSE(rec.has_measurement());  // never a number without a GPU
      if (rec.has_finding() && rec.finding().title().find("not measured") != std::string::npos) {
        said_why = true;
      }
      if (rec.has_finding() && rec.finding().check_id() == "gpu.driver_too_old") said_why = true;
    }
    CHECK(said_why);
  }
}

TEST_CASE("GEMM on every GPU is measured and verified", "[gpu]") {
  std::string why;
  int n = UsableGpus(&why);
  if (n == 0) {
    CMAX_SKIP("no usable GPU (" << why << ")");
  }
  SuiteRun r = RunCuda({"gemm", "--dtype", "bf16", "--m=2048", "--n=2048", "--k=2048", "--iters=5",
                    "--warmup=2", "--jsonl"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  int measured = 0;
  for (const auto& rec : r.records) {
    if (!rec.has_measurement()) continue;
    ++measured;
    const auto& m = rec.measurement();
    CHECK(m.metric() == "gemm_tflops");
    CHECK(m.labels().at("verified") == "true");
    CHECK(m.labels().at("uuid").rfind("GPU-", 0) == 0);
    CHECK(m.value() > 1.0);  // any tensor-core GPU does > 1 TFLOP/s in bf16
  }
  CHECK(measured == n);

  SuiteRun bad = RunCuda({"gemm", "--dtype", "fp32", "--m=512", "--n=512", "--k=512", "--iters=2",
                      "--gpus=0", "--fault-inject", "--jsonl"});
  CHECK(bad.exit_code == 1);
  bool found = false;
  for (const auto& rec : bad.records) {
    if (rec.has_finding() && rec.finding().check_id() == "gemm.wrong_result") {
      found = true;
      CHECK(rec.finding().severity() == cmax::v1::SEVERITY_FAIL);
      CHECK(rec.finding().subject() == "gpu:0");
    }
  }
  CHECK(found);
}

TEST_CASE("memory paths are measured and verified", "[gpu]") {
  std::string why;
  if (UsableGpus(&why) == 0) {
    CMAX_SKIP("no usable GPU (" << why << ")");
  }
  SuiteRun r = RunCuda({"memory", "--size=64M", "--iters=3", "--warmup=1", "--jsonl"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  std::set<std::string> tests;
  for (const auto& rec : r.records) {
    if (!rec.has_measurement()) continue;
    const auto& m = rec.measurement();
    CHECK(m.metric() == "memory_bandwidth_gbps");
    CHECK(m.labels().at("verified") == "true");
    CHECK(m.value() > 0.1);
    tests.insert(m.labels().at("test"));
  }
  for (const char* t : {"h2d", "d2h", "h2d_all", "d2h_all", "d2d", "hbm"}) {
    INFO(t);
    CHECK(tests.count(t) == 1);
  }
}

TEST_CASE("NCCL collectives over every GPU are measured and verified", "[gpu]") {
  std::string why;
  int n = UsableGpus(&why);
  if (n == 0) {
    CMAX_SKIP("no usable GPU (" << why << ")");
  }
  SuiteRun r = RunCuda({"collective", "--backend=nccl", "--op=all", "-b", "1K", "-e", "1M", "-f", "32",
                    "-n", "3", "-w", "1", "-d", "bfloat16", "--jsonl"});
  INFO(r.err);
  CHECK(r.exit_code == 0);
  std::set<std::string> ops, bus_ops, bus_not_measured;
  bool transport = false;
  for (const auto& rec : r.records) {
    if (rec.has_finding()) {
      CHECK(rec.finding().severity() < cmax::v1::SEVERITY_FAIL);
      if (rec.finding().check_id() == "collective.nccl_transport") transport = true;
      // One GPU on one node: the network is never judged.
      CHECK(rec.finding().check_id() != "collective.nccl_socket_fallback");
      if (rec.finding().check_id() == "collective.busbw_one_rank") {
        CHECK(rec.finding().not_measured());
        bus_not_measured.insert(rec.finding().labels().at("op"));
      }
    }
    if (!rec.has_measurement()) continue;
    const auto& m = rec.measurement();
    if (m.metric() == "busbw_gbps") bus_ops.insert(m.labels().at("op"));
    if (m.metric() != "algbw_gbps") continue;
    ops.insert(m.labels().at("op"));
    CHECK(m.labels().at("wrong") == "0");
    CHECK(m.labels().at("ranks") == std::to_string(n));
  }
  CHECK(ops.size() == 6);
  if (n == 1) {
    // One rank: the (n-1)/n ops' busbw is not measured, never a 0.
    CHECK(bus_ops == std::set<std::string>{"broadcast", "sendrecv"});
    CHECK(bus_not_measured.size() == 4);
  } else {
    CHECK(bus_ops.size() == 6);
    CHECK(bus_not_measured.empty());
  }
  CHECK(transport);

  SuiteRun bad = RunCuda({"collective", "--op=all_reduce", "-b", "64K", "-e", "64K", "-n", "2",
                      "-w", "0", "--fault-inject", "--jsonl"});
  CHECK(bad.exit_code == 1);
  bool named = false;
  for (const auto& rec : bad.records) {
    if (rec.has_finding() && rec.finding().check_id() == "collective.wrong_elements") {
      named = rec.finding().labels().at("rank") == std::to_string(n - 1);
    }
  }
  CHECK(named);
}
