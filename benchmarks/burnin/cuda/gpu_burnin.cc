// cmax-bench-cuda burnin: every selected GPU under sustained GEMM load at
// once, each iteration's output checked against the first iteration's on the
// device, telemetry through NVML once a second.
//
// Per GPU (one host thread and one stream each): random n x n operands from a
// device kernel, one cuBLASLt algorithm chosen once (the first of the
// heuristic's 16 for the TN layout whose split-K count is 1) and kept for the
// whole run. Iteration 0's output is the reference; after every later GEMM a
// kernel counts the output elements whose bits differ from it.
//
// Why the tolerance is zero: the inputs, the algorithm, the workspace, the
// stream and the device are the same in every iteration, and cuBLAS
// documents its results as bit-wise reproducible run to run on the same GPU
// architecture and SM count with the same toolkit (cuBLAS documentation,
// "Results reproducibility"; the exceptions are atomics-based algorithms,
// which cuBLASLt only uses for split-K reductions -- excluded here by
// reading each offered algorithm's CUBLASLT_ALGO_CONFIG_SPLITK_NUM). So any differing bit is the
// hardware computing or storing something wrong, not rounding: a critical
// "silent data corruption suspect" finding.
//
// Throughput: GEMMs are enqueued in batches of about 50 ms; the host clock
// over completed batches gives one-second windows (2 n^3 flop per GEMM; the
// check kernel's time counts too, a few percent at n = 8192).
//
// Kernel log: /dev/kmsg is followed from the start of the load
// (health::KmsgFollower) and polled with the telemetry, once a second; Xids
// are given to the burned GPU with the same PCI address, the others are
// reported on the node. A log that cannot be read is "not measured". With
// --bug-report on, nvidia-bug-report.sh runs after a failure (bug_report.h).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "benchmarks/burnin/cuda/burnin_cuda.h"
#include "benchmarks/cuda/cublaslt_loader.h"
#include "benchmarks/cuda/cuda_env.h"
#include "benchmarks/cuda/kernels.h"
#include "benchmarks/cuda/lt_gemm.h"
#include "benchmarks/gpu_common/bug_report.h"
#include "benchmarks/gpu_common/gpu_poll.h"
#include "benchmarks/burnin/gpu_burnin_report.h"
#include "benchmarks/gpu_common/nvml_telemetry.h"
#include "benchmarks/health/kernel_log.h"
#include "benchmarks/health/kmsg_follower.h"
#include "benchmarks/health/xid_catalog.h"
#include "benchmarks/suite.h"
#include "common/suite_flags.h"
#include "common/record_io.h"
#include "common/status_macros.h"
#include "common/time_util.h"

namespace cmax::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr uint64_t kWorkspaceBytes = uint64_t{64} << 20;
constexpr double kBatchSeconds = 0.05;
// Algorithms asked of the heuristic; the first without split-K is kept.
constexpr int kHeuristicAlgos = 16;
constexpr double kProgressEverySeconds = 5;
// Kernel log lines kept as evidence for a mismatch or CUDA error.
constexpr size_t kRecentKernelLines = 100;

// What a GPU thread shares with the telemetry loop while it runs.
struct LiveState {
  std::atomic<int64_t> iterations{0};
  std::atomic<double> last_window_tflops{-1};
  std::atomic<bool> done{false};
};

class GpuBurnin {
 public:
  GpuBurnin(GpuInfo gpu, const BurninOptions& o, LiveState* live)
      : info_(std::move(gpu)), o_(o), live_(live) {}
  // Runs the loop into `r` (iterations, windows, mismatches; error on a
  // CUDA or cuBLAS failure).
  void Run(GpuBurninResult* r) {
    absl::Status s = Loop(r);
    if (!s.ok()) r->error = std::string(s.message());
    live_->done = true;
  }
  // After a hang: device memory, events and the stream are left to the
  // process's exit (freeing them would block on the hung GPU).
  ~GpuBurnin() {
    if (hung_) ctx_.Abandon();
  }

