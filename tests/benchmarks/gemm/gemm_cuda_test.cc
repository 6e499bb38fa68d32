// cmax_gemm_cuda alone (linked into this test, not through cmax-bench-cuda):
// its flag parsing and usage errors, the no-GPU path, and on a GPU machine a
// small verified GEMM.
#include "benchmarks/gemm/cuda/gemm_cuda.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "tests/benchmarks/cuda/lib_run.h"
#include "tests/skip.h"

using cmax::bench::CudaGemmArgs;
using cmax::bench::ParseCudaGemmArgs;
using cmax::bench::RunCudaGemm;
using cmax::testing::LibRun;
using cmax::testing::RunSuiteFn;

namespace {
std::optional<int> Parse(std::vector<std::string> args, CudaGemmArgs* a) {
  args.insert(args.begin(), "gemm");
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  return ParseCudaGemmArgs(static_cast<int>(args.size()), argv.data(), a);
}
}  // namespace

TEST_CASE("cuda gemm parses its flags into the run's options", "[cuda_lib]") {
  CudaGemmArgs a;
  REQUIRE_FALSE(Parse({}, &a).has_value());
  CHECK(a.dtype_name == "bf16");
  CHECK(a.gpus == "all");
  CHECK(a.iters == 20);
  CHECK(a.warmup == 5);
  CHECK(a.m == 0);
  CudaGemmArgs b;
  REQUIRE_FALSE(Parse({"--backend=cuda", "--dtype=fp8", "--m=1024", "--n=2048", "--k=512",
                       "--gpus=0,1", "--iters=3", "--warmup=0", "--jsonl"},
                      &b)
                    .has_value());
  CHECK(b.dtype_name == "fp8");
  CHECK(b.m == 1024);
  CHECK(b.n == 2048);
  CHECK(b.k == 512);
  CHECK(b.gpus == "0,1");
  CHECK(b.iters == 3);
  CHECK(b.warmup == 0);
  CHECK(b.jsonl);
}

TEST_CASE("cuda gemm refuses bad usage with exit 2 and the reason", "[cuda_lib]") {
  struct Case {
    std::vector<std::string> args;
    std::string reason;
  };
  const std::vector<Case> cases = {
      {{"--backend=cpu"}, "backend must be cuda"},
      // The declaration's ranges and choices, in the plan catalog's words.
      {{"--dtype=int8"}, "'int8' is not one of bf16, fp16, fp8, tf32, fp32, fp64"},
      {{"--iters=0"}, "parameter 'iters': '0' is not within [1, 100000]"},
      {{"--warmup=-1"}, "parameter 'warmup': '-1' is not within [0, 10000]"},
      {{"--m=70000"}, "parameter 'm': '70000' is not within [1, 65536]"},
      {{"--threads=4"}, "threads"},  // the cpu backend's flag: not this binary's
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv = {"gemm", "--jsonl"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    INFO(c.args.front());
    LibRun r = RunSuiteFn(RunCudaGemm, argv);
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(c.reason));
    for (const auto& rec : r.records) CHECK_FALSE(rec.has_measurement());
  }
}

TEST_CASE("cuda gemm --help exits 0 and lists its flags", "[cuda_lib]") {
  LibRun r = RunSuiteFn(RunCudaGemm, {"gemm", "--help"}, 30, /*parse_records=*/false);
  CHECK(r.exit_code == 0);
  CHECK_THAT(r.out, Catch::Contains("--dtype"));
  CHECK_THAT(r.out, Catch::Contains("--gpus"));
}

TEST_CASE("cuda gemm without a GPU writes not measured with the reason", "[cuda_lib]") {
  std::string why;
  if (cmax::testing::UsableGpusInChild(&why) > 0) {
    CMAX_SKIP("this machine has a GPU (the no-GPU path needs none)");
  }
  LibRun r =
      RunSuiteFn(RunCudaGemm, {"gemm", "--m=256", "--n=256", "--k=256", "--jsonl"});
  cmax::testing::CheckNotMeasured(r);
}

TEST_CASE("cuda gemm on a GPU is measured and verified", "[gpu]") {
  std::string why;
  if (cmax::testing::UsableGpusInChild(&why) == 0) {
    CMAX_SKIP("no usable GPU (" << why << ")");
  }
  LibRun r = RunSuiteFn(RunCudaGemm,
                        {"gemm", "--dtype=fp32", "--m=1024", "--n=1024", "--k=1024",
                         "--iters=2", "--warmup=1", "--gpus=0", "--jsonl"},
                        300);
  CHECK(r.exit_code == 0);
  bool tflops = false;
  for (const auto& rec : r.records) {
    if (!rec.has_measurement()) continue;
    CHECK(rec.measurement().metric() == "gemm_tflops");
    CHECK(rec.measurement().labels().at("verified") == "true");
    if (rec.measurement().value() > 0) tflops = true;
  }
  CHECK(tflops);
}
