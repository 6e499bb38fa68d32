#include "benchmarks/collective_common/collective_types.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace cmax::collective {
namespace {

struct TypeRow {
  DType type;
  const char* name;
  size_t size;
  int64_t exact_limit;
  double tolerance;
  std::vector<const char*> aliases;
};

const std::vector<TypeRow>& Types() {
  // Exact limits: 2^(mantissa bits + 1) for the floating types (half 11,
  // bfloat16 8, float 24, double 53 significant bits), the maximum for the
  // integers (int64/uint64 capped: the sums below never come close).
  static const std::vector<TypeRow>* rows = new std::vector<TypeRow>{
      {DType::kInt8, "int8", 1, 127, 0, {"char", "i8"}},
      {DType::kUint8, "uint8", 1, 255, 0, {"u8"}},
      {DType::kInt32, "int32", 4, 2147483647LL, 0, {"int", "i32"}},
      {DType::kUint32, "uint32", 4, 4294967295LL, 0, {"u32"}},
      {DType::kInt64, "int64", 8, int64_t{1} << 53, 0, {"i64"}},
      {DType::kUint64, "uint64", 8, int64_t{1} << 53, 0, {"u64"}},
      {DType::kHalf, "half", 2, 2048, 1e-3, {"float16", "fp16", "f16"}},
      {DType::kFloat, "float", 4, int64_t{1} << 24, 1e-6, {"float32", "fp32", "f32"}},
      {DType::kDouble, "double", 8, int64_t{1} << 53, 1e-12, {"float64", "fp64", "f64"}},
      {DType::kBfloat16, "bfloat16", 2, 256, 8e-3, {"bf16"}},
  };
  return *rows;
}

const TypeRow& Row(DType t) {
  for (const auto& r : Types()) {
    if (r.type == t) return r;
  }
  return Types().front();
}

struct OpRow {
  Op op;
  const char* name;
  std::vector<const char*> aliases;
};

const std::vector<OpRow>& Ops() {
  static const std::vector<OpRow>* rows = new std::vector<OpRow>{
      {Op::kAllReduce, "all_reduce", {"allreduce"}},
      {Op::kAllGather, "all_gather", {"allgather"}},
      {Op::kReduceScatter, "reduce_scatter", {"reducescatter"}},
      {Op::kAlltoall, "alltoall", {"all_to_all", "alltoall"}},
      {Op::kBroadcast, "broadcast", {"bcast"}},
      {Op::kSendRecv, "sendrecv", {"send_recv"}},
  };
  return *rows;
}

}  // namespace

const char* DTypeName(DType t) { return Row(t).name; }
size_t DTypeSize(DType t) { return Row(t).size; }
bool IsFloating(DType t) {
  return t == DType::kHalf || t == DType::kFloat || t == DType::kDouble || t == DType::kBfloat16;
}
int64_t ExactIntegerLimit(DType t) { return Row(t).exact_limit; }
double Tolerance(DType t) { return Row(t).tolerance; }