 private:
  absl::Status Loop(GpuBurninResult* r) {
    const int gpu = info_.index;
    const int64_t n = o_.size;
    const TypeSetup t = SetupFor(o_.dtype);
    if (info_.compute_capability() < t.min_cc) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "%s; %s is %d.%d", t.min_cc_reason, info_.name, info_.cc_major, info_.cc_minor));
    }
    CMAX_RETURN_IF_ERROR(ctx_.Init(gpu, kWorkspaceBytes));
    const size_t ab_bytes = static_cast<size_t>(n * n) * t.ab_size;
    const size_t d_bytes = static_cast<size_t>(n * n) * t.cd_size;
    DeviceMem a, b, d, ref, counter;
    CMAX_CUDA(cudaMalloc(&a.p, ab_bytes));
    CMAX_CUDA(cudaMalloc(&b.p, ab_bytes));
    CMAX_CUDA(cudaMalloc(&d.p, d_bytes));
    CMAX_CUDA(cudaMalloc(&ref.p, d_bytes));
    CMAX_CUDA(cudaMalloc(&counter.p, sizeof(unsigned long long)));
    // The mismatch count comes back into page-locked memory: the copy is
    // then queued on the stream and the hang poll below can reach its
    // deadline (cuda_env.h, PinnedHost).
    PinnedHost pinned_total;
    CMAX_CUDA(pinned_total.Allocate(sizeof(unsigned long long)));
    CMAX_CUDA(cudaMemsetAsync(counter.p, 0, sizeof(unsigned long long), ctx_.stream));
    CMAX_CUDA(LaunchFillUniform(a.p, t.ab_elem, n * n, 0xB0A1ULL, ctx_.stream));
    CMAX_CUDA(LaunchFillUniform(b.p, t.ab_elem, n * n, 0xB0A2ULL, ctx_.stream));

    LtObjects lt;
    CMAX_RETURN_IF_ERROR(
        CreateTnMatmul(t, n, n, n, kWorkspaceBytes, kAnyReduction, gpu, &lt));
    cublasLtMatmulAlgo_t algo = {};
    bool found = false;
    int offered = 0;
    CMAX_RETURN_IF_ERROR(
        FirstAlgoWithoutSplitK(ctx_, lt, kHeuristicAlgos, gpu, &algo, &found, &offered));
    if (!found) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cuBLASLt offers no algorithm without split-K for this dtype and size (", offered,
          " offered, all split k): the burn-in needs bit-for-bit repeatable output"));
    }
    UnitScales scales(t);
    auto matmul = [&]() {
      return cublasLtMatmul(ctx_.handle, lt.op, scales.alpha(), a.p, lt.a, b.p, lt.b, scales.beta(),
                            d.p, lt.c, d.p, lt.c, &algo, ctx_.workspace, kWorkspaceBytes,
                            ctx_.stream);
    };
    auto* count_dev = static_cast<unsigned long long*>(counter.p);
    const int64_t elems = n * n;
    const int elem_bytes = static_cast<int>(t.cd_size);

    // Iteration 0: the reference.
    CMAX_CUBLAS(matmul());
    CMAX_CUDA(cudaMemcpyAsync(ref.p, d.p, d_bytes, cudaMemcpyDeviceToDevice, ctx_.stream));
    Events ev;
    ev.e.resize(2, nullptr);
    for (auto& e : ev.e) CMAX_CUDA(cudaEventCreate(&e));
    // One timed iteration sizes the batches.
    CMAX_CUDA(cudaEventRecord(ev.e[0], ctx_.stream));
    CMAX_CUBLAS(matmul());
    CMAX_CUDA(LaunchCountDiffering(d.p, ref.p, elems, elem_bytes, count_dev, ctx_.stream));
    CMAX_CUDA(cudaEventRecord(ev.e[1], ctx_.stream));
    // Every wait on the GPU is polled with a deadline instead of
    // cudaEventSynchronize / cudaStreamSynchronize, which block for ever on
    // a hung GPU: the hang becomes a finding (burnin.gpu_hang) before the
    // agent's task timeout kills the process. What the loop allocated is
    // then leaked (cudaFree would block too) and the process exits.
    const auto hang_deadline = std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(o_.hang_timeout_s));
    cudaError_t gpu_state = cudaSuccess;
    auto wait_gpu = [&](const std::function<cudaError_t()>& query) {
      return PollUntil(
                 [&] {
                   gpu_state = query();
                   return QueryState(gpu_state);
                 },
                 {}, hang_deadline, RealPollClock(), std::chrono::milliseconds(2))
                 .outcome != PollOutcome::kTimedOut;
    };
    auto hung = [&](const std::string& what) {
      hung_ = true;
      r->hung = true;
      a.p = b.p = d.p = ref.p = counter.p = nullptr;
      pinned_total.Leak();
      ev.e.clear();
      return absl::DeadlineExceededError(absl::StrFormat(
          "%s did not complete within %g s (still cudaErrorNotReady) on GPU %d (%s, PCI %s)",
          what, o_.hang_timeout_s, gpu, info_.uuid, info_.pci_bus_id));
    };
    if (!wait_gpu([&] { return cudaEventQuery(ev.e[1]); })) {
      return hung("the first timed GEMM");
    }
    CMAX_CUDA(gpu_state);
    float iter_ms = 0;
    CMAX_CUDA(cudaEventElapsedTime(&iter_ms, ev.e[0], ev.e[1]));
    int64_t iteration = 1;
    const int64_t batch = std::clamp<int64_t>(
        iter_ms > 0 ? static_cast<int64_t>(kBatchSeconds * 1e3 / iter_ms) : 1, 1, 1000);

    const double flop = 2.0 * static_cast<double>(n) * n * n;
    unsigned long long seen = 0;
    const auto start = Clock::now();
    auto window_start = start;
    double window_flop = 0;
    int64_t loop_iterations = 0;
    for (;;) {
      const auto now = Clock::now();
      if (std::chrono::duration<double>(now - start).count() >= o_.duration_s) break;
      for (int64_t i = 0; i < batch; ++i) {
        CMAX_CUBLAS(matmul());
        if (o_.fault_inject > 0 && iteration == o_.fault_inject) {
          // TEST ONLY: bytes 0x7F make one element differ in every output type.
          char* elem = static_cast<char*>(d.p) + static_cast<size_t>(elems / 3) * t.cd_size;
          CMAX_CUDA(cudaMemsetAsync(elem, 0x7F, t.cd_size, ctx_.stream));
        }
        CMAX_CUDA(LaunchCountDiffering(d.p, ref.p, elems, elem_bytes, count_dev, ctx_.stream));
        ++iteration;
      }
      CMAX_CUDA(cudaMemcpyAsync(pinned_total.get(), count_dev, sizeof(unsigned long long),
                                cudaMemcpyDeviceToHost, ctx_.stream));
      if (!wait_gpu([&] { return cudaStreamQuery(ctx_.stream); })) {
        r->iterations = iteration - batch;
        return hung(absl::StrFormat("a batch of %d GEMMs (about %.0f ms of work)", batch,
                                    batch * iter_ms));
      }
      CMAX_CUDA(gpu_state);
      const unsigned long long total = *pinned_total.as<unsigned long long>();
      loop_iterations += batch;
      live_->iterations = iteration;
      if (total > seen) {
        if (r->first_mismatch_iteration < 0) r->first_mismatch_iteration = iteration - batch;
        seen = total;
      }
      window_flop += batch * flop;
      const auto after = Clock::now();
      const double window_s = std::chrono::duration<double>(after - window_start).count();
      if (window_s >= 1.0) {
        const double tflops = window_flop / window_s / 1e12;
        r->window_tflops.push_back(tflops);
        live_->last_window_tflops = tflops;
        window_start = after;
        window_flop = 0;
      }
    }
    r->seconds = std::chrono::duration<double>(Clock::now() - start).count();
    r->iterations = iteration;
    r->total_tflop = loop_iterations * flop / 1e12;
    r->mismatches = seen;
    return absl::OkStatus();
  }

  GpuInfo info_;
  const BurninOptions& o_;
  LiveState* live_;
  GpuLtContext ctx_;
  bool hung_ = false;
};

