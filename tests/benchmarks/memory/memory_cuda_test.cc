// cmax_memory_cuda alone (linked into this test, not through
// cmax-bench-cuda): usage errors, the no-GPU path, and on a GPU machine
// verified device bandwidth.
#include "benchmarks/memory/cuda/memory_cuda.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/benchmarks/cuda/lib_run.h"
#include "tests/skip.h"

using cmax::bench::RunCudaMemory;
using cmax::testing::LibRun;
using cmax::testing::RunSuiteFn;

TEST_CASE("cuda memory refuses bad usage with exit 2 and the reason", "[cuda_lib]") {
  LibRun t = RunSuiteFn(RunCudaMemory, {"memory", "--tests=h2d,nvme", "--jsonl"});
  CHECK(t.exit_code == 2);
  CHECK_THAT(t.err, Catch::Contains("'h2d,nvme' is not a comma-separated list of h2d, d2h"));
  CHECK(t.records.empty());
  // The declaration's ranges, in the plan catalog's words (sizes from 1M).
  for (const auto& [bad, reason] : std::vector<std::pair<std::string, std::string>>{
           {"--size=4K", "parameter 'size': '4K' is not within [1M, 64G]"},
           {"--iters=0", "parameter 'iters': '0' is not within [1, 100000]"},
           {"--warmup=-1", "parameter 'warmup': '-1' is not within [0, 10000]"}}) {
    INFO(bad);
    LibRun r = RunSuiteFn(RunCudaMemory, {"memory", bad, "--jsonl"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(reason));
    CHECK(r.records.empty());
  }
  LibRun s = RunSuiteFn(RunCudaMemory, {"memory", "--size=lots"});
  CHECK(s.exit_code == 2);
  CHECK_THAT(s.err, Catch::Contains("size"));
}

TEST_CASE("cuda memory without a GPU writes not measured with the reason", "[cuda_lib]") {
  std::string why;
  if (cmax::testing::UsableGpusInChild(&why) > 0) {
    CMAX_SKIP("this machine has a GPU (the no-GPU path needs none)");
  }
  LibRun r = RunSuiteFn(RunCudaMemory, {"memory", "--size=16M", "--jsonl"});
  cmax::testing::CheckNotMeasured(r);
}

TEST_CASE("cuda memory measures device bandwidth on one GPU", "[gpu]") {
  std::string why;
  if (cmax::testing::UsableGpusInChild(&why) == 0) {
    CMAX_SKIP("no usable GPU (" << why << ")");
  }
  LibRun r = RunSuiteFn(RunCudaMemory,
                        {"memory", "--size=64M", "--iters=3", "--warmup=1",
                         "--tests=d2d,hbm,h2d", "--gpus=0", "--jsonl"},
                        300);
  CHECK(r.exit_code == 0);
  int measured = 0;
  for (const auto& rec : r.records) {
    if (!rec.has_measurement()) continue;
    CHECK(rec.measurement().metric() == "memory_bandwidth_gbps");
    CHECK(rec.measurement().value() > 0);
    ++measured;
  }
  CHECK(measured >= 3);
}

TEST_CASE("cuda memory on one GPU: p2p not measured with the reason, *_all a median",
          "[gpu]") {
  std::string why;
  if (cmax::testing::UsableGpusInChild(&why) == 0) {
    CMAX_SKIP("no usable GPU (" << why << ")");
  }
  LibRun r = RunSuiteFn(RunCudaMemory,
                        {"memory", "--size=16M", "--iters=5", "--warmup=1",
                         "--tests=p2p,h2d_all", "--gpus=0", "--jsonl"},
                        300);
  CHECK(r.exit_code == 0);
  bool p2p_said = false;
  int per_gpu = 0, aggregate = 0;
  for (const auto& rec : r.records) {
    if (rec.has_finding() && rec.finding().check_id() == "memory.p2p_not_measured") {
      CHECK(rec.finding().not_measured());
      CHECK_THAT(rec.finding().detail(), Catch::Contains("p2p needs two GPUs"));
      p2p_said = true;
    }
    if (!rec.has_measurement()) continue;
    const auto& labels = rec.measurement().labels();
    CHECK(labels.at("test") == "h2d_all");  // nothing for p2p
    if (labels.at("gpu") == "all") {
      CHECK(labels.at("stat") == "wall");
      ++aggregate;
    } else {
      CHECK(labels.at("stat") == "median");
      ++per_gpu;
    }
  }
  CHECK(p2p_said);
  CHECK(per_gpu == 1);
  CHECK(aggregate == 1);
}