absl::StatusOr<DType> ParseDType(const std::string& name) {
  const std::string n = absl::AsciiStrToLower(name);
  std::string known;
  for (const auto& r : Types()) {
    if (n == r.name) return r.type;
    for (const char* a : r.aliases) {
      if (n == a) return r.type;
    }
    absl::StrAppend(&known, known.empty() ? "" : ", ", r.name);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown dtype '", name, "' (known: ", known, ")"));
}

const char* OpName(Op op) {
  for (const auto& r : Ops()) {
    if (r.op == op) return r.name;
  }
  return "?";
}

const std::vector<Op>& AllOps() {
  static const std::vector<Op>* ops = new std::vector<Op>{
      Op::kAllReduce, Op::kAllGather, Op::kReduceScatter, Op::kAlltoall, Op::kBroadcast,
      Op::kSendRecv};
  return *ops;
}

absl::StatusOr<std::vector<Op>> ParseOps(const std::string& text) {
  const std::string t = absl::AsciiStrToLower(text);
  if (t == "all") return AllOps();
  std::vector<Op> out;
  for (absl::string_view piece : absl::StrSplit(t, ',', absl::SkipEmpty())) {
    bool found = false;
    for (const auto& r : Ops()) {
      bool match = piece == r.name;
      for (const char* a : r.aliases) match = match || piece == a;
      if (match) {
        if (std::find(out.begin(), out.end(), r.op) == out.end()) out.push_back(r.op);
        found = true;
        break;
      }
    }
    if (!found) {
      return absl::InvalidArgumentError(absl::StrCat(
          "unknown op '", piece,
          "' (known: all_reduce, all_gather, reduce_scatter, alltoall, broadcast, sendrecv, all)"));
    }
  }
  if (out.empty()) return absl::InvalidArgumentError("no op given");
  return out;
}

bool IsReduction(Op op) { return op == Op::kAllReduce || op == Op::kReduceScatter; }
bool HasInPlace(Op op) { return op != Op::kAlltoall && op != Op::kSendRecv; }
int RootOf(Op op) { return op == Op::kBroadcast ? 0 : -1; }

size_t Shape::size_bytes() const { return std::max(send_count, recv_count) * elem_size; }

Shape ShapeFor(Op op, size_t bytes, size_t elem_size, int nranks) {
  Shape s;
  s.elem_size = elem_size;
  const size_t n = static_cast<size_t>(std::max(nranks, 1));
  const size_t count = elem_size == 0 ? 0 : bytes / elem_size;
  const size_t per_rank = count / n;
  switch (op) {
    case Op::kAllReduce:
    case Op::kBroadcast:
    case Op::kSendRecv:
      s.send_count = s.recv_count = s.param_count = count;
      break;
    case Op::kAllGather:
      s.send_count = per_rank;
      s.recv_count = per_rank * n;
      s.param_count = per_rank;
      s.send_inplace_offset = per_rank;
      break;
    case Op::kReduceScatter:
      s.send_count = per_rank * n;
      s.recv_count = per_rank;
      s.param_count = per_rank;
      s.recv_inplace_offset = per_rank;
      break;
    case Op::kAlltoall:
      s.send_count = s.recv_count = per_rank * n;
      s.param_count = per_rank;
      break;
  }
  return s;
}

double BusFactor(Op op, int nranks) {
  const double n = std::max(nranks, 1);
  switch (op) {
    case Op::kAllReduce: return 2.0 * (n - 1) / n;
    case Op::kAllGather:
    case Op::kReduceScatter:
    case Op::kAlltoall: return (n - 1) / n;
    case Op::kBroadcast:
    case Op::kSendRecv: return 1.0;
  }
  return 1.0;
}

bool BusBwDefined(Op op, int nranks) { return BusFactor(op, nranks) > 0; }

Bandwidth ComputeBandwidth(Op op, const Shape& shape, int nranks, double seconds) {
  Bandwidth bw;
  if (seconds <= 0) return bw;
  double bytes = static_cast<double>(shape.param_count) * static_cast<double>(shape.elem_size);
  if (op == Op::kAllGather || op == Op::kReduceScatter || op == Op::kAlltoall) {
    bytes *= std::max(nranks, 1);
  }
  bw.algbw_gbps = bytes / 1e9 / seconds;
  bw.busbw_gbps = bw.algbw_gbps * BusFactor(op, nranks);
  return bw;
}

absl::StatusOr<std::vector<size_t>> SizeSweep(size_t min_bytes, size_t max_bytes,
                                              int64_t factor) {
  if (min_bytes == 0) return absl::InvalidArgumentError("minimum size must be at least 1 byte");
  if (min_bytes > max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("minimum size ", min_bytes, " is above the maximum ", max_bytes));
  }
  if (factor < 2) return absl::InvalidArgumentError("size factor must be at least 2");
  std::vector<size_t> sizes;
  for (size_t s = min_bytes; s <= max_bytes; s *= static_cast<size_t>(factor)) {
    sizes.push_back(s);
    if (s > max_bytes / static_cast<size_t>(factor)) break;
  }
  return sizes;
}

}  // namespace cmax::collective