std::string NodeName() {
  if (const char* n = std::getenv("CMAX_NODE_NAME"); n && *n) return n;
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) == 0 && buf[0]) return buf;
  return "unknown";
}

// The Xid watch over the run: the follower, the Xids seen and the last lines.
class XidWatch {
 public:
  XidWatch() {
    auto f = health::KmsgFollower::Start(Sysroot("/"));
    if (f.ok()) {
      follower_ = std::move(*f);
    } else {
      error_ = std::string(f.status().message());
    }
  }
  // Reads what the kernel logged since the last call; a read error ends the
  // watch (the run is then "not measured": Xids may have been missed).
  void Poll() {
    if (!follower_) return;
    auto lines = follower_->Poll();
    if (!lines.ok()) {
      error_ = absl::StrCat("stopped during the run: ", lines.status().message());
      follower_.reset();
      return;
    }
    for (const auto& e : health::ParseXidEvents(*lines)) {
      xids_.push_back({.sxid = e.sxid, .fatal = e.fatal, .code = e.code, .pci = e.pci,
                       .text = e.text});
    }
    for (auto& l : *lines) {
      recent_.push_back(std::move(l.text));
      if (recent_.size() > kRecentKernelLines) recent_.pop_front();
    }
  }
  const std::string& error() const { return error_; }
  std::vector<BurninXid> TakeXids() { return std::move(xids_); }
  std::vector<std::string> recent() const { return {recent_.begin(), recent_.end()}; }
  uint64_t overwritten() const { return follower_ ? follower_->overwritten() : 0; }

