#include "benchmarks/collective/mpi_backend.h"

#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "benchmarks/collective_common/host_memory_backend.h"

namespace cmax::collective {
namespace {

absl::Status MpiError(const char* call, int rc) {
  if (rc == MPI_SUCCESS) return absl::OkStatus();
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  int rank = -1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  return absl::UnavailableError(absl::StrCat(call, " on rank ", rank, ": ", text));
}

MPI_Datatype MpiType(DType t) {
  switch (t) {
    case DType::kInt8: return MPI_INT8_T;
    case DType::kUint8: return MPI_UINT8_T;
    case DType::kInt32: return MPI_INT32_T;
    case DType::kUint32: return MPI_UINT32_T;
    case DType::kInt64: return MPI_INT64_T;
    case DType::kUint64: return MPI_UINT64_T;
    case DType::kFloat: return MPI_FLOAT;
    case DType::kDouble: return MPI_DOUBLE;
    default: return MPI_DATATYPE_NULL;
  }
}

class MpiBackend : public HostMemoryBackend {
 public:
  MpiBackend() {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
  }
  ~MpiBackend() override { MPI_Finalize(); }

  std::string name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int world_size() const override { return size_; }
  absl::Status CheckDType(DType t) const override {
    if (MpiType(t) == MPI_DATATYPE_NULL) {
      return absl::UnimplementedError(absl::StrCat("MPI has no ", DTypeName(t), " type"));
    }
    return absl::OkStatus();
  }

  // MPI_Reduce_scatter_block with MPI_IN_PLACE leaves the result at the
  // front of the buffer (MPI 3.1, section 5.10.1).
  size_t InPlaceOutputOffset(Op op, const Shape& shape) const override {
    if (op == Op::kReduceScatter) return 0;
    return Backend::InPlaceOutputOffset(op, shape);
  }

  absl::Status Run(Op op, DType t, const void* send, void* recv, const Shape& s,
                   bool in_place) override {
    const MPI_Datatype type = MpiType(t);
    const int c = static_cast<int>(s.param_count);
    const void* src = in_place ? MPI_IN_PLACE : send;
    switch (op) {
      case Op::kAllReduce:
        return MpiError("MPI_Allreduce",
                        MPI_Allreduce(src, recv, c, type, MPI_SUM, MPI_COMM_WORLD));
      case Op::kAllGather:
        return MpiError("MPI_Allgather",
                        MPI_Allgather(src, c, type, recv, c, type, MPI_COMM_WORLD));
      case Op::kReduceScatter:
        return MpiError("MPI_Reduce_scatter_block",
                        MPI_Reduce_scatter_block(in_place ? MPI_IN_PLACE : send, recv, c, type,
                                                 MPI_SUM, MPI_COMM_WORLD));
      case Op::kAlltoall:
        return MpiError("MPI_Alltoall",
                        MPI_Alltoall(send, c, type, recv, c, type, MPI_COMM_WORLD));
      case Op::kBroadcast:
        // MPI broadcasts one buffer: out-of-place, the root first copies its
        // input into it (a host memcpy, counted in the time).
        if (!in_place && rank_ == RootOf(op)) {
          std::memcpy(recv, send, s.param_count * s.elem_size);
        }
        return MpiError("MPI_Bcast", MPI_Bcast(recv, c, type, RootOf(op), MPI_COMM_WORLD));
      case Op::kSendRecv:
        return MpiError("MPI_Sendrecv",
                        MPI_Sendrecv(send, c, type, (rank_ + 1) % size_, 7, recv, c, type,
                                     (rank_ - 1 + size_) % size_, 7, MPI_COMM_WORLD,
                                     MPI_STATUS_IGNORE));
    }
    return absl::InternalError("unknown op");
  }
  absl::Status Synchronize() override { return absl::OkStatus(); }
  absl::Status Barrier() override { return MpiError("MPI_Barrier", MPI_Barrier(MPI_COMM_WORLD)); }

  absl::StatusOr<std::vector<double>> AllGather(const std::vector<double>& values) override {
    std::vector<double> in = values;
    std::vector<double> out(values.size() * static_cast<size_t>(size_));
    auto s = MpiError("MPI_Allgather", MPI_Allgather(in.data(), static_cast<int>(in.size()),
                                                     MPI_DOUBLE, out.data(),
                                                     static_cast<int>(in.size()), MPI_DOUBLE,
                                                     MPI_COMM_WORLD));
    if (!s.ok()) return s;
    return out;
  }

  absl::StatusOr<std::vector<std::string>> AllGatherStrings(const std::string& mine) override {
    constexpr int kMax = 256;
    char in[kMax] = {0};
    std::strncpy(in, mine.c_str(), kMax - 1);
    std::vector<char> all(static_cast<size_t>(kMax) * static_cast<size_t>(size_));
    auto s = MpiError("MPI_Allgather",
                      MPI_Allgather(in, kMax, MPI_CHAR, all.data(), kMax, MPI_CHAR,
                                    MPI_COMM_WORLD));
    if (!s.ok()) return s;
    std::vector<std::string> out;
    for (int r = 0; r < size_; ++r) out.emplace_back(all.data() + static_cast<size_t>(r) * kMax);
    return out;
  }

 private:
  int rank_ = 0, size_ = 1;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> CreateMpiBackend() {
  if (std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr && std::getenv("PMIX_RANK") == nullptr &&
      std::getenv("PMI_RANK") == nullptr) {
    return absl::FailedPreconditionError(
        "the mpi backend runs under mpirun (no OMPI_COMM_WORLD_SIZE/PMIX_RANK in the "
        "environment); use the gloo backend under the agents launcher");
  }
  int provided = 0;
  int rc = MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SINGLE, &provided);
  if (rc != MPI_SUCCESS) return absl::UnavailableError("MPI_Init_thread failed");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  return std::unique_ptr<Backend>(new MpiBackend());
}

}  // namespace cmax::collective
