// cmax-bench-cuda memory: the memory paths of a GPU node, each copy verified.
//
//   h2d, d2h        pinned host memory on the GPU's own NUMA node, one GPU at a time
//   h2d_all/d2h_all every selected GPU at once (a shared PCIe switch or root port
//                   shows here); per GPU and an aggregate over the wall time
//   d2d             cudaMemcpy within a GPU, bytes read + written
//   hbm             a copy kernel with 16-byte accesses, bytes read + written
//   p2p             cudaMemcpyPeer between every ordered pair of GPUs that can
//                   access each other (a matrix), unidirectional
//
// Every source carries a random pattern (pattern.h); the destination is
// poisoned before the timed copies and checked word by word after them, so
// a copy that moved nothing or the wrong bytes is a FAIL, not a fast number.
// Times are CUDA events; a figure is the median over the timed iterations
// (labelled stat=median), for the *_all tests too: each GPU's own copies
// are timed one by one while all run at once. Their aggregate is all bytes
// over the wall time from the common start to the last GPU's end
// (stat=wall). GB/s = 1e9 bytes per second. One GPU alone: p2p is not
// measured, with that reason (memory.p2p_not_measured).
#include <barrier>
#include <chrono>
#include <cstdio>
#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "benchmarks/cuda/cuda_env.h"
#include "benchmarks/memory/cuda/memory_cuda.h"
#include "benchmarks/cuda/kernels.h"
#include "benchmarks/cuda/pattern.h"
#include "benchmarks/gpu_common/gemm_check.h"
#include "benchmarks/gpu_common/numa_memory.h"
#include "benchmarks/gpu_common/pcie_link.h"
#include "benchmarks/suite.h"
#include "common/suite_flags.h"
#include "common/median.h"
#include "common/record_io.h"
#include "common/status_macros.h"
#include "reports/gpu_specs.h"

namespace cmax::bench {
namespace {

const char* const kAllTests[] = {"h2d", "d2h", "h2d_all", "d2h_all", "d2d", "hbm", "p2p"};

struct MemOptions {
  int64_t size = int64_t{1} << 30;
  int iters = 20;
  int warmup = 3;
  std::set<std::string> tests;
};

// One GPU's stream and buffers. Not copyable; frees everything on its device.
struct GpuMem {
  GpuInfo info;
  cudaStream_t stream = nullptr;
  std::unique_ptr<NumaHostBuffer> host;
  bool host_pinned = false;
  void* src = nullptr;
  void* dst = nullptr;
  unsigned long long* mismatches = nullptr;  // device counter
  std::string numa_note;  // why the host buffer is not NUMA-bound, if it is not

