// cmax-bench-cuda collective --backend nccl: NCCL collectives, one rank per
// GPU, with nccl-tests' flags, timing, table and definitions
// (benchmarks/collective_common/runner.h), every element verified.
//
// Ranks:
//  - a rank of a group task (CMAX_RENDEZVOUS set by the agent, or passed to
//    ranks started by mpirun): this process is rank CMAX_RANK (or Open MPI's
//    / Slurm's variables) on GPU local_rank; rank 0 puts the ncclUniqueId in
//    the rendezvous under "nccl/uid", the others get it. No MPI is linked.
//  - run by hand: one thread per selected local GPU (--gpus, default all),
//    one rank each, in this process.
// NCCL runs with NCCL_DEBUG=INFO and NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH,ENV
// written to nccl-debug.<host>.<pid>.log in $CMAX_TASK_DIR (a temporary
// directory when unset); at the end the log is parsed (nccl_log.h) and what
// NCCL used is reported: transport, GPUDirect RDMA, NVLS, channels, with
// socket fallback and GDR-off findings.
#include <cuda_runtime.h>
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "benchmarks/collective_common/backend.h"
#include "benchmarks/collective_common/nccl_log.h"
#include "benchmarks/collective_common/runner.h"
#include "benchmarks/cuda/cuda_env.h"
#include "benchmarks/collective/cuda/collective_cuda.h"
#include "benchmarks/collective/cuda/nccl_loader.h"
#include "benchmarks/gpu_common/gpu_poll.h"
#include "benchmarks/suite.h"
#include "common/args.h"
#include "common/record_io.h"
#include "common/rendezvous_client.h"
#include "common/status_macros.h"

