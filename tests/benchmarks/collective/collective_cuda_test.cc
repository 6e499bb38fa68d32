// cmax_collective_cuda alone (linked into this test, not through
// cmax-bench-cuda): usage errors and the no-GPU path of the NCCL collective.
#include "benchmarks/collective/cuda/collective_cuda.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/benchmarks/cuda/lib_run.h"
#include "tests/skip.h"

using cmax::bench::RunCudaCollective;
using cmax::testing::LibRun;
using cmax::testing::RunSuiteFn;

TEST_CASE("cuda collective refuses the host backends and unknown flags with exit 2",
          "[cuda_lib]") {
  LibRun b = RunSuiteFn(RunCudaCollective, {"collective", "--backend=gloo", "--jsonl"});
  CHECK(b.exit_code == 2);
  CHECK_THAT(b.err, Catch::Contains("cmax-bench-cuda runs --backend nccl"));
  CHECK(b.records.empty());
  LibRun u = RunSuiteFn(RunCudaCollective, {"collective", "--threads=2"});
  CHECK(u.exit_code == 2);
  CHECK_THAT(u.err, Catch::Contains("threads"));
}

TEST_CASE("cuda collective without a GPU writes not measured with the reason",
          "[cuda_lib]") {
  std::string why;
  if (cmax::testing::UsableGpusInChild(&why) > 0) {
    CMAX_SKIP("this machine has a GPU (the no-GPU path needs none)");
  }
  LibRun r = RunSuiteFn(RunCudaCollective, {"collective", "--jsonl"}, 120);
  CHECK(r.exit_code == 2);
  bool said_why = false;
  for (const auto& rec : r.records) {
    CHECK_FALSE(rec.has_measurement());
    if (rec.has_finding() && !rec.finding().detail().empty() &&
        rec.finding().title().find("not measured") != std::string::npos) {
      said_why = true;
    }
  }
  CHECK(said_why);
}
