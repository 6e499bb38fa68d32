// cmax_consistency_cuda alone (linked into this test, not through
// cmax-bench-cuda): usage errors, the no-GPU path, and on a GPU machine
// digests that repeat.
#include "benchmarks/consistency/cuda/consistency_cuda.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/benchmarks/cuda/lib_run.h"
#include "tests/skip.h"

using cmax::bench::RunCudaConsistency;
using cmax::testing::LibRun;
using cmax::testing::RunSuiteFn;

TEST_CASE("cuda consistency refuses bad usage with exit 2 and the reason", "[cuda_lib]") {
  for (const std::string bad : {"--repeats=0", "--repeats=101", "--backend=cpu"}) {
    INFO(bad);
    LibRun r = RunSuiteFn(RunCudaConsistency, {"consistency", bad, "--jsonl"});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains("need --backend cuda and --repeats in [1, 100]"));
    CHECK(r.records.empty());
  }
  LibRun u = RunSuiteFn(RunCudaConsistency, {"consistency", "--threads=2"});
  CHECK(u.exit_code == 2);
  CHECK_THAT(u.err, Catch::Contains("threads"));
}

TEST_CASE("cuda consistency without a GPU writes not measured with the reason",
          "[cuda_lib]") {
  std::string why;
  if (cmax::testing::UsableGpusInChild(&why) > 0) {
    CMAX_SKIP("this machine has a GPU (the no-GPU path needs none)");
  }
  LibRun r = RunSuiteFn(RunCudaConsistency, {"consistency", "--jsonl"});
  cmax::testing::CheckNotMeasured(r);
}

TEST_CASE("cuda consistency digests repeat on one GPU", "[gpu]") {
  std::string why;
  if (cmax::testing::UsableGpusInChild(&why) == 0) {
    CMAX_SKIP("no usable GPU (" << why << ")");
  }
  LibRun r = RunSuiteFn(RunCudaConsistency,
                        {"consistency", "--repeats=2", "--gpus=0", "--jsonl"}, 300);
  CHECK(r.exit_code == 0);
  int digests = 0;
  for (const auto& rec : r.records) {
    if (rec.has_measurement() && rec.measurement().metric() == "consistency_digest")
      ++digests;
  }
  CHECK(digests > 0);
}