  GpuMem() = default;
  GpuMem(const GpuMem&) = delete;
  GpuMem& operator=(const GpuMem&) = delete;
  ~GpuMem() {
    cudaSetDevice(info.index);
    if (host_pinned) cudaHostUnregister(host->data());
    host.reset();
    if (src) cudaFree(src);
    if (dst) cudaFree(dst);
    if (mismatches) cudaFree(mismatches);
    if (stream) cudaStreamDestroy(stream);
  }
  int64_t words(int64_t size) const { return size / 8; }
};

struct Result {
  std::string test;
  int gpu = -1;   // the GPU (the source for p2p); -1 for an aggregate
  int peer = -1;  // p2p destination
  double gbps = 0;
  double median_ms = 0;
  int64_t bytes_counted = 0;  // per copy
  uint64_t mismatches = 0;
  absl::Status error;
};

absl::Status Setup(GpuMem& g, const MemOptions& o) {
  const int gpu = g.info.index;
  CMAX_CUDA(cudaSetDevice(gpu));
  CMAX_CUDA(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking));
  CMAX_CUDA(cudaMalloc(&g.src, static_cast<size_t>(o.size)));
  CMAX_CUDA(cudaMalloc(&g.dst, static_cast<size_t>(o.size)));
  CMAX_CUDA(cudaMalloc(&g.mismatches, sizeof(unsigned long long)));
  bool needs_host = o.tests.count("h2d") || o.tests.count("d2h") || o.tests.count("h2d_all") ||
                    o.tests.count("d2h_all");
  if (!needs_host) return absl::OkStatus();
  auto buf = NumaHostBuffer::Allocate(static_cast<size_t>(o.size), g.info.numa_node);
  if (!buf.ok() && g.info.numa_node >= 0) {
    g.numa_note = std::string(buf.status().message());
    buf = NumaHostBuffer::Allocate(static_cast<size_t>(o.size), -1);
  } else if (g.info.numa_node < 0) {
    g.numa_note = "the GPU reports no NUMA node (sysfs numa_node -1)";
  }
  if (!buf.ok()) return buf.status();
  g.host = std::move(*buf);
  CMAX_CUDA(cudaHostRegister(g.host->data(), g.host->size(), cudaHostRegisterDefault));
  g.host_pinned = true;
  return absl::OkStatus();
}

void HostFill(void* p, int64_t words, uint64_t seed) {
  auto* w = static_cast<uint64_t*>(p);
  for (int64_t i = 0; i < words; ++i) w[i] = PatternWord(seed, static_cast<uint64_t>(i));
}

uint64_t HostCheck(const void* p, int64_t words, uint64_t seed) {
  const auto* w = static_cast<const uint64_t*>(p);
  uint64_t bad = 0;
  for (int64_t i = 0; i < words; ++i) bad += w[i] != PatternWord(seed, static_cast<uint64_t>(i));
  return bad;
}

absl::StatusOr<uint64_t> DeviceCheck(GpuMem& g, const void* p, int64_t words, uint64_t seed) {
  const int gpu = g.info.index;
  CMAX_CUDA(cudaSetDevice(gpu));
  CMAX_CUDA(cudaMemsetAsync(g.mismatches, 0, sizeof(unsigned long long), g.stream));
  CMAX_CUDA(LaunchCheckPattern(static_cast<const uint64_t*>(p), words, seed, g.mismatches,
                               g.stream));
  unsigned long long bad = 0;
  CMAX_CUDA(cudaMemcpyAsync(&bad, g.mismatches, sizeof(bad), cudaMemcpyDeviceToHost, g.stream));
  CMAX_CUDA(cudaStreamSynchronize(g.stream));
  return static_cast<uint64_t>(bad);
}

// Median milliseconds of `op` over iters timed runs after `warmup` untimed
// ones. `poison` runs after the warm-up has finished and before the timed
// runs, so that verification sees what the timed copies wrote.
// Bandwidth in GB/s (10^9 bytes) of `bytes` moved in `ms`; 0 when unmeasured.
double GbPerS(int64_t bytes, double ms) {
  return ms > 0 ? static_cast<double>(bytes) / (ms * 1e-3) / 1e9 : 0;
}

absl::StatusOr<double> TimeOp(int gpu, cudaStream_t stream, int warmup, int iters,
                              const std::function<cudaError_t()>& op,
                              const std::function<cudaError_t()>& poison) {
  CMAX_CUDA(cudaSetDevice(gpu));
  for (int i = 0; i < warmup; ++i) CMAX_CUDA(op());
  CMAX_CUDA(cudaStreamSynchronize(stream));
  CMAX_CUDA(poison());
  std::vector<cudaEvent_t> ev(static_cast<size_t>(iters) + 1, nullptr);
  absl::Status status;
  std::vector<double> ms;
  for (auto& e : ev) {
    if (status.ok()) status = CudaStatus(cudaEventCreate(&e), "cudaEventCreate", __FILE__, __LINE__, gpu);
  }
  if (status.ok()) status = CudaStatus(cudaEventRecord(ev[0], stream), "cudaEventRecord", __FILE__, __LINE__, gpu);
  for (int i = 0; i < iters && status.ok(); ++i) {
    status = CudaStatus(op(), "copy", __FILE__, __LINE__, gpu);
    if (status.ok()) {
      status = CudaStatus(cudaEventRecord(ev[static_cast<size_t>(i) + 1], stream),
                          "cudaEventRecord", __FILE__, __LINE__, gpu);
    }
  }
  if (status.ok()) {
    status = CudaStatus(cudaEventSynchronize(ev.back()), "cudaEventSynchronize", __FILE__,
                        __LINE__, gpu);
  }
  for (int i = 0; i < iters && status.ok(); ++i) {
    float t = 0;
    status = CudaStatus(cudaEventElapsedTime(&t, ev[static_cast<size_t>(i)], ev[static_cast<size_t>(i) + 1]),
                        "cudaEventElapsedTime", __FILE__, __LINE__, gpu);
    ms.push_back(t);
  }
  for (auto e : ev) {
    if (e) cudaEventDestroy(e);
  }
  if (!status.ok()) return status;
  return Median(ms);
}

uint64_t SeedFor(const std::string& test, int a, int b) {
  uint64_t h = 0xC0FFEE;
  for (char c : test) h = h * 131 + static_cast<unsigned char>(c);
  return h * 1000003ULL + static_cast<uint64_t>(a) * 1009ULL + static_cast<uint64_t>(b + 1);
}

// h2d or d2h for one GPU alone.
Result HostCopy(GpuMem& g, const MemOptions& o, bool to_device) {
  Result r;
  r.test = to_device ? "h2d" : "d2h";
  r.gpu = g.info.index;
  r.bytes_counted = o.size;
  const int gpu = g.info.index;
  const uint64_t seed = SeedFor(r.test, gpu, 0);
  const int64_t words = g.words(o.size);
  auto run = [&]() -> absl::Status {
    CMAX_CUDA(cudaSetDevice(gpu));
    if (to_device) {
      HostFill(g.host->data(), words, seed);
    } else {
      CMAX_CUDA(LaunchFillPattern(static_cast<uint64_t*>(g.src), words, seed, g.stream));
    }
    auto op = [&]() {
      return to_device ? cudaMemcpyAsync(g.dst, g.host->data(), static_cast<size_t>(o.size),
                                         cudaMemcpyHostToDevice, g.stream)
                       : cudaMemcpyAsync(g.host->data(), g.src, static_cast<size_t>(o.size),
                                         cudaMemcpyDeviceToHost, g.stream);
    };
    auto poison = [&]() {
      if (to_device) return cudaMemsetAsync(g.dst, 0xFF, static_cast<size_t>(o.size), g.stream);
      std::memset(g.host->data(), 0xFF, static_cast<size_t>(o.size));  // stream is idle here
      return cudaSuccess;
    };
    CMAX_ASSIGN_OR_RETURN(r.median_ms, TimeOp(gpu, g.stream, o.warmup, o.iters, op, poison));
    if (to_device) {
      CMAX_ASSIGN_OR_RETURN(r.mismatches, DeviceCheck(g, g.dst, words, seed));
    } else {
      r.mismatches = HostCheck(g.host->data(), words, seed);
    }
    return absl::OkStatus();
  };
  r.error = run();
  r.gbps = GbPerS(r.bytes_counted, r.median_ms);
  return r;
}

// memory.p2p_not_measured: p2p bandwidth unknown for `why`, never a pass
// (record.proto, Finding.not_measured).
v1::Finding P2pNotMeasured(const std::string& why, const std::string& cmd) {
  v1::Finding f;
  f.set_check_id("memory.p2p_not_measured");
  f.set_severity(v1::SEVERITY_INFO);
  f.set_not_measured(true);
  f.set_category("compute");
  f.set_subject("node");
  f.set_title("not measured: p2p bandwidth");
  f.set_detail(why);
  f.add_evidence(cmd);
  return f;
}

// h2d_all or d2h_all: every GPU at once. Returns one Result per GPU (its own
// loop time) and one aggregate (all bytes over the wall time).
std::vector<Result> HostCopyAll(std::vector<std::unique_ptr<GpuMem>>& gpus, const MemOptions& o,
                                bool to_device) {
  const std::string test = to_device ? "h2d_all" : "d2h_all";
  std::vector<Result> results(gpus.size());
  using Clock = std::chrono::steady_clock;
  Clock::time_point start;
  std::vector<Clock::time_point> end(gpus.size());
  std::barrier sync(static_cast<std::ptrdiff_t>(gpus.size()), [&]() noexcept { start = Clock::now(); });
  auto worker = [&](size_t x) {
    GpuMem& g = *gpus[x];
    Result& r = results[x];
    r.test = test;
    r.gpu = g.info.index;
    r.bytes_counted = o.size;
    const int gpu = g.info.index;
    const uint64_t seed = SeedFor(test, gpu, 0);
    const int64_t words = g.words(o.size);
    // e[0] before the first timed copy, e[i + 1] after copy i.
    std::vector<cudaEvent_t> ev(static_cast<size_t>(o.iters) + 1, nullptr);
    bool arrived = false;
    auto op = [&]() {
      return to_device ? cudaMemcpyAsync(g.dst, g.host->data(), static_cast<size_t>(o.size),
                                         cudaMemcpyHostToDevice, g.stream)
                       : cudaMemcpyAsync(g.host->data(), g.src, static_cast<size_t>(o.size),
                                         cudaMemcpyDeviceToHost, g.stream);
    };
    auto run = [&]() -> absl::Status {
      CMAX_CUDA(cudaSetDevice(gpu));
      if (to_device) {
        HostFill(g.host->data(), words, seed);
      } else {
        CMAX_CUDA(LaunchFillPattern(static_cast<uint64_t*>(g.src), words, seed, g.stream));
      }
      for (auto& e : ev) CMAX_CUDA(cudaEventCreate(&e));
      for (int i = 0; i < o.warmup; ++i) CMAX_CUDA(op());
      CMAX_CUDA(cudaStreamSynchronize(g.stream));
      // Poison the destination after the warm-up, before the timed copies.
      if (to_device) {
        CMAX_CUDA(cudaMemsetAsync(g.dst, 0xFF, static_cast<size_t>(o.size), g.stream));
        CMAX_CUDA(cudaStreamSynchronize(g.stream));
      } else {
        std::memset(g.host->data(), 0xFF, static_cast<size_t>(o.size));
      }
      arrived = true;
      sync.arrive_and_wait();
      CMAX_CUDA(cudaEventRecord(ev[0], g.stream));
      for (int i = 0; i < o.iters; ++i) {
        CMAX_CUDA(op());
        CMAX_CUDA(cudaEventRecord(ev[static_cast<size_t>(i) + 1], g.stream));
      }
      CMAX_CUDA(cudaEventSynchronize(ev.back()));
      end[x] = Clock::now();
      std::vector<double> ms;
      for (size_t i = 0; i + 1 < ev.size(); ++i) {
        float t = 0;
        CMAX_CUDA(cudaEventElapsedTime(&t, ev[i], ev[i + 1]));
        ms.push_back(t);
      }
      r.median_ms = Median(ms);
      if (to_device) {
        CMAX_ASSIGN_OR_RETURN(r.mismatches, DeviceCheck(g, g.dst, words, seed));
      } else {
        r.mismatches = HostCheck(g.host->data(), words, seed);
      }
      return absl::OkStatus();
    };
    r.error = run();
    if (!arrived) sync.arrive_and_drop();  // never leave the others waiting
    for (auto e : ev) {
      if (e) cudaEventDestroy(e);
    }
    r.gbps = GbPerS(o.size, r.median_ms);
  };
  std::vector<std::thread> threads;
  for (size_t x = 0; x < gpus.size(); ++x) threads.emplace_back(worker, x);
  for (auto& t : threads) t.join();

  Result agg;
  agg.test = test;
  agg.bytes_counted = o.size * o.iters * static_cast<int64_t>(gpus.size());
  Clock::time_point last = start;
  bool all_ok = true;
  for (size_t x = 0; x < gpus.size(); ++x) {
    all_ok = all_ok && results[x].error.ok();
    if (end[x] > last) last = end[x];
  }
  double s = std::chrono::duration<double>(last - start).count();
  if (all_ok && s > 0) {
    agg.gbps = static_cast<double>(agg.bytes_counted) / s / 1e9;
    agg.median_ms = s * 1e3;
    results.push_back(agg);
  }
  return results;
}

// d2d (cudaMemcpy) or hbm (copy kernel) within one GPU: 2 * size bytes move.
Result DeviceCopy(GpuMem& g, const MemOptions& o, bool kernel) {
  Result r;
  r.test = kernel ? "hbm" : "d2d";
  r.gpu = g.info.index;
  r.bytes_counted = 2 * o.size;
  const int gpu = g.info.index;
  const uint64_t seed = SeedFor(r.test, gpu, 0);
  const int64_t words = g.words(o.size);
  auto run = [&]() -> absl::Status {
    CMAX_CUDA(cudaSetDevice(gpu));
    CMAX_CUDA(LaunchFillPattern(static_cast<uint64_t*>(g.src), words, seed, g.stream));
    auto op = [&]() {
      return kernel ? LaunchStreamCopy(g.src, g.dst, o.size, g.info.sm_count, g.stream)
                    : cudaMemcpyAsync(g.dst, g.src, static_cast<size_t>(o.size),
                                      cudaMemcpyDeviceToDevice, g.stream);
    };
    auto poison = [&]() {
      return cudaMemsetAsync(g.dst, 0xFF, static_cast<size_t>(o.size), g.stream);
    };
    CMAX_ASSIGN_OR_RETURN(r.median_ms, TimeOp(gpu, g.stream, o.warmup, o.iters, op, poison));
    CMAX_ASSIGN_OR_RETURN(r.mismatches, DeviceCheck(g, g.dst, words, seed));
    return absl::OkStatus();
  };
  r.error = run();
  r.gbps = GbPerS(r.bytes_counted, r.median_ms);
  return r;
}

// src GPU's buffer to dst GPU's buffer over peer access.
Result PeerCopy(GpuMem& s, GpuMem& d, const MemOptions& o) {
  Result r;
  r.test = "p2p";
  r.gpu = s.info.index;
  r.peer = d.info.index;
  r.bytes_counted = o.size;
  const uint64_t seed = SeedFor("p2p", s.info.index, d.info.index);
  const int64_t words = s.words(o.size);
  auto run = [&]() -> absl::Status {
    int gpu = s.info.index;
    for (auto [from, to] : {std::pair{s.info.index, d.info.index}, {d.info.index, s.info.index}}) {
      gpu = from;
      CMAX_CUDA(cudaSetDevice(from));
      cudaError_t e = cudaDeviceEnablePeerAccess(to, 0);
      if (e == cudaErrorPeerAccessAlreadyEnabled) {
        cudaGetLastError();  // clear it: already enabled is fine
      } else {
        CMAX_CUDA(e);
      }
    }
    gpu = s.info.index;
    CMAX_CUDA(cudaSetDevice(gpu));
    CMAX_CUDA(LaunchFillPattern(static_cast<uint64_t*>(s.src), words, seed, s.stream));
    auto op = [&]() {
      return cudaMemcpyPeerAsync(d.dst, d.info.index, s.src, s.info.index,
                                 static_cast<size_t>(o.size), s.stream);
    };
    // Poison on the destination's own device and stream.
    auto poison = [&]() {
      cudaError_t e = cudaSetDevice(d.info.index);
      if (e == cudaSuccess) e = cudaMemsetAsync(d.dst, 0xFF, static_cast<size_t>(o.size), d.stream);
      if (e == cudaSuccess) e = cudaStreamSynchronize(d.stream);
      cudaError_t back = cudaSetDevice(s.info.index);
      return e != cudaSuccess ? e : back;
    };
    CMAX_ASSIGN_OR_RETURN(r.median_ms, TimeOp(gpu, s.stream, o.warmup, o.iters, op, poison));
    CMAX_ASSIGN_OR_RETURN(r.mismatches, DeviceCheck(d, d.dst, words, seed));
    return absl::OkStatus();
  };
  r.error = run();
  r.gbps = GbPerS(r.bytes_counted, r.median_ms);
  return r;
}

}  // namespace

