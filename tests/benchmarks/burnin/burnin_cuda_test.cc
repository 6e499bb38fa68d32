// cmax_burnin_cuda alone (linked into this test, not through
// cmax-bench-cuda): its flag parsing and usage errors (the dtype the catalog
// once let through among them), the no-GPU path, and on a GPU machine a
// short verified burn-in.
#include "benchmarks/burnin/cuda/burnin_cuda.h"

#include <catch2/catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "tests/benchmarks/cuda/lib_run.h"
#include "tests/skip.h"

using cmax::bench::CudaBurninArgs;
using cmax::bench::ParseCudaBurninArgs;
using cmax::bench::RunCudaBurnin;
using cmax::testing::LibRun;
using cmax::testing::RunSuiteFn;

namespace {
std::optional<int> Parse(std::vector<std::string> args, CudaBurninArgs* a) {
  args.insert(args.begin(), "burnin");
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  return ParseCudaBurninArgs(static_cast<int>(args.size()), argv.data(), a);
}
}  // namespace

TEST_CASE("cuda burnin parses its flags into the run's options", "[cuda_lib]") {
  CudaBurninArgs a;
  REQUIRE_FALSE(Parse({}, &a).has_value());
  CHECK(a.o.dtype_name == "bf16");
  CHECK(a.o.dtype == cmax::bench::GemmDtype::kBf16);
  CHECK(a.o.duration_s == 60);
  CHECK(a.o.size == 8192);
  CHECK(a.o.bug_report == "off");
  CHECK(a.gpus == "all");
  CudaBurninArgs b;
  REQUIRE_FALSE(Parse({"--backend=cuda", "--dtype=fp32", "--duration=5", "--size=1024",
                       "--gpus=1", "--bug-report=on", "--hang-timeout=3", "--jsonl"},
                      &b)
                    .has_value());
  CHECK(b.o.dtype == cmax::bench::GemmDtype::kFp32);
  CHECK(b.o.duration_s == 5);
  CHECK(b.o.size == 1024);
  CHECK(b.o.bug_report == "on");
  CHECK(b.o.hang_timeout_s == 3);
  CHECK(b.gpus == "1");
  CHECK(b.jsonl);
}

TEST_CASE("cuda burnin refuses bad usage with exit 2 and the reason", "[cuda_lib]") {
  // The declared parameters are refused in the plan catalog's words; the
  // binary's own options by the suite's usage line.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--dtype=fp64", "dtype 'fp64' is not run by backend cuda; it runs bf16, fp32"},
      {"--backend=cpu", "dtype bf16 or fp32"},  // the other binary's backend
      {"--size=1000", "dtype bf16 or fp32"},    // not a multiple of 16
      {"--duration=0", "parameter 'duration': '0' is not within [1, 604800]"},
      {"--bug-report=maybe", "parameter 'bug-report': 'maybe' is not one of on, off"},
      {"--hang-timeout=0.5", "dtype bf16 or fp32"},
  };
  for (const auto& [arg, reason] : cases) {
    INFO(arg);
    LibRun r = RunSuiteFn(RunCudaBurnin, {"burnin", "--jsonl", arg});
    CHECK(r.exit_code == 2);
    CHECK_THAT(r.err, Catch::Contains(reason));
    CHECK(r.records.empty());
  }
  // --threads is the cpu backend's flag: unknown here.
  LibRun t = RunSuiteFn(RunCudaBurnin, {"burnin", "--threads=2", "--jsonl"});
  CHECK(t.exit_code == 2);
  CHECK_THAT(t.err, Catch::Contains("threads"));
}

TEST_CASE("cuda burnin without a GPU writes not measured with the reason", "[cuda_lib]") {
  std::string why;
  if (cmax::testing::UsableGpusInChild(&why) > 0) {
    CMAX_SKIP("this machine has a GPU (the no-GPU path needs none)");
  }
  LibRun r =
      RunSuiteFn(RunCudaBurnin, {"burnin", "--duration=2", "--size=1024", "--jsonl"});
  cmax::testing::CheckNotMeasured(r);
}

TEST_CASE("cuda burnin on a GPU runs, verifies and reports per GPU", "[gpu]") {
  std::string why;
  if (cmax::testing::UsableGpusInChild(&why) == 0) {
    CMAX_SKIP("no usable GPU (" << why << ")");
  }
  LibRun r =
      RunSuiteFn(RunCudaBurnin,
                 {"burnin", "--duration=3", "--size=2048", "--gpus=0", "--jsonl"}, 300);
  CHECK(r.exit_code == 0);
  std::map<std::string, double> metrics;
  for (const auto& rec : r.records) {
    if (rec.has_measurement())
      metrics[rec.measurement().metric()] = rec.measurement().value();
  }
  REQUIRE(metrics.count("burnin_tflops_mean") == 1);
  CHECK(metrics["burnin_tflops_mean"] > 0);
  REQUIRE(metrics.count("burnin_mismatches") == 1);
  CHECK(metrics["burnin_mismatches"] == 0);
}
