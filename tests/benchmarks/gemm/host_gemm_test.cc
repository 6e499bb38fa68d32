#include "benchmarks/gemm/host_gemm.h"

#include <catch2/catch.hpp>
#include <chrono>

#include "common/subprocess.h"
#include "tests/benchmarks/suite_run.h"

using cmax::bench::GemmDtype;
using cmax::bench::HostGemmOptions;

TEST_CASE("host GEMM is verified and gives a sane figure", "[gemm]") {
  for (GemmDtype dtype : {GemmDtype::kFp32, GemmDtype::kFp64}) {
    HostGemmOptions o;
    o.dtype = dtype;
    o.m = o.n = o.k = 256;
    o.iters = 3;
    auto r = cmax::bench::RunHostGemm(o);
    REQUIRE(r.ok());
    INFO(r->verdict.Describe());
    CHECK(r->verdict.ok());
    CHECK(r->verdict.checked == 256);
    CHECK(r->gflops > 0.5);
    CHECK(r->gflops < 1e5);  // a 2-core CI machine cannot do 100 TFLOP/s
    CHECK(r->threads >= 1);
  }
}

TEST_CASE("a corrupted GEMM result is caught", "[gemm]") {
  HostGemmOptions o;
  o.dtype = GemmDtype::kFp32;
  o.m = 96;
  o.n = 80;
  o.k = 300;  // not multiples of anything: exercises edge handling
  o.iters = 1;
  o.fault_inject = true;
  auto r = cmax::bench::RunHostGemm(o);
  REQUIRE(r.ok());
  CHECK_FALSE(r->verdict.ok());
  CHECK(r->verdict.wrong == 1);
  CHECK_THAT(r->verdict.Describe(), Catch::Contains("C["));
}

TEST_CASE("unsupported host dtypes and sizes are refused", "[gemm]") {
  HostGemmOptions o;
  o.dtype = GemmDtype::kBf16;
  CHECK(cmax::bench::RunHostGemm(o).status().code() == absl::StatusCode::kInvalidArgument);
  o.dtype = GemmDtype::kFp64;
  o.m = 0;
  CHECK_FALSE(cmax::bench::RunHostGemm(o).ok());
}

TEST_CASE("cmax-bench gemm --fault-inject exits 1 with a FAIL finding naming the element",
          "[gemm]") {
  std::string bin = std::string(CMAX_TEST_BIN_DIR) + "/cmax-bench";
  auto run = cmax::testing::RunSuite(
      "cmax-bench", {"gemm", "--backend", "cpu", "--dtype", "fp64", "--m=128", "--n=128",
                     "--k=128", "--iters=2", "--fault-inject", "--jsonl"},
      std::chrono::seconds(60));
  CHECK(run.exit_code == 1);
  int fails = 0, measurements = 0;
  for (const auto& rec : run.records) {
    if (rec.has_measurement()) {
      ++measurements;
      CHECK(rec.measurement().metric() == "gemm_tflops");
      CHECK(rec.measurement().labels().at("backend") == "cpu");
      CHECK(rec.measurement().labels().at("verified") == "false");
    }
    if (rec.has_finding() && rec.finding().severity() == cmax::v1::SEVERITY_FAIL) {
      ++fails;
      CHECK(rec.finding().check_id() == "gemm.wrong_result");
      CHECK_THAT(rec.finding().detail(), Catch::Matches(".*C\\[[0-9]+,[0-9]+\\].*"));
    }
  }
  CHECK(measurements == 1);
  CHECK(fails == 1);

  // The same run without the fault passes.
  auto clean = cmax::RunCommand({bin, "gemm", "--backend=cpu", "--dtype=fp32", "--m=128",
                                 "--n=128", "--k=128", "--iters=2"},
                                std::chrono::seconds(60));
  REQUIRE(clean.ok());
  CHECK(clean->exit.code == 0);
  CHECK_THAT(clean->out, Catch::Contains("within tolerance"));
  // A GPU backend is not in this binary: could not run.
  auto gpu = cmax::RunCommand({bin, "gemm", "--backend=cuda"}, std::chrono::seconds(60));
  REQUIRE(gpu.ok());
  CHECK(gpu->exit.code == 2);
}
