#include "benchmarks/collective_common/data_pattern.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace cmax::collective {
namespace {

// splitmix64 finaliser: a good 64-bit mix, cheap enough for every element.
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

template <typename T>
void Put(void* b, size_t i, double v) {
  static_cast<T*>(b)[i] = static_cast<T>(v);
}
template <typename T>
double Get(const void* b, size_t i) {
  return static_cast<double>(static_cast<const T*>(b)[i]);
}

}  // namespace

int ValueRange(Op op, DType type, int nranks) {
  const int64_t limit = ExactIntegerLimit(type);
  int64_t range = IsReduction(op) ? limit / std::max(nranks, 1) + 1 : limit + 1;
  range = std::min<int64_t>(range, 16);
  return static_cast<int>(std::max<int64_t>(range, 1));
}

int64_t InputValue(int rank, uint64_t index, uint64_t seed, int range) {
  if (range <= 1) return 0;
  const uint64_t h = Mix(index ^ Mix(static_cast<uint64_t>(rank) * 0x100000001b3ULL ^ Mix(seed)));
  return static_cast<int64_t>(h % static_cast<uint64_t>(range));
}

void StoreValue(DType type, void* b, size_t i, double v) {
  switch (type) {
    case DType::kInt8: Put<int8_t>(b, i, v); break;
    case DType::kUint8: Put<uint8_t>(b, i, v); break;
    case DType::kInt32: Put<int32_t>(b, i, v); break;
    case DType::kUint32: Put<uint32_t>(b, i, v); break;
    case DType::kInt64: Put<int64_t>(b, i, v); break;
    case DType::kUint64: Put<uint64_t>(b, i, v); break;
    case DType::kFloat: Put<float>(b, i, v); break;
    case DType::kDouble: Put<double>(b, i, v); break;
    case DType::kHalf:
      static_cast<uint16_t*>(b)[i] = FloatToHalf(static_cast<float>(v));
      break;
    case DType::kBfloat16:
      static_cast<uint16_t*>(b)[i] = FloatToBfloat16(static_cast<float>(v));
      break;
  }
}

double LoadValue(DType type, const void* b, size_t i) {
  switch (type) {
    case DType::kInt8: return Get<int8_t>(b, i);
    case DType::kUint8: return Get<uint8_t>(b, i);
    case DType::kInt32: return Get<int32_t>(b, i);
    case DType::kUint32: return Get<uint32_t>(b, i);
    case DType::kInt64: return Get<int64_t>(b, i);
    case DType::kUint64: return Get<uint64_t>(b, i);
    case DType::kFloat: return Get<float>(b, i);
    case DType::kDouble: return Get<double>(b, i);
    case DType::kHalf: return HalfToFloat(static_cast<const uint16_t*>(b)[i]);
    case DType::kBfloat16: return Bfloat16ToFloat(static_cast<const uint16_t*>(b)[i]);
  }
  return 0;
}

void FillInput(Op op, DType type, const Shape& shape, int rank, int nranks, uint64_t seed,
               void* input) {
  const int range = ValueRange(op, type, nranks);
  for (size_t i = 0; i < shape.send_count; ++i) {
    StoreValue(type, input, i, static_cast<double>(InputValue(rank, i, seed, range)));
  }
}

void Poison(void* buffer, size_t bytes) { std::memset(buffer, 0xFF, bytes); }

double ExpectedOutput(Op op, DType type, const Shape& shape, int rank, int nranks, uint64_t seed,
                      size_t i) {
  const int range = ValueRange(op, type, nranks);
  const size_t c = shape.param_count;
  const int n = std::max(nranks, 1);
  switch (op) {
    case Op::kAllReduce: {
      int64_t sum = 0;
      for (int j = 0; j < n; ++j) sum += InputValue(j, i, seed, range);
      return static_cast<double>(sum);
    }
    case Op::kAllGather:
      if (c == 0) return 0;
      return static_cast<double>(InputValue(static_cast<int>(i / c), i % c, seed, range));
    case Op::kReduceScatter: {
      int64_t sum = 0;
      for (int j = 0; j < n; ++j) sum += InputValue(j, rank * c + i, seed, range);
      return static_cast<double>(sum);
    }
    case Op::kAlltoall:
      if (c == 0) return 0;
      return static_cast<double>(
          InputValue(static_cast<int>(i / c), rank * c + i % c, seed, range));
    case Op::kBroadcast:
      return static_cast<double>(InputValue(RootOf(op), i, seed, range));
    case Op::kSendRecv:
      return static_cast<double>(InputValue((rank - 1 + n) % n, i, seed, range));
  }
  return 0;
}

CheckResult CheckOutput(Op op, DType type, const Shape& shape, int rank, int nranks, uint64_t seed,
                        const void* output) {
  CheckResult r;
  const double tol = Tolerance(type);
  for (size_t i = 0; i < shape.recv_count; ++i) {
    const double want = ExpectedOutput(op, type, shape, rank, nranks, seed, i);
    const double got = LoadValue(type, output, i);
    const bool ok = tol == 0 ? got == want
                             : std::isfinite(got) && std::fabs(got - want) <=
                                                         tol * std::max(1.0, std::fabs(want));
    if (ok) continue;
    if (r.wrong == 0) {
      r.first_index = static_cast<int64_t>(i);
      r.expected = want;
      r.got = got;
    }
    ++r.wrong;
  }
  return r;
}

uint16_t FloatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t abs = x & 0x7fffffffu;
  if (abs >= 0x7f800000u) return static_cast<uint16_t>(sign | (abs > 0x7f800000u ? 0x7e00u : 0x7c00u));
  if (abs >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (abs < 0x38800000u) {  // subnormal half (or zero)
    const float a = std::fabs(f) * 16777216.0f;  // 2^24: units of the smallest subnormal
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(std::nearbyint(a)));
  }
  uint32_t m = abs + 0xc8000000u;  // rebias exponent 127 -> 15
  m += 0x0fffu + ((m >> 13) & 1u);  // round to nearest even
  return static_cast<uint16_t>(sign | (m >> 13));
}

float HalfToFloat(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  const uint32_t man = h & 0x3ffu;
  float out;
  if (exp == 0) {
    out = std::ldexp(static_cast<float>(man), -24);
    return sign ? -out : out;
  }
  uint32_t x;
  if (exp == 31) {
    x = sign | 0x7f800000u | (man << 13);
  } else {
    x = sign | ((exp + 112) << 23) | (man << 13);
  }
  std::memcpy(&out, &x, 4);
  return out;
}

uint16_t FloatToBfloat16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // NaN
  x += 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>(x >> 16);
}

float Bfloat16ToFloat(uint16_t b) {
  const uint32_t x = static_cast<uint32_t>(b) << 16;
  float out;
  std::memcpy(&out, &x, 4);
  return out;
}

}  // namespace cmax::collective
