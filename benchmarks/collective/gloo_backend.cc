#include "benchmarks/collective/gloo_backend.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <exception>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "benchmarks/collective_common/host_memory_backend.h"
#include "benchmarks/collective/rendezvous_store.h"
#include "common/rendezvous_client.h"
#include "gloo/allgather.h"
#include "gloo/allreduce.h"
#include "gloo/alltoall.h"
#include "gloo/barrier.h"
#include "gloo/broadcast.h"
#include "gloo/math.h"
#include "gloo/rendezvous/context.h"
#include "gloo/rendezvous/hash_store.h"
#include "gloo/transport/tcp/device.h"

namespace cmax::collective {
namespace {

class GlooBackend : public HostMemoryBackend {
 public:
  GlooBackend(std::unique_ptr<RendezvousClient> client,
              std::unique_ptr<::gloo::rendezvous::Store> store,
              std::shared_ptr<::gloo::Context> context, std::chrono::milliseconds timeout)
      : client_(std::move(client)), store_(std::move(store)), ctx_(std::move(context)),
        timeout_(timeout) {}

  std::string name() const override { return "gloo"; }
  int rank() const override { return ctx_->rank; }
  int world_size() const override { return ctx_->size; }

  absl::Status CheckDType(DType t) const override {
    if (t == DType::kHalf || t == DType::kBfloat16) {
      return absl::UnimplementedError(absl::StrCat(
          "the gloo backend runs int8 uint8 int32 uint32 int64 uint64 float double, not ",
          DTypeName(t)));
    }
    return absl::OkStatus();
  }


  absl::Status Run(Op op, DType t, const void* send, void* recv, const Shape& s,
                   bool in_place) override {
    return Guard(absl::StrCat("gloo ", OpName(op)), [&] {
      switch (t) {
        case DType::kInt8: Typed<int8_t>(op, send, recv, s, in_place); break;
        case DType::kUint8: Typed<uint8_t>(op, send, recv, s, in_place); break;
        case DType::kInt32: Typed<int32_t>(op, send, recv, s, in_place); break;
        case DType::kUint32: Typed<uint32_t>(op, send, recv, s, in_place); break;
        case DType::kInt64: Typed<int64_t>(op, send, recv, s, in_place); break;
        case DType::kUint64: Typed<uint64_t>(op, send, recv, s, in_place); break;
        case DType::kFloat: Typed<float>(op, send, recv, s, in_place); break;
        case DType::kDouble: Typed<double>(op, send, recv, s, in_place); break;
        default: throw ::gloo::InvalidOperationException("unsupported dtype");
      }
    });
  }

  absl::Status Synchronize() override { return absl::OkStatus(); }

  absl::Status Barrier() override {
    return Guard("gloo barrier", [&] {
      ::gloo::BarrierOptions opts(ctx_);
      opts.setTimeout(timeout_);
      ::gloo::barrier(opts);
    });
  }

  absl::StatusOr<std::vector<double>> AllGather(const std::vector<double>& values) override {
    std::vector<double> in = values;
    std::vector<double> out(values.size() * static_cast<size_t>(world_size()));
    if (values.empty()) return out;
    auto s = Guard("gloo allgather (results)", [&] {
      ::gloo::AllgatherOptions opts(ctx_);
      opts.setInput(in.data(), in.size());
      opts.setOutput(out.data(), out.size());
      opts.setTimeout(timeout_);
      ::gloo::allgather(opts);
    });
    if (!s.ok()) return s;
    return out;
  }

  absl::StatusOr<std::vector<std::string>> AllGatherStrings(const std::string& mine) override {
    const std::string base = absl::StrCat("cmax/strings/", ++string_rounds_, "/");
    std::vector<std::string> out(static_cast<size_t>(world_size()));
    auto s = Guard("exchanging strings", [&] {
      store_->set(base + std::to_string(rank()), std::vector<char>(mine.begin(), mine.end()));
      for (int r = 0; r < world_size(); ++r) {
        auto v = store_->get(base + std::to_string(r));
        out[static_cast<size_t>(r)] = std::string(v.begin(), v.end());
      }
    });
    if (!s.ok()) return s;
    return out;
  }

 private:
  template <typename F>
  absl::Status Guard(const std::string& what, F&& fn) {
    try {
      fn();
    } catch (const std::exception& e) {
      return absl::UnavailableError(absl::StrCat(what, " on rank ", rank(), ": ", e.what()));
    }
    return absl::OkStatus();
  }

  template <typename T>
  void Typed(Op op, const void* send_v, void* recv_v, const Shape& s, bool in_place) {
    T* send = static_cast<T*>(const_cast<void*>(send_v));
    T* recv = static_cast<T*>(recv_v);
    const size_t n = static_cast<size_t>(world_size());
    const size_t c = s.param_count;
    using ReduceFn = void (*)(void*, const void*, const void*, size_t);
    switch (op) {
      case Op::kAllReduce: {
        ::gloo::AllreduceOptions opts(ctx_);
        if (!in_place) opts.setInput(send, c);
        opts.setOutput(recv, c);
        opts.setReduceFunction(static_cast<ReduceFn>(&::gloo::sum<T>));
        opts.setTimeout(timeout_);
        ::gloo::allreduce(opts);
        break;
      }
      case Op::kAllGather: {
        ::gloo::AllgatherOptions opts(ctx_);
        if (!in_place) opts.setInput(send, c);
        opts.setOutput(recv, c * n);
        opts.setTimeout(timeout_);
        ::gloo::allgather(opts);
        break;
      }
      case Op::kAlltoall: {
        ::gloo::AlltoallOptions opts(ctx_);
        opts.setInput(send, c * n);
        opts.setOutput(recv, c * n);
        opts.setTimeout(timeout_);
        ::gloo::alltoall(opts);
        break;
      }
      case Op::kBroadcast: {
        ::gloo::BroadcastOptions opts(ctx_);
        opts.setRoot(RootOf(op));
        if (!in_place && rank() == RootOf(op)) opts.setInput(send, c);
        opts.setOutput(recv, c);
        opts.setTimeout(timeout_);
        ::gloo::broadcast(opts);
        break;
      }
      case Op::kReduceScatter:
        RingReduceScatter<T>(send, recv, c, in_place);
        break;
      case Op::kSendRecv:
        SendRecv(send, recv, c * sizeof(T));
        break;
    }
  }