namespace cmax::bench {
namespace {

using collective::DType;
using collective::Op;
using collective::Shape;

absl::Status NcclStatus(ncclResult_t r, const char* call, int rank, int gpu) {
  if (r == ncclSuccess) return absl::OkStatus();
  return absl::UnavailableError(absl::StrCat(call, ": ", ncclGetErrorString(r), " (rank ", rank,
                                             ", GPU ", gpu, ")"));
}

// The communicators are non-blocking (ncclConfig_t.blocking = 0, so that
// init can time out): a call may return ncclInProgress, and the next NCCL
// call must wait until ncclCommGetAsyncError says ncclSuccess (NCCL docs,
// "Non-blocking group operation"). AwaitComm does that with the timeout.
#define CMAX_NCCL(call)                                                               \
  do {                                                                                \
    ncclResult_t cmax_r_ = (call);                                                    \
    if (cmax_r_ == ncclInProgress) {                                                  \
      if (absl::Status cmax_s_ = AwaitComm(#call); !cmax_s_.ok()) return cmax_s_;     \
    } else if (cmax_r_ != ncclSuccess) {                                              \
      return NcclStatus(cmax_r_, #call, rank_, gpu_);                                 \
    }                                                                                 \
  } while (0)

ncclDataType_t NcclType(DType t) {
  switch (t) {
    case DType::kInt8: return ncclInt8;
    case DType::kUint8: return ncclUint8;
    case DType::kInt32: return ncclInt32;
    case DType::kUint32: return ncclUint32;
    case DType::kInt64: return ncclInt64;
    case DType::kUint64: return ncclUint64;
    case DType::kHalf: return ncclFloat16;
    case DType::kFloat: return ncclFloat32;
    case DType::kDouble: return ncclFloat64;
    case DType::kBfloat16: return ncclBfloat16;
  }
  return ncclFloat32;
}

class NcclBackend : public collective::Backend {
 public:
  NcclBackend(int rank, int nranks, int gpu, std::chrono::milliseconds timeout)
      : rank_(rank), nranks_(nranks), gpu_(gpu), timeout_(timeout) {}
  ~NcclBackend() override {
    if (scratch_) cudaFree(scratch_);
    if (comm_) ncclCommDestroy(comm_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  // Creates the stream, the scratch buffer and the communicator. Init is
  // non-blocking and waited for with the task's timeout: a rank that never
  // joins (it failed before its own init) no longer blocks the others for
  // ever; on expiry, or when `stop` says another local rank failed, the
  // communicator is aborted and DEADLINE_EXCEEDED / ABORTED names this rank.
  absl::Status Init(const ncclUniqueId& id, const std::function<bool()>& stop) {
    const int gpu = gpu_;
    CMAX_CUDA(cudaSetDevice(gpu_));
    CMAX_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    CMAX_CUDA(cudaMalloc(&scratch_, kScratch));
    CMAX_CUDA(pinned_.Allocate(kStaging));
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    ncclUniqueId copy = id;
    ncclResult_t r = ncclCommInitRankConfig(&comm_, nranks_, copy, rank_, &config);
    if (r != ncclSuccess && r != ncclInProgress) {
      return NcclStatus(r, "ncclCommInitRankConfig", rank_, gpu_);
    }
    if (r == ncclInProgress || comm_ != nullptr) {
      return AwaitComm("ncclCommInitRankConfig (waiting for every rank to join)", stop);
    }
    return absl::OkStatus();
  }

  std::string name() const override { return "nccl"; }
  int rank() const override { return rank_; }
  int world_size() const override { return nranks_; }
  absl::Status CheckDType(DType) const override { return absl::OkStatus(); }

  absl::StatusOr<void*> Allocate(size_t bytes) override {
    const int gpu = gpu_;
    void* p = nullptr;
    CMAX_CUDA(cudaSetDevice(gpu_));
    CMAX_CUDA(cudaMalloc(&p, bytes));
    return p;
  }
  void Free(void* p) override { cudaFree(p); }
  // Copies on the communicator's stream (a cudaMemcpy on the legacy stream
  // may return before its DMA ends, and NCCL's next call on the non-blocking
  // stream would not wait for it: stale inputs, false wrong elements),
  // through the page-locked staging buffer in pieces of kStaging bytes, each
  // waited for by Synchronize: a copy to or from pageable memory blocks
  // until it is done, and on a hung GPU the collective's timeout would
  // never be reached (cuda_env.h, PinnedHost).
  absl::Status Upload(void* dst, const void* host, size_t bytes) override {
    const int gpu = gpu_;
    CMAX_CUDA(cudaSetDevice(gpu_));
    for (size_t done = 0; done < bytes; done += kStaging) {
      const size_t n = std::min(kStaging, bytes - done);
      std::memcpy(pinned_.get(), static_cast<const char*>(host) + done, n);
      CMAX_CUDA(cudaMemcpyAsync(static_cast<char*>(dst) + done, pinned_.get(), n,
                                cudaMemcpyHostToDevice, stream_));
      CMAX_RETURN_IF_ERROR(Synchronize());
    }
    return absl::OkStatus();
  }
  absl::Status Download(void* host, const void* src, size_t bytes) override {
    const int gpu = gpu_;
    CMAX_CUDA(cudaSetDevice(gpu_));
    for (size_t done = 0; done < bytes; done += kStaging) {
      const size_t n = std::min(kStaging, bytes - done);
      CMAX_CUDA(cudaMemcpyAsync(pinned_.get(), static_cast<const char*>(src) + done, n,
                                cudaMemcpyDeviceToHost, stream_));
      CMAX_RETURN_IF_ERROR(Synchronize());
      std::memcpy(static_cast<char*>(host) + done, pinned_.get(), n);
    }
    return absl::OkStatus();
  }

  absl::Status Run(Op op, DType t, const void* send, void* recv, const Shape& s,
                   bool /*in_place*/) override {
    const ncclDataType_t type = NcclType(t);
    const size_t c = s.param_count;
    const size_t chunk = c * s.elem_size;
    switch (op) {
      case Op::kAllReduce:
        CMAX_NCCL(ncclAllReduce(send, recv, c, type, ncclSum, comm_, stream_));
        break;
      case Op::kAllGather:
        CMAX_NCCL(ncclAllGather(send, recv, c, type, comm_, stream_));
        break;
      case Op::kReduceScatter:
        CMAX_NCCL(ncclReduceScatter(send, recv, c, type, ncclSum, comm_, stream_));
        break;
      case Op::kBroadcast:
        CMAX_NCCL(ncclBroadcast(send, recv, c, type, collective::RootOf(op), comm_, stream_));
        break;
      case Op::kAlltoall:
        CMAX_NCCL(ncclGroupStart());
        for (int peer = 0; peer < nranks_; ++peer) {
          CMAX_NCCL(ncclSend(static_cast<const char*>(send) + peer * chunk, c, type, peer, comm_,
                             stream_));
          CMAX_NCCL(ncclRecv(static_cast<char*>(recv) + peer * chunk, c, type, peer, comm_,
                             stream_));
        }
        CMAX_NCCL(ncclGroupEnd());
        break;
      case Op::kSendRecv:
        CMAX_NCCL(ncclGroupStart());
        CMAX_NCCL(ncclSend(send, c, type, (rank_ + 1) % nranks_, comm_, stream_));
        CMAX_NCCL(ncclRecv(recv, c, type, (rank_ - 1 + nranks_) % nranks_, comm_, stream_));
        CMAX_NCCL(ncclGroupEnd());
        break;
    }
    return absl::OkStatus();
  }

  // Waits for the stream, watching NCCL's asynchronous errors and the
  // timeout (the communicator is aborted then, as nccl-tests does).
  absl::Status Synchronize() override {
    const int gpu = gpu_;
    const auto deadline = std::chrono::steady_clock::now() + timeout_;
    while (true) {
      const cudaError_t e = cudaStreamQuery(stream_);
      const PollState state = QueryState(e);
      if (state == PollState::kDone) return absl::OkStatus();
      if (state == PollState::kFailed) CMAX_CUDA(e);
      ncclResult_t async = ncclSuccess;
      if (ncclResult_t q = ncclCommGetAsyncError(comm_, &async); q != ncclSuccess) {
        return NcclStatus(q, "ncclCommGetAsyncError", rank_, gpu_);
      }
      if (async != ncclSuccess && async != ncclInProgress) {
        ncclCommAbort(comm_);
        comm_ = nullptr;
        return NcclStatus(async, "NCCL asynchronous error", rank_, gpu_);
      }
      if (std::chrono::steady_clock::now() > deadline) {
        ncclCommAbort(comm_);
        comm_ = nullptr;
        return absl::DeadlineExceededError(absl::StrCat(
            "collective did not complete within ", timeout_.count() / 1000, " s (rank ", rank_,
            ", GPU ", gpu_, "): a peer is slow, hung or gone"));
      }
      std::this_thread::yield();
    }
  }

  absl::Status Barrier() override {
    const int gpu = gpu_;
    CMAX_CUDA(cudaMemsetAsync(scratch_, 0, sizeof(float), stream_));
    CMAX_NCCL(ncclAllReduce(scratch_, scratch_, 1, ncclFloat32, ncclSum, comm_, stream_));
    return Synchronize();
  }

  absl::StatusOr<std::vector<double>> AllGather(const std::vector<double>& values) override {
    const size_t bytes = values.size() * sizeof(double);
    std::vector<double> out(values.size() * static_cast<size_t>(nranks_));
    if (auto s = GatherBytes(values.data(), bytes, out.data()); !s.ok()) return s;
    return out;
  }

  absl::StatusOr<std::vector<std::string>> AllGatherStrings(const std::string& mine) override {
    constexpr size_t kMax = 256;
    char in[kMax] = {0};
    std::strncpy(in, mine.c_str(), kMax - 1);
    std::vector<char> all(kMax * static_cast<size_t>(nranks_));
    if (auto s = GatherBytes(in, kMax, all.data()); !s.ok()) return s;
    std::vector<std::string> out;
    for (int r = 0; r < nranks_; ++r) out.emplace_back(all.data() + static_cast<size_t>(r) * kMax);
    return out;
  }

 private:
  static constexpr size_t kScratch = 1 << 20;
  // The page-locked buffer Upload, Download and GatherBytes copy through.
  static constexpr size_t kStaging = 4 << 20;
  static_assert(kStaging >= kScratch, "a gather's whole result fits the staging buffer");

  absl::Status GatherBytes(const void* in, size_t bytes, void* out) {
    const int gpu = gpu_;
    if (bytes * static_cast<size_t>(nranks_ + 1) > kScratch) {
      return absl::InvalidArgumentError("gather too large for the scratch buffer");
    }
    char* dev_in = static_cast<char*>(scratch_);
    char* dev_out = dev_in + bytes;
    // On the communicator's stream, like Upload (the same race otherwise),
    // and through page-locked memory, so that Synchronize's deadline holds.
    CMAX_CUDA(cudaSetDevice(gpu_));
    std::memcpy(pinned_.get(), in, bytes);
    CMAX_CUDA(cudaMemcpyAsync(dev_in, pinned_.get(), bytes, cudaMemcpyHostToDevice, stream_));
    CMAX_NCCL(ncclAllGather(dev_in, dev_out, bytes, ncclUint8, comm_, stream_));
    const size_t gathered = bytes * static_cast<size_t>(nranks_);
    CMAX_CUDA(cudaMemcpyAsync(pinned_.get(), dev_out, gathered, cudaMemcpyDeviceToHost, stream_));
    CMAX_RETURN_IF_ERROR(Synchronize());
    std::memcpy(out, pinned_.get(), gathered);
    return absl::OkStatus();
  }

  // Waits until the communicator's state leaves ncclInProgress, within the
  // timeout; aborts it on an error, on expiry or when `stop` says so.
  absl::Status AwaitComm(const char* what, const std::function<bool()>& stop = {}) {
    ncclResult_t state = ncclInProgress;
    PollResult r = PollUntil(
        [&] {
          if (ncclCommGetAsyncError(comm_, &state) != ncclSuccess) return PollState::kFailed;
          if (state == ncclInProgress) return PollState::kPending;
          return state == ncclSuccess ? PollState::kDone : PollState::kFailed;
        },
        stop, timeout_, RealPollClock());
    if (r.outcome == PollOutcome::kDone) return absl::OkStatus();
    ncclCommAbort(comm_);
    comm_ = nullptr;
    switch (r.outcome) {
      case PollOutcome::kTimedOut:
        return absl::DeadlineExceededError(absl::StrCat(
            what, " did not finish within ", timeout_.count() / 1000, " s (rank ", rank_, " of ",
            nranks_, ", GPU ", gpu_, "): a rank that never joined, or a hung peer; aborted"));
      case PollOutcome::kStopped:
        return absl::AbortedError(absl::StrCat(what, ": given up on rank ", rank_, " (GPU ",
                                               gpu_, ") because another local rank failed"));
      default:
        return NcclStatus(state == ncclInProgress ? ncclInternalError : state, what, rank_, gpu_);
    }
  }

  int rank_, nranks_, gpu_;
  std::chrono::milliseconds timeout_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  void* scratch_ = nullptr;
  PinnedHost pinned_;
};

// A finding naming the rank whose communicator could not be created.
void ReportInitFailure(RecordWriter& out, int rank, int gpu, const absl::Status& s) {
  v1::Finding f;
  f.set_check_id(absl::IsDeadlineExceeded(s) ? "collective.nccl_init_timeout"
                                             : "collective.nccl_init_failed");
  f.set_severity(v1::SEVERITY_WARN);
  f.set_not_measured(true);  // no collective ran: nothing was measured
  f.set_category("networking");
  f.set_subject(absl::StrCat("rank:", rank));
  f.set_title(absl::StrCat("not measured: NCCL communicator of rank ", rank, " (GPU ", gpu,
                           ") ", absl::IsDeadlineExceeded(s) ? "timed out" : "failed"));
  f.set_detail(std::string(s.message()));
  f.add_evidence(absl::StrCat("NCCL ", NcclPath()));
  (*f.mutable_labels())["rank"] = absl::StrCat(rank);
  (*f.mutable_labels())["gpu"] = absl::StrCat(gpu);
  f.set_action("check the rank's own error (its GPU, cudaMalloc, the NCCL debug log) and that "
               "every rank of the group started; a hung peer points at its node");
  out.Find(f);
}

// NCCL_DEBUG to a file of this process in `dir` (before NCCL's first call).
std::string SetUpNcclDebug(const std::string& dir) {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  const std::string path = absl::StrCat(dir, "/nccl-debug.", host, ".", getpid(), ".log");
  setenv("NCCL_DEBUG", "INFO", 1);
  if (std::getenv("NCCL_DEBUG_SUBSYS") == nullptr) setenv("NCCL_DEBUG_SUBSYS", "INIT,NET,GRAPH,ENV", 1);
  setenv("NCCL_DEBUG_FILE", path.c_str(), 1);
  return path;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool RdmaDevicesPresent() {
  std::error_code ec;
  std::filesystem::directory_iterator it("/sys/class/infiniband", ec);
  return !ec && it != std::filesystem::directory_iterator();
}

// `nodes`: how many nodes the ranks are on (1 for the ranks of one process;
// for a group, the world over the local ranks): a one-node run never judges
// the network (nccl_log.h, TransportExpectation).
void ReportTransport(RecordWriter& out, FILE* table, const std::string& log_path, bool expect_gdr,
                     int nranks, int nodes) {
  const std::string text = ReadAll(log_path);
  collective::NcclLogFacts facts = collective::ParseNcclLog(text);
  collective::TransportExpectation expect;
  expect.rdma_devices_present = RdmaDevicesPresent();
  expect.expect_gdr = expect_gdr;
  expect.nodes = nodes;
  auto labels = collective::TransportLabels(facts);
  labels["ranks"] = absl::StrCat(nranks);
  labels["log"] = log_path;
  out.Measure("nccl_net_connections", facts.net_connections, "count", labels);
  out.Measure("nccl_gdr_connections", facts.gdr_connections, "count", labels);
  if (facts.nvls_channels >= 0) out.Measure("nccl_nvls_channels", facts.nvls_channels, "count", labels);
  if (facts.channels >= 0) out.Measure("nccl_channels", facts.channels, "count", labels);
  for (auto& f : collective::TransportFindings(facts, expect)) {
    f.add_evidence(absl::StrCat("NCCL debug log: ", log_path));
    if (table) {
      std::fprintf(table, "# NCCL %s: %s\n", SeverityName(f.severity()).c_str(), f.title().c_str());
    }
    out.Find(std::move(f));
  }
}

struct Setup {
  collective::Options options;
  std::chrono::milliseconds timeout{300000};
  bool jsonl = false;
  bool expect_gdr = false;
};

// One rank of a group task.
int RunGroupRank(const Setup& setup, RecordWriter& out, const std::string& log_path) {
  auto client = RendezvousClient::FromEnvironment();
  if (!client.ok()) {
    collective::ReportNotMeasured(out, "nccl", std::string(client.status().message()));
    return kExitCouldNotRun;
  }
  const GroupPlace place = (*client)->place();
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    collective::ReportNotMeasured(out, "nccl", "no CUDA device");
    return kExitCouldNotRun;
  }
  const int gpu = place.local_rank % devices;
  ncclUniqueId id;
  if (place.rank == 0) {
    if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess) {
      collective::ReportNotMeasured(out, "nccl",
                                    absl::StrCat("ncclGetUniqueId: ", ncclGetErrorString(r)));
      return kExitCouldNotRun;
    }
    auto s = (*client)->Set("nccl/uid", std::string(id.internal, sizeof(id.internal)));
    if (!s.ok()) {
      collective::ReportNotMeasured(out, "nccl", absl::StrCat("publishing the NCCL id: ", s.message()));
      return kExitCouldNotRun;
    }
  } else {
    auto v = (*client)->Get("nccl/uid", absl::FromChrono(setup.timeout));
    if (!v.ok() || v->size() != sizeof(id.internal)) {
      collective::ReportNotMeasured(
          out, "nccl", absl::StrCat("getting the NCCL id from rank 0: ",
                                    v.ok() ? "wrong size" : std::string(v.status().message())));
      return kExitCouldNotRun;
    }
    std::memcpy(id.internal, v->data(), sizeof(id.internal));
  }
  NcclBackend backend(place.rank, place.world_size, gpu, setup.timeout);
  if (auto s = backend.Init(id, {}); !s.ok()) {
    ReportInitFailure(out, place.rank, gpu, s);
    collective::ReportNotMeasured(out, "nccl", std::string(s.message()));
    return kExitCouldNotRun;
  }
  FILE* table = (!setup.jsonl && place.rank == 0) ? stdout : nullptr;
  int rc = collective::RunCollectives(setup.options, backend, out, table);
  const int local = std::max(place.local_world_size, 1);
  ReportTransport(out, table, log_path, setup.expect_gdr, place.world_size,
                  (place.world_size + local - 1) / local);
  return rc;
}

// One thread per local GPU, each a rank.
int RunLocalRanks(const Setup& setup, RecordWriter& out, const std::vector<int>& gpus,
                  const std::string& log_path) {
  ncclUniqueId id;
  if (ncclResult_t r = ncclGetUniqueId(&id); r != ncclSuccess) {
    collective::ReportNotMeasured(out, "nccl",
                                  absl::StrCat("ncclGetUniqueId: ", ncclGetErrorString(r)));
    return kExitCouldNotRun;
  }
  const int n = static_cast<int>(gpus.size());
  std::vector<int> codes(gpus.size(), kExitCouldNotRun);
  std::vector<std::thread> threads;
  // A rank that fails before or during its init stops the others' wait at
  // once instead of at the timeout.
  std::atomic<bool> init_failed{false};
  std::mutex report_mu;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      const int gpu = gpus[static_cast<size_t>(r)];
      NcclBackend backend(r, n, gpu, setup.timeout);
      if (auto s = backend.Init(id, [&] { return init_failed.load(); }); !s.ok()) {
        const bool first = !init_failed.exchange(true);
        std::lock_guard<std::mutex> lock(report_mu);
        // The rank that failed first is named; the ranks that gave up
        // because of it only log.
        if (first || !absl::IsAborted(s)) {
          ReportInitFailure(out, r, gpu, s);
          collective::ReportNotMeasured(out, "nccl", std::string(s.message()));
        } else {
          out.Log("warn", std::string(s.message()));
        }
        return;
      }
      FILE* table = (!setup.jsonl && r == 0) ? stdout : nullptr;
      codes[static_cast<size_t>(r)] = collective::RunCollectives(setup.options, backend, out, table);
    });
  }
  for (auto& t : threads) t.join();
  FILE* table = setup.jsonl ? nullptr : stdout;
  if (n == 1 && table) {
    std::fprintf(table, "# A single GPU only shows that the suite runs: NCCL needs one GPU per "
                        "rank, and with one rank the bus bandwidth of the (n-1)/n ops is not "
                        "measured.\n");
  }
  ReportTransport(out, table, log_path, setup.expect_gdr, n, 1);
  return *std::max_element(codes.begin(), codes.end());
}

}  // namespace

int RunCudaCollective(int argc, char** argv) {
  collective::Flags flags;
  flags.backend = "nccl";
  flags.min_bytes = 8;
  flags.max_bytes = 128 << 20;
  std::string gpus_arg = "all";
  bool expect_gdr = false;
  SuiteFlags parser("collective", "cmax-bench-cuda");
  collective::AddFlags(&parser, &flags);
  parser.extra().AddString("gpus", &gpus_arg, "GPU indices or 'all' (run by hand)");
  parser.Bind("expect-gdr", &expect_gdr);
  if (auto rc = parser.Parse(argc, argv)) return *rc;
  if (flags.backend != "nccl") {
    std::fprintf(stderr, "collective: cmax-bench-cuda runs --backend nccl; gloo and mpi are in "
                         "cmax-bench\n");
    return kExitCouldNotRun;
  }
  Setup setup;
  auto options = collective::ResolveOptions(flags);
  if (!options.ok()) {
    // A record as well as stderr (a soak shorter than two intervals, two
    // sizes for a soak, ...): the scorecard says why it was not measured.
    RecordWriter refused("collective", flags.jsonl ? stdout : nullptr);
    collective::ReportNotMeasured(refused, "nccl", std::string(options.status().message()));
    std::fprintf(stderr, "collective: %s\n", std::string(options.status().message()).c_str());
    return kExitCouldNotRun;
  }
  setup.options = *options;
  std::vector<std::string> args(argv, argv + argc);
  setup.options.command = absl::StrCat("cmax-bench-cuda ", absl::StrJoin(args, " "));
  setup.timeout = std::chrono::milliseconds(static_cast<int64_t>(flags.timeout_s * 1000));
  setup.jsonl = flags.jsonl;
  setup.expect_gdr = expect_gdr;

  const absl::Status nccl_loaded = LoadNccl();
  DriverProbe probe = ProbeDriver();
  CudaVersions versions = GetCudaVersions(probe);
  int nccl_version = 0;
  if (nccl_loaded.ok()) ncclGetVersion(&nccl_version);
  RecordWriter out("collective", flags.jsonl ? stdout : nullptr,
                   {{"driver", versions.driver},
                    {"cuda_runtime", versions.runtime},
                    {"nccl", nccl_loaded.ok() ? absl::StrCat(nccl_version) : "not loaded"}});
  if (int rc = CheckCudaReady(out, probe, flags.jsonl); rc != 0) {
    collective::ReportNotMeasured(out, "nccl", "no usable GPU: NCCL collectives not measured");
    return rc;
  }
  if (!nccl_loaded.ok()) {
    // Without NCCL the collective suite is not measured (exit 2), naming
    // where it looked (library_search.h).
    const std::string why = absl::StrCat("NCCL not found: ", nccl_loaded.message());
    collective::ReportNotMeasured(out, "nccl", why);
    std::fprintf(flags.jsonl ? stderr : stdout, "not measured: %s\n", why.c_str());
    return kExitCouldNotRun;
  }
  std::string dir;
  if (const char* d = std::getenv("CMAX_TASK_DIR"); d != nullptr && *d != '\0') {
    dir = d;
  } else {
    char tmpl[] = "/tmp/cmax-nccl-XXXXXX";
    const char* made = mkdtemp(tmpl);
    dir = made ? made : "/tmp";
  }
  const std::string log_path = SetUpNcclDebug(dir);
  if (std::getenv("CMAX_RENDEZVOUS") != nullptr) return RunGroupRank(setup, out, log_path);
  auto all = ListGpus();
  if (!all.ok()) {
    collective::ReportNotMeasured(out, "nccl", std::string(all.status().message()));
    return kExitCouldNotRun;
  }
  auto selection = ParseGpuSelection(gpus_arg, static_cast<int>(all->size()));
  if (!selection.ok()) {
    collective::ReportNotMeasured(out, "nccl", std::string(selection.status().message()));
    std::fprintf(stderr, "collective: %s\n", std::string(selection.status().message()).c_str());
    return kExitCouldNotRun;
  }
  return RunLocalRanks(setup, out, *selection, log_path);
}

}  // namespace cmax::bench