 private:
  std::unique_ptr<health::KmsgFollower> follower_;
  std::string error_;
  std::vector<BurninXid> xids_;
  std::deque<std::string> recent_;
};

// The catalogue (compiled into the binary) as the report's lookup.
XidLookup CatalogLookup(RecordWriter* out) {
  auto catalog = health::XidCatalog::LoadDefault();
  if (!catalog.ok()) {
    out->Log("warn", absl::StrCat("Xid catalogue: ", catalog.status().message(),
                                  "; Xids are reported without their meaning"));
    return {};
  }
  return [c = *std::move(catalog)](const BurninXid& x) {
    health::XidInfo info = x.sxid ? c.ForSxid(x.code, x.fatal) : c.Lookup(x.code);
    return XidMeaning{.name = info.name, .severity = info.severity,
                      .action = health::ActionWords(info.action), .advice = info.advice};
  };
}

void UpdateTelemetry(const GpuTelemetry& t, double dt_s, GpuBurninResult* r) {
  auto max = [](std::optional<double>* m, const std::optional<double>& v) {
    if (v && (!*m || *v > **m)) *m = v;
  };
  max(&r->max_temperature_c, t.temperature_c);
  max(&r->max_memory_temperature_c, t.memory_temperature_c);
  max(&r->max_power_w, t.power_w);
  if (t.throttle_reasons) r->throttle.Add(*t.throttle_reasons, dt_s);
  r->nvml_state = DescribeTelemetry(t);
}

}  // namespace