  // Ring reduce-scatter: n-1 steps; at step k rank r sends chunk r-k-1 to
  // r+1 and adds chunk r-k-2 received from r-1 to its own; after the last
  // step chunk r holds the sum over all ranks.
  template <typename T>
  void RingReduceScatter(T* send, T* recv, size_t c, bool in_place) {
    const int n = world_size(), r = rank();
    if (n == 1) {
      if (!in_place) std::memcpy(recv, send, c * sizeof(T));
      return;
    }
    const auto mod = [n](int x) { return static_cast<size_t>(((x % n) + n) % n); };
    scratch_.resize(static_cast<size_t>(n + 1) * c * sizeof(T));
    T* tmp = reinterpret_cast<T*>(scratch_.data());
    T* work = in_place ? send : tmp + c;
    auto tmp_buf = ctx_->createUnboundBuffer(tmp, c * sizeof(T));
    const int left = (r - 1 + n) % n, right = (r + 1) % n;
    const uint64_t slot = static_cast<uint64_t>(ctx_->nextSlot(n));
    for (int k = 0; k < n - 1; ++k) {
      const size_t out_chunk = mod(r - k - 1), in_chunk = mod(r - k - 2);
      T* src = (k == 0 ? send : work) + out_chunk * c;
      auto src_buf = ctx_->createUnboundBuffer(src, c * sizeof(T));
      tmp_buf->recv(left, slot + static_cast<uint64_t>(k));
      src_buf->send(right, slot + static_cast<uint64_t>(k));
      tmp_buf->waitRecv(timeout_);
      src_buf->waitSend(timeout_);
      T* dst = k == n - 2 ? recv : work + in_chunk * c;
      const T* own = send + in_chunk * c;
      for (size_t i = 0; i < c; ++i) dst[i] = static_cast<T>(own[i] + tmp[i]);
    }
  }

  void SendRecv(void* send, void* recv, size_t bytes) {
    const int n = world_size(), r = rank();
    if (n == 1) {
      std::memcpy(recv, send, bytes);
      return;
    }
    const uint64_t slot = static_cast<uint64_t>(ctx_->nextSlot());
    auto sb = ctx_->createUnboundBuffer(send, bytes);
    auto rb = ctx_->createUnboundBuffer(recv, bytes);
    rb->recv((r - 1 + n) % n, slot);
    sb->send((r + 1) % n, slot);
    rb->waitRecv(timeout_);
    sb->waitSend(timeout_);
  }

  std::unique_ptr<RendezvousClient> client_;
  std::unique_ptr<::gloo::rendezvous::Store> store_;
  std::shared_ptr<::gloo::Context> ctx_;
  std::chrono::milliseconds timeout_;
  std::vector<char> scratch_;
  int string_rounds_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Backend>> CreateGlooBackend(const GlooConfig& config) {
  std::unique_ptr<RendezvousClient> client;
  std::unique_ptr<::gloo::rendezvous::Store> store;
  int rank = 0, size = 1;
  auto c = RendezvousClient::FromEnvironment();
  if (c.ok()) {
    client = std::move(*c);
    rank = client->rank();
    size = client->world_size();
    store = std::make_unique<RendezvousStore>(client.get(), "gloo/", config.timeout);
  } else if (absl::IsFailedPrecondition(c.status())) {
    store = std::make_unique<::gloo::rendezvous::HashStore>();  // a group of one
  } else {
    return c.status();
  }
  if (rank < 0 || size < 1 || rank >= size) {
    return absl::FailedPreconditionError(absl::StrCat("bad rank ", rank, " of ", size));
  }
  ::gloo::transport::tcp::attr attr;
  if (!config.iface.empty()) {
    attr.iface = config.iface;
  } else if (!config.address.empty()) {
    attr.hostname = config.address;
  } else if (const char* advertised = std::getenv("CMAX_ADVERTISE");
             advertised != nullptr && *advertised != '\0') {
    // The agent's --advertise (agent/executor.h): its first address.
    attr.hostname = std::string(absl::StripAsciiWhitespace(
        std::string(advertised).substr(0, std::string(advertised).find(','))));
  } else {
    char host[256] = {0};
    gethostname(host, sizeof(host) - 1);
    attr.hostname = host;
  }
  try {
    auto device = ::gloo::transport::tcp::CreateDevice(attr);
    auto context = std::make_shared<::gloo::rendezvous::Context>(rank, size);
    context->setTimeout(config.timeout);
    context->connectFullMesh(*store, device);
    return std::unique_ptr<Backend>(new GlooBackend(std::move(client), std::move(store),
                                                    std::move(context), config.timeout));
  } catch (const std::exception& e) {
    return absl::UnavailableError(absl::StrCat("gloo connect (rank ", rank, " of ", size,
                                               ", listening on ",
                                               attr.iface.empty() ? attr.hostname : attr.iface,
                                               "): ", e.what()));
  }
}

}  // namespace cmax::collective
