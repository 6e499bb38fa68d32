#include "benchmarks/gpu_common/gemm_check.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <random>
#include <set>

using cmax::bench::GemmDtype;
using cmax::bench::GemmSample;

namespace {
// A sampled element of a random k-long dot product, with `got` rounded to
// `bits` mantissa bits the way a correct GEMM's output would be.
GemmSample RandomSample(int64_t k, int bits, std::mt19937_64& rng) {
  std::uniform_real_distribution<double> d(-1, 1);
  double sum = 0, sq = 0;
  for (int64_t l = 0; l < k; ++l) {
    double p = d(rng) * d(rng);
    sum += p;
    sq += p * p;
  }
  int e;
  double frac = std::frexp(sum, &e);
  double scale = std::ldexp(1.0, bits);
  GemmSample s;
  s.ref = sum;
  s.got = std::ldexp(std::round(frac * scale) / scale, e);
  s.scale = std::sqrt(sq);
  return s;
}
}  // namespace

TEST_CASE("correctly rounded results pass, corrupted ones fail", "[gemm_check]") {
  std::mt19937_64 rng(7);
  for (auto [dtype, bits] : {std::pair{GemmDtype::kBf16, 8}, {GemmDtype::kFp16, 11},
                             {GemmDtype::kFp32, 24}, {GemmDtype::kFp64, 53}}) {
    std::vector<GemmSample> samples;
    for (int i = 0; i < 64; ++i) samples.push_back(RandomSample(4096, bits, rng));
    auto ok = cmax::bench::CheckGemmSamples(dtype, 4096, samples);
    CHECK(ok.ok());
    CHECK(ok.checked == 64);
    // A sign flip, a NaN and an off-by-one-scale element are all wrong.
    samples[3].got = -samples[3].got + 0.5 * samples[3].scale;
    samples[9].got = NAN;
    samples[20].got += samples[20].scale;
    auto bad = cmax::bench::CheckGemmSamples(dtype, 4096, samples);
    CHECK_FALSE(bad.ok());
    CHECK(bad.wrong == 3);
    REQUIRE(bad.first_wrong);
    CHECK_THAT(bad.Describe(), Catch::Contains("3 of 64"));
  }
}

TEST_CASE("the tolerance grows with sqrt(k)", "[gemm_check]") {
  GemmSample s;
  s.ref = 0;
  s.scale = 1;
  double a = cmax::bench::AllowedError(GemmDtype::kFp32, 1024, s);
  double b = cmax::bench::AllowedError(GemmDtype::kFp32, 4096, s);
  CHECK(b / a == Approx(2.0).epsilon(1e-6));
  // Lower precision (of the output, of the inputs) is allowed more error.
  s.ref = 1;
  CHECK(cmax::bench::AllowedError(GemmDtype::kBf16, 4096, s) >
        cmax::bench::AllowedError(GemmDtype::kFp32, 4096, s));
  CHECK(cmax::bench::AllowedError(GemmDtype::kTf32, 4096, s) >
        cmax::bench::AllowedError(GemmDtype::kFp32, 4096, s));
}

TEST_CASE("sample positions, medians and dtype names", "[gemm_check]") {
  auto pos = cmax::bench::PickSamplePositions(100, 50, 256, 1);
  CHECK(pos.size() == 256);
  std::set<std::pair<int64_t, int64_t>> unique(pos.begin(), pos.end());
  CHECK(unique.size() == pos.size());
  CHECK(unique.count({0, 0}) == 1);
  CHECK(unique.count({99, 49}) == 1);
  for (auto [i, j] : pos) {
    CHECK(i < 100);
    CHECK(j < 50);
  }
  CHECK(cmax::bench::PickSamplePositions(2, 2, 256, 1).size() == 4);
  for (const char* name : {"bf16", "fp16", "fp8", "tf32", "fp32", "fp64"}) {
    auto d = cmax::bench::ParseGemmDtype(name);
    REQUIRE(d);
    CHECK(cmax::bench::GemmDtypeName(*d) == name);
  }
  CHECK_FALSE(cmax::bench::ParseGemmDtype("int8"));
}