std::optional<int> ParseCudaBurninArgs(int argc, char** argv, CudaBurninArgs* a) {
  std::string backend = "cuda";
  BurninOptions& o = a->o;
  std::string& gpus_arg = a->gpus;
  bool& jsonl = a->jsonl;
  SuiteFlags flags("burnin", "cmax-bench-cuda",
                   "--duration SECONDS [--gpus all|0,1] [--dtype bf16|fp32] [options]");
  flags.Bind("backend", &backend);
  flags.Bind("duration", &o.duration_s);
  flags.Bind("gpus", &gpus_arg);
  flags.Bind("dtype", &o.dtype_name);
  flags.Bind("bug-report", &o.bug_report);
  ArgParser& args = flags.extra();
  args.AddInt("size", &o.size, "n of the n x n x n GEMM (default 8192)");
  args.AddInt("fault-inject", &o.fault_inject, "TEST ONLY: corrupt one element at iteration N");
  args.AddDouble("hang-timeout", &o.hang_timeout_s,
                 "seconds a batch of GEMMs (about 50 ms of work) may take before the GPU is "
                 "reported hung (burnin.gpu_hang, exit 1; default 60)");
  args.AddString("artifact-dir", &o.artifact_dir,
                 "directory for the bug report (default: beside the agent's task "
                 "directories, else /var/lib/cmax/artifacts/<node>-<unix time>)");
  args.AddFlag("jsonl", &jsonl, "write records as JSON lines");
  if (auto rc = flags.Parse(argc, argv)) return *rc;
  auto dtype = ParseGemmDtype(o.dtype_name);
  if (backend != "cuda" || !dtype || (*dtype != GemmDtype::kBf16 && *dtype != GemmDtype::kFp32) ||
      o.duration_s <= 0 || o.size < 256 || o.size > 32768 || o.size % 16 != 0 ||
      o.fault_inject < 0 || (o.bug_report != "on" && o.bug_report != "off") ||
      !(o.hang_timeout_s >= 1)) {
    std::fprintf(stderr,
                 "burnin: bad arguments (backend cuda; dtype bf16 or fp32; duration > 0; size a "
                 "multiple of 16 in [256, 32768]; bug-report on or off; hang-timeout >= 1)\n");
    return kExitCouldNotRun;
  }
  o.dtype = *dtype;
  return std::nullopt;
}