int RunCudaMemory(int argc, char** argv) {
  std::string gpus_arg = "all", tests_arg;
  int64_t size = int64_t{1} << 30, iters = 20, warmup = 3;
  bool jsonl = false;
  SuiteFlags flags("memory", "cmax-bench-cuda");
  flags.Bind("gpus", &gpus_arg);
  flags.Bind("size", &size);
  flags.Bind("iters", &iters);
  flags.Bind("warmup", &warmup);
  flags.Bind("tests", &tests_arg);
  flags.extra().AddFlag("jsonl", &jsonl, "write records as JSON lines");
  if (auto rc = flags.Parse(argc, argv)) return *rc;
  MemOptions o;
  o.size = size / (int64_t{1} << 20) * (int64_t{1} << 20);
  o.iters = static_cast<int>(iters);
  o.warmup = static_cast<int>(warmup);
  if (tests_arg.empty()) {
    for (const char* t : kAllTests) o.tests.insert(t);
  } else {
    for (absl::string_view t : absl::StrSplit(tests_arg, ',')) {
      if (std::find(std::begin(kAllTests), std::end(kAllTests), t) == std::end(kAllTests)) {
        std::fprintf(stderr, "memory: unknown test '%s'\n", std::string(t).c_str());
        return kExitCouldNotRun;
      }
      o.tests.insert(std::string(t));
    }
  }
  if (o.size < (int64_t{1} << 20) || iters < 1 || warmup < 0) {
    std::fprintf(stderr, "memory: --size must be at least 1M, --iters >= 1, --warmup >= 0\n");
    return kExitCouldNotRun;
  }

  DriverProbe probe = ProbeDriver();
  CudaVersions versions = GetCudaVersions(probe);
  RecordWriter out("memory", jsonl ? stdout : nullptr,
                   {{"driver", versions.driver}, {"cuda_runtime", versions.runtime}});
  if (int rc = CheckCudaReady(out, probe, jsonl); rc != 0) return rc;
  auto selected = SelectGpus(gpus_arg, "memory", out);
  if (!selected.ok()) return kExitCouldNotRun;
  const std::string cmd = absl::StrFormat("cmax-bench-cuda memory --gpus %s --size %d", gpus_arg,
                                          o.size);
  int failures = 0;
  auto cuda_failure = [&](const GpuInfo* g, const std::string& test, const absl::Status& s) {
    ++failures;
    v1::Finding f;
    f.set_check_id("memory.cuda_error");
    f.set_severity(v1::SEVERITY_FAIL);
    f.set_category("compute");
    f.set_subject(g ? absl::StrCat("gpu:", g->index) : "node");
    f.set_title(absl::StrCat("memory test ", test, " failed",
                             g ? absl::StrCat(" on GPU ", g->index, " (", g->uuid, ")") : ""));
    f.set_detail(std::string(s.message()));
    f.add_evidence(cmd);
    if (g) {
      for (const auto& [k, v] : g->Labels()) (*f.mutable_labels())[k] = v;
    }
    f.set_action("check the kernel log for Xids and nvidia-smi; drain the node if it repeats");
    out.Find(f);
    if (!jsonl) std::printf("ERROR %s: %s\n", test.c_str(), std::string(s.message()).c_str());
  };

  std::vector<std::unique_ptr<GpuMem>> gpus;
  for (const GpuInfo& info : *selected) {
    auto g = std::make_unique<GpuMem>();
    g->info = info;
    if (absl::Status s = Setup(*g, o); !s.ok()) {
      cuda_failure(&g->info, "setup", s);
      return kExitFoundFailures;
    }
    if (!g->numa_note.empty()) {
      out.Log("warn",
              absl::StrCat("GPU ", info.index, ": host buffer not NUMA-bound: ", g->numa_note));
    }
    gpus.push_back(std::move(g));
  }

  std::vector<Result> results;
  for (auto& g : gpus) {
    if (o.tests.count("h2d")) results.push_back(HostCopy(*g, o, true));
    if (o.tests.count("d2h")) results.push_back(HostCopy(*g, o, false));
  }
  for (bool to_device : {true, false}) {
    if (!o.tests.count(to_device ? "h2d_all" : "d2h_all")) continue;
    for (auto& r : HostCopyAll(gpus, o, to_device)) results.push_back(r);
  }
  for (auto& g : gpus) {
    if (o.tests.count("d2d")) results.push_back(DeviceCopy(*g, o, false));
    if (o.tests.count("hbm")) results.push_back(DeviceCopy(*g, o, true));
  }
  // (src, dst) -> why peer access is not possible.
  std::map<std::pair<int, int>, std::string> no_peer;
  if (o.tests.count("p2p") && gpus.size() < 2) {
    // Nothing to copy between: not measured, with the reason, never an
    // empty matrix that reads like a pass.
    v1::Finding f = P2pNotMeasured(
        gpus.empty() ? std::string("no GPU selected")
                     : absl::StrCat("only GPU ", gpus.front()->info.index,
                                    " is selected; p2p needs two GPUs"),
        cmd);
    f.set_action("select two or more GPUs (gpus: all) on a node that has them");
    out.Find(f);
  }
  if (o.tests.count("p2p")) {
    for (auto& s : gpus) {
      for (auto& d : gpus) {
        if (s == d) continue;
        int can = 0;
        cudaError_t e = cudaDeviceCanAccessPeer(&can, s->info.index, d->info.index);
        if (e != cudaSuccess || !can) {
          no_peer[{s->info.index, d->info.index}] =
              e != cudaSuccess
                  ? absl::StrCat("cudaDeviceCanAccessPeer: ", cudaGetErrorName(e))
                  : std::string("cudaDeviceCanAccessPeer says no peer access");
          continue;
        }
        results.push_back(PeerCopy(*s, *d, o));
      }
    }
  }

  auto info_of = [&](int idx) -> const GpuInfo* {
    for (auto& g : gpus) {
      if (g->info.index == idx) return &g->info;
    }
    return nullptr;
  };
  std::map<std::pair<std::string, int>, double> table;  // (test, gpu) -> GB/s
  std::map<std::pair<int, int>, double> p2p;
  std::map<std::string, double> aggregate;
  for (const auto& r : results) {
    const GpuInfo* g = info_of(r.gpu);
    if (!r.error.ok()) {
      cuda_failure(g, r.test, r.error);
      continue;
    }
    std::map<std::string, std::string> labels;
    if (g) labels = g->Labels();
    labels["test"] = r.test;
    labels["size_bytes"] = absl::StrCat(o.size);
    labels["bytes_counted"] = absl::StrCat(r.bytes_counted);
    labels["verified"] = r.mismatches == 0 ? "true" : "false";
    labels["stat"] = r.gpu < 0 ? "wall" : "median";
    if (r.gpu < 0) labels["gpu"] = "all";
    if (g && (r.test == "h2d" || r.test == "d2h" || r.test == "h2d_all" || r.test == "d2h_all")) {
      for (auto& m : gpus) {
        if (m->info.index == r.gpu && m->host) {
          labels["host_numa_node"] = absl::StrCat(m->host->node());
        }
      }
      // The link the copy crossed, read from the device (pcie_link.h): what
      // a host copy is held to (validate.sh), never a figure for one card.
      // A Grace superchip's GPU (its spec's host link is not PCIe) crossed
      // NVLink-C2C, whatever PCIe files its function shows: no PCIe figure.
      HostLink link = ReadHostLink("", g->pci_bus_id);
      if (auto spec = reports::FindGpuSpec(g->name); spec && spec->pcie_gen == 0) {
        link.kind = HostLinkKind::kNotPcie;
        link.why = absl::StrCat(
            spec->name, " reaches its host over NVLink-C2C (reports/gpu_specs.cc)");
      }
      for (const auto& [k, v] : HostLinkLabels(link)) labels[k] = v;
    }
    if (g && (r.test == "d2d" || r.test == "hbm")) {
      // The GPU's own datasheet memory bandwidth (reports/gpu_specs.cc).
      if (auto spec = reports::FindGpuSpec(g->name); spec && spec->memory_gbps > 0) {
        labels["spec"] = spec->name;
        labels["spec_gbps"] = absl::StrFormat("%g", spec->memory_gbps);
      }
    }
    if (r.test == "p2p") {
      const GpuInfo* d = info_of(r.peer);
      labels["src"] = absl::StrCat(r.gpu);
      labels["dst"] = absl::StrCat(r.peer);
      if (d) labels["dst_uuid"] = d->uuid;
      p2p[{r.gpu, r.peer}] = r.gbps;
    } else if (r.gpu < 0) {
      aggregate[r.test] = r.gbps;
    } else {
      table[{r.test, r.gpu}] = r.gbps;
    }
    out.Measure("memory_bandwidth_gbps", r.gbps, "GB/s", labels);
    if (r.mismatches != 0) {
      ++failures;
      v1::Finding f;
      f.set_check_id("memory.copy_corrupted");
      f.set_severity(v1::SEVERITY_FAIL);
      f.set_category("compute");
      f.set_subject(r.test == "p2p" ? absl::StrCat("gpu:", r.gpu, "->gpu:", r.peer)
                                    : absl::StrCat("gpu:", r.gpu));
      f.set_title(absl::StrCat(r.test, " copy delivered wrong data"));
      f.set_detail(absl::StrFormat("%d of %d 64-bit words differ from the pattern after %s",
                                   r.mismatches, o.size / 8, r.test));
      f.add_evidence(cmd);
      if (g) f.add_evidence(absl::StrCat("GPU ", g->index, " ", g->uuid, " PCI ", g->pci_bus_id));
      f.set_action("rerun; repeated corruption points at the GPU, its memory or the link: "
                   "drain the node");
      for (const auto& [k, v] : labels) (*f.mutable_labels())[k] = v;
      out.Find(f);
    }
  }
  for (const auto& [pair, why] : no_peer) {
    out.Log("info", absl::StrCat("p2p ", pair.first, "->", pair.second,
                                 ": peer access not possible, not measured (", why, ")"));
  }
  if (!no_peer.empty()) {
    // One not-measured finding for every pair without peer access: the p2p
    // bandwidth of those pairs is unknown, never a pass (record.proto).
    v1::Finding f = P2pNotMeasured(
        absl::StrCat(no_peer.begin()->second, " for GPU ", no_peer.begin()->first.first,
                     " -> GPU ", no_peer.begin()->first.second,
                     no_peer.size() > 1 ? " and the other pairs in the evidence" : ""),
        cmd);
    f.set_title(absl::StrCat("not measured: p2p bandwidth of ", no_peer.size(),
                             " GPU pairs without peer access"));
    for (const auto& [pair, why] : no_peer) {
      f.add_evidence(absl::StrCat("gpu:", pair.first, "->gpu:", pair.second, ": ", why));
    }
    f.set_action("none where the GPUs have no NVLink or PCIe peer path (nvidia-smi topo -m); "
                 "otherwise check the IOMMU / ACS settings");
    out.Find(f);
  }

  if (!jsonl) {
    std::printf("driver %s, CUDA runtime %s; %lld bytes per copy; GB/s (d2d and hbm count bytes "
                "read + written)\n",
                versions.driver.c_str(), versions.runtime.c_str(), (long long)o.size);
    std::printf("%-4s %-22s %-13s %4s", "gpu", "model", "pci", "numa");
    const char* cols[] = {"h2d", "d2h", "h2d_all", "d2h_all", "d2d", "hbm"};
    for (const char* c : cols) std::printf(" %9s", c);
    std::printf("\n");
    for (auto& g : gpus) {
      std::printf("%-4d %-22s %-13s %4d", g->info.index, g->info.name.c_str(),
                  g->info.pci_bus_id.c_str(), g->info.numa_node);
      for (const char* c : cols) {
        auto it = table.find({c, g->info.index});
        if (it == table.end()) {
          std::printf(" %9s", "-");
        } else {
          std::printf(" %9.1f", it->second);
        }
      }
      std::printf("\n");
    }
    for (const auto& [test, v] : aggregate) {
      std::printf("%s aggregate over all GPUs: %.1f GB/s\n", test.c_str(), v);
    }
    if (o.tests.count("p2p") && gpus.size() > 1) {
      std::printf("p2p GB/s (row = source, column = destination)\n%6s", "");
      for (auto& d : gpus) std::printf(" %8d", d->info.index);
      std::printf("\n");
      for (auto& s : gpus) {
        std::printf("%6d", s->info.index);
        for (auto& d : gpus) {
          auto it = p2p.find({s->info.index, d->info.index});
          if (it == p2p.end()) {
            std::printf(" %8s", "-");
          } else {
            std::printf(" %8.1f", it->second);
          }
        }
        std::printf("\n");
      }
    }
    std::printf("%s\n", failures ? "FAIL: see findings above" : "all copies verified");
  }
  return failures ? kExitFoundFailures : kExitPassed;
}

}  // namespace cmax::bench
