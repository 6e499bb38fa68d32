// nccl-tests' definitions (shapes, algbw/busbw factors, size sweep) and the
// verifiable data of benchmarks/collective_common.
#include <catch2/catch.hpp>
#include <cmath>
#include <vector>

#include "benchmarks/collective_common/collective_types.h"
#include "benchmarks/collective_common/data_pattern.h"

using namespace cmax::collective;

TEST_CASE("bus bandwidth factors follow nccl-tests PERFORMANCE.md", "[collective]") {
  // 8 ranks: all_reduce 2*7/8, gather/scatter/alltoall 7/8, broadcast and
  // sendrecv 1.
  CHECK(BusFactor(Op::kAllReduce, 8) == Approx(1.75));
  CHECK(BusFactor(Op::kAllGather, 8) == Approx(0.875));
  CHECK(BusFactor(Op::kReduceScatter, 8) == Approx(0.875));
  CHECK(BusFactor(Op::kAlltoall, 8) == Approx(0.875));
  CHECK(BusFactor(Op::kBroadcast, 8) == Approx(1.0));
  CHECK(BusFactor(Op::kSendRecv, 8) == Approx(1.0));
  CHECK(BusFactor(Op::kAllReduce, 1) == Approx(0.0));
}

TEST_CASE("algbw counts the bytes nccl-tests counts", "[collective]") {
  // all_reduce of 1 GB (250M floats) in 0.5 s: algbw 2 GB/s, busbw 3 with 4 ranks.
  Shape ar = ShapeFor(Op::kAllReduce, 1000000000, 4, 4);
  CHECK(ar.param_count == 250000000);
  Bandwidth b = ComputeBandwidth(Op::kAllReduce, ar, 4, 0.5);
  CHECK(b.algbw_gbps == Approx(2.0));
  CHECK(b.busbw_gbps == Approx(3.0));
  // all_gather of a 1 GB result over 4 ranks: each sends 250 MB, algbw uses
  // count*size*n = the whole gathered buffer.
  Shape ag = ShapeFor(Op::kAllGather, 1000000000, 4, 4);
  CHECK(ag.send_count == 62500000);
  CHECK(ag.recv_count == 250000000);
  CHECK(ag.size_bytes() == 1000000000);
  Bandwidth g = ComputeBandwidth(Op::kAllGather, ag, 4, 1.0);
  CHECK(g.algbw_gbps == Approx(1.0));
  CHECK(g.busbw_gbps == Approx(0.75));
  Shape rs = ShapeFor(Op::kReduceScatter, 4096, 4, 4);
  CHECK(rs.send_count == 1024);
  CHECK(rs.recv_count == 256);
  CHECK(rs.recv_inplace_offset == 256);
  Shape a2a = ShapeFor(Op::kAlltoall, 4096, 4, 4);
  CHECK(a2a.param_count == 256);
  CHECK(ComputeBandwidth(Op::kAlltoall, a2a, 4, 1e-6).algbw_gbps == Approx(4.096));
  // Fewer elements than ranks: nothing to move.
  CHECK(ShapeFor(Op::kAllGather, 8, 4, 4).param_count == 0);
}

TEST_CASE("size sweep multiplies by the factor up to the maximum", "[collective]") {
  auto s = SizeSweep(8, 1024, 4);
  REQUIRE(s.ok());
  CHECK(*s == std::vector<size_t>{8, 32, 128, 512});
  CHECK(SizeSweep(64, 64, 2)->size() == 1);
  CHECK(!SizeSweep(128, 64, 2).ok());
  CHECK(!SizeSweep(8, 64, 1).ok());
}

TEST_CASE("dtype and op names as nccl-tests spells them", "[collective]") {
  CHECK(*ParseDType("float") == DType::kFloat);
  CHECK(*ParseDType("bf16") == DType::kBfloat16);
  CHECK(*ParseDType("int32") == DType::kInt32);
  CHECK(!ParseDType("complex").ok());
  CHECK(ParseOps("all")->size() == 6);
  auto two = ParseOps("allreduce,sendrecv");
  REQUIRE(two.ok());
  CHECK(two->size() == 2);
  CHECK(!ParseOps("reduce_all").ok());
}

TEST_CASE("verifiable data: expected outputs match a direct computation", "[collective]") {
  const int n = 3;
  Shape s = ShapeFor(Op::kAllReduce, 64 * 4, 4, n);
  std::vector<std::vector<float>> in(n, std::vector<float>(s.send_count));
  for (int r = 0; r < n; ++r) FillInput(Op::kAllReduce, DType::kFloat, s, r, n, 7, in[r].data());
  std::vector<float> sum(s.recv_count, 0);
  for (int r = 0; r < n; ++r)
    for (size_t i = 0; i < sum.size(); ++i) sum[i] += in[r][i];
  CheckResult ok = CheckOutput(Op::kAllReduce, DType::kFloat, s, 1, n, 7, sum.data());
  CHECK(ok.wrong == 0);
  // Not all zeros (zeros would inflate throughput and check nothing).
  bool nonzero = false;
  for (float v : sum) nonzero = nonzero || v != 0;
  CHECK(nonzero);
  sum[5] += 1;
  CheckResult bad = CheckOutput(Op::kAllReduce, DType::kFloat, s, 1, n, 7, sum.data());
  CHECK(bad.wrong == 1);
  CHECK(bad.first_index == 5);
  CHECK(bad.got == Approx(bad.expected + 1));
}

TEST_CASE("reduction sums stay exact in half, bfloat16 and int8", "[collective]") {
  for (int v = 0; v <= 2048; ++v) {
    CHECK(HalfToFloat(FloatToHalf(static_cast<float>(v))) == static_cast<float>(v));
  }
  for (int v = 0; v <= 256; ++v) {
    CHECK(Bfloat16ToFloat(FloatToBfloat16(static_cast<float>(v))) == static_cast<float>(v));
  }
  // 64 ranks of int8: the largest possible sum must fit.
  const int range = ValueRange(Op::kAllReduce, DType::kInt8, 64);
  CHECK((range - 1) * 64 <= 127);
  CHECK(range >= 2);
}