int RunCudaBurnin(int argc, char** argv) {
  CudaBurninArgs a;
  if (auto rc = ParseCudaBurninArgs(argc, argv, &a)) return *rc;
  const BurninOptions& o = a.o;
  const std::string& gpus_arg = a.gpus;
  const bool jsonl = a.jsonl;

  const absl::Status lt_loaded = LoadCublasLt();  // before the versions: they name it
  DriverProbe probe = ProbeDriver();
  CudaVersions versions = GetCudaVersions(probe);
  RecordWriter out("burnin", jsonl ? stdout : nullptr,
                   {{"backend", "cuda"}, {"driver", versions.driver},
                    {"cuda_runtime", versions.runtime}, {"cublas", versions.cublas}});
  // Both findings when both are missing; the driver's exit code first.
  const int lt_rc = CheckCublasLtLoaded(lt_loaded, out, jsonl);
  if (int rc = CheckCudaReady(out, probe, jsonl); rc != 0) return rc;
  if (lt_rc != 0) return lt_rc;
  auto selected = SelectGpus(gpus_arg, "burnin", out);
  if (!selected.ok()) return kExitCouldNotRun;
  if (o.fault_inject > 0) {
    out.Log("warn", absl::StrCat("--fault-inject ", o.fault_inject,
                                 ": TEST ONLY, one element will be corrupted on purpose"));
  }
  std::vector<GpuInfo> gpus = *std::move(selected);
  const size_t count = gpus.size();

  BurninContext ctx;
  ctx.node = NodeName();
  ctx.dtype = o.dtype_name;
  ctx.size = o.size;
  ctx.fault_injected = o.fault_inject > 0;
  ctx.command = absl::StrFormat("cmax-bench-cuda burnin --duration %g --gpus %s --dtype %s --size %d%s",
                                o.duration_s, gpus_arg, o.dtype_name, o.size,
                                o.fault_inject > 0 ? absl::StrCat(" --fault-inject ", o.fault_inject) : "");

  // Telemetry: NVML by UUID. Without it the load still runs; a Log says what
  // is not measured.
  std::vector<GpuBurninResult> results(count);
  for (size_t x = 0; x < count; ++x) {
    results[x].index = gpus[x].index;
    results[x].uuid = gpus[x].uuid;
    results[x].pci_bus_id = gpus[x].pci_bus_id;
    results[x].model = gpus[x].name;
  }
  std::unique_ptr<NvmlTelemetry> nvml;
  if (auto t = NvmlTelemetry::Open(); t.ok()) {
    nvml = std::move(*t);
  } else {
    const std::string why = std::string(t.status().message());
    out.Log("warn", absl::StrCat("telemetry not measured: ", why));
    for (auto& r : results) r.telemetry_error = why;
  }
  auto read = [&](size_t x) -> std::optional<GpuTelemetry> {
    if (!nvml) return std::nullopt;
    auto t = nvml->Read(gpus[x].uuid);
    if (!t.ok()) {
      results[x].telemetry_error = std::string(t.status().message());
      return std::nullopt;
    }
    return *t;
  };
  for (size_t x = 0; x < count; ++x) {
    if (auto t = read(x)) {
      results[x].ecc_corrected_start = t->ecc_corrected_volatile;
      results[x].ecc_uncorrected_start = t->ecc_uncorrected_volatile;
    }
  }

  XidWatch xid_watch;
  if (!xid_watch.error().empty()) {
    out.Log("warn", absl::StrCat("kernel log not watched: ", xid_watch.error()));
  }
  out.Progress("burnin", 0, absl::StrCat(o.dtype_name, " n=", o.size, " on ", count, " GPUs for ",
                                         o.duration_s, " s"));
  std::vector<std::unique_ptr<LiveState>> live;
  std::vector<GpuBurninResult> loop_results(count);
  std::vector<std::thread> threads;
  for (size_t x = 0; x < count; ++x) {
    live.push_back(std::make_unique<LiveState>());
    threads.emplace_back([&, x]() {
      GpuBurnin g(gpus[x], o, live[x].get());
      g.Run(&loop_results[x]);
    });
  }

  const int window = SampleWindowTicks(o.duration_s);
  std::vector<SampleWindow> windows(count, SampleWindow(window));
  auto labels_for = [&](size_t x) {
    std::map<std::string, std::string> l = out.base_labels();
    l["gpu"] = absl::StrCat(gpus[x].index);
    l["uuid"] = gpus[x].uuid;
    l["pci_bus_id"] = gpus[x].pci_bus_id;
    l["model"] = gpus[x].name;
    return l;
  };
  auto write_samples = [&](std::vector<v1::Sample> samples) {
    for (auto& s : samples) out.WriteSample(std::move(s));
  };
  const auto start = Clock::now();
  auto last_tick = start;
  double next_progress = kProgressEverySeconds;
  for (;;) {
    bool all_done = true;
    for (const auto& l : live) all_done = all_done && l->done;
    if (all_done) break;
    std::this_thread::sleep_until(last_tick + std::chrono::seconds(1));
    const auto now = Clock::now();
    const double dt = std::chrono::duration<double>(now - last_tick).count();
    last_tick = now;
    const int64_t now_ns = NowUnixNs();
    xid_watch.Poll();
    for (size_t x = 0; x < count; ++x) {
      if (auto t = read(x)) {
        UpdateTelemetry(*t, dt, &results[x]);
        AddTelemetry(*t, &windows[x]);
      }
      if (double w = live[x]->last_window_tflops; w >= 0) {
        windows[x].Add("burnin_tflops", "TFLOP/s", w);
      }
      write_samples(windows[x].Tick("burnin", labels_for(x), now_ns));
    }
    const double elapsed = std::chrono::duration<double>(now - start).count();
    if (elapsed >= next_progress) {
      next_progress += kProgressEverySeconds;
      std::vector<std::string> its;
      for (size_t x = 0; x < count; ++x) {
        its.push_back(absl::StrCat("gpu", gpus[x].index, " ", live[x]->iterations.load(), " it"));
      }
      out.Progress("burnin", std::min(1.0, elapsed / o.duration_s), absl::StrJoin(its, ", "));
    }
  }
  for (auto& t : threads) t.join();
  xid_watch.Poll();  // what the kernel logged as the load ended
  for (size_t x = 0; x < count; ++x) {
    write_samples(windows[x].Tick("burnin", labels_for(x), NowUnixNs(), /*flush=*/true));
    if (auto t = read(x)) {
      results[x].ecc_corrected_end = t->ecc_corrected_volatile;
      results[x].ecc_uncorrected_end = t->ecc_uncorrected_volatile;
      results[x].nvml_state = DescribeTelemetry(*t);
    }
    GpuBurninResult& r = results[x];
    const GpuBurninResult& l = loop_results[x];
    r.error = l.error;
    r.hung = l.hung;
    r.iterations = l.iterations;
    r.seconds = l.seconds;
    r.total_tflop = l.total_tflop;
    r.window_tflops = l.window_tflops;
    r.mismatches = l.mismatches;
    r.first_mismatch_iteration = l.first_mismatch_iteration;
  }
  out.Progress("burnin", 1, "done");
  ctx.kernel_log_error = xid_watch.error();
  ctx.recent_kernel_lines = xid_watch.recent();
  ctx.xid_lookup = CatalogLookup(&out);
  if (xid_watch.overwritten() > 0) {
    out.Log("warn", absl::StrCat("kernel log: ", xid_watch.overwritten(),
                                 " records were overwritten before they were read"));
  }
  std::vector<BurninXid> node_xids = AssignXids(
      xid_watch.TakeXids(),
      [](const std::string& pci) { return health::NormalizePciAddress(pci); }, &results);
  for (auto& r : results) r.kernel_log_watched = ctx.kernel_log_error.empty();

  bool failed = false;
  if (!jsonl) {
    std::printf("driver %s, CUDA runtime %s, cuBLASLt %s, node %s\n", versions.driver.c_str(),
                versions.runtime.c_str(), versions.cublas.c_str(), ctx.node.c_str());
    std::printf("%-4s %-22s %-6s %8s %9s %9s %6s %7s %7s %10s %10s %5s  %s\n", "gpu", "model",
                "dtype", "iters", "TFLOP/s", "min_win", "CV", "maxT_C", "maxMemT", "throttled",
                "mismatch", "xids", "status");
  }
  for (const auto& r : results) {
    const bool gpu_failed = ReportGpuBurnin(r, ctx, &out);
    failed = failed || gpu_failed;
    if (!jsonl) {
      ThroughputStats st = ComputeThroughput(r.window_tflops, r.total_tflop, r.seconds);
      auto opt = [](const std::optional<double>& v) {
        return v ? absl::StrFormat("%.0f", *v) : std::string("-");
      };
      std::printf("%-4d %-22s %-6s %8lld %9.1f %9.1f %6.3f %7s %7s %9.0fs %10llu %5s  %s\n",
                  r.index,
                  r.model.c_str(), o.dtype_name.c_str(), static_cast<long long>(r.iterations),
                  st.mean, st.min_window, st.cv, opt(r.max_temperature_c).c_str(),
                  opt(r.max_memory_temperature_c).c_str(), r.throttle.throttled_s(),
                  static_cast<unsigned long long>(r.mismatches),
                  r.kernel_log_watched ? absl::StrCat(r.xids.size()).c_str() : "-",
                  !r.error.empty() ? ("ERROR: " + r.error).c_str()
                                   : (gpu_failed ? "FAIL" : "ok"));
    }
  }
  failed = ReportNodeXids(node_xids, ctx, &out) || failed;
  if (!jsonl) {
    std::printf("kernel log: %s\n",
                ctx.kernel_log_error.empty()
                    ? absl::StrCat(node_xids.size(), " Xids on no burned GPU").c_str()
                    : absl::StrCat("not watched: ", ctx.kernel_log_error).c_str());
  }
  const char* task_dir = std::getenv("CMAX_TASK_DIR");
  const int64_t unix_s = NowUnixNs() / 1000000000;
  MaybeCollectBugReport(
      o.bug_report == "on", failed,
      {.dir = BugReportDir(o.artifact_dir, task_dir ? task_dir : "", ctx.node, unix_s),
       .node = ctx.node},
      &out);
  const int rc = failed ? kExitFoundFailures : kExitPassed;
  for (const auto& r : results) {
    if (r.hung) {
      // Exit without the CUDA runtime's teardown, which would block on the
      // hung GPU; the records are written (stdout and the spool are flushed).
      std::fflush(nullptr);
      std::_Exit(rc);
    }
  }
  return rc;
}

}  // namespace cmax::bench
