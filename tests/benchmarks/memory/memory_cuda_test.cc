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
