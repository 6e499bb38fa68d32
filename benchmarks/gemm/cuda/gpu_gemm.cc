// cmax-bench-cuda gemm: dense GEMM throughput of every selected GPU at once
// through cuBLASLt, verified on sampled elements against an fp64 reference.
//
// Per GPU (one host thread and one stream each, all GPUs concurrently):
//   random operands from a device kernel (zeros inflate throughput), a 64 MiB
//   workspace, the heuristic's top 8 algorithms each timed and the fastest
//   kept, warm-up, per-iteration CUDA events and the median of the timed
//   iterations; TFLOP/s = 2mnk / median. The output is poisoned (NaN) before
//   the timed runs, and 256 sampled elements of what they wrote are recomputed
//   in fp64 by an independent kernel (kernels.cu); a wrong element is a FAIL
//   finding, never just a slow number.
//
// Layout: column-major "TN" for every dtype (A stored k x m and transposed,
// B stored k x n), which is what cuBLASLt requires for FP8 on Hopper and Ada
// and a layout every dtype runs at full speed in.
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "benchmarks/cuda/cublaslt_loader.h"
#include "benchmarks/gemm/cuda/gemm_cuda.h"
#include "benchmarks/cuda/cuda_env.h"
#include "benchmarks/cuda/kernels.h"
#include "benchmarks/cuda/lt_gemm.h"
#include "benchmarks/gpu_common/gemm_check.h"
#include "benchmarks/suite.h"
#include "common/suite_flags.h"
#include "common/median.h"
#include "common/status_macros.h"
#include "common/record_io.h"
#include "reports/gpu_specs.h"

namespace cmax::bench {
namespace {

constexpr size_t kWorkspaceBytes = size_t{64} << 20;  // >= 32 MiB (cuBLAS docs, cublasSetWorkspace: 32 MiB recommended on Hopper)
constexpr int kHeuristicAlgos = 8;
constexpr int kAlgoTrialRuns = 3;
constexpr int kSamples = 256;
// FP8 operand scales (device pointers): not 1, so a GEMM that ignored them
// fails verification. D = a_scale * b_scale * A^T B.
constexpr float kFp8ScaleA = 0.5f, kFp8ScaleB = 0.25f;

struct Shape {
  std::string name;
  int64_t m, n, k;
};

// 8192^3 reaches peak on every listed GPU. The others are the GEMMs of a
// transformer layer with 8192 tokens in flight (m = tokens):
//   llama3_8b_mlp_up   8192 x 14336 x 4096   gate/up projection (hidden 4096, FFN 14336)
//   llama3_8b_mlp_down 8192 x 4096 x 14336   down projection: long k
//   llama3_70b_kv      8192 x 1024 x 8192    K/V projection with GQA (8 KV heads x 128):
//                                            a narrow n that shows how a GPU does off-peak
// (model dimensions from Meta's Llama 3 model cards). Only the best figure
// is graded against the datasheet (reports/RULES_COMPUTE.md).
std::vector<Shape> DefaultShapes() {
  return {{"square_8192", 8192, 8192, 8192},
          {"llama3_8b_mlp_up", 8192, 14336, 4096},
          {"llama3_8b_mlp_down", 8192, 4096, 14336},
          {"llama3_70b_kv", 8192, 1024, 8192}};
}

struct GemmOptions {
  GemmDtype dtype = GemmDtype::kBf16;
  std::vector<Shape> shapes;
  int iters = 20;
  int warmup = 5;
  bool fault_inject = false;
};

struct GemmRow {
  GpuInfo gpu;
  Shape shape;
  int fast_accum = -1;  // FP8 only: CUBLASLT_MATMUL_DESC_FAST_ACCUM 0 or 1; -1 other dtypes
  std::string skipped;  // reason, when not measured
  absl::Status error;   // a CUDA or cuBLAS failure
  double tflops = 0;
  double median_ms = 0;
  int algos_timed = 0;
  int algos_failed = 0;        // offered algorithms that failed to launch or run: skipped
  std::string first_algo_error;
  AlgoSplit split;             // of the algorithm timed
  GemmVerdict verdict;
};

class GpuGemm {
 public:
  GpuGemm(GpuInfo gpu, const GemmOptions& o) : info_(std::move(gpu)), o_(o) {}
  absl::Status Init() {
    const int gpu = info_.index;
    CMAX_RETURN_IF_ERROR(ctx_.Init(gpu, kWorkspaceBytes));
    return absl::OkStatus();
  }

  GemmRow Run(const Shape& shape, uint64_t seed, int fast_accum) {
    GemmRow row;
    row.gpu = info_;
    row.shape = shape;
    row.fast_accum = fast_accum;
    row.error = RunShape(shape, seed, &row);
    return row;
  }

 private:
  absl::Status RunShape(const Shape& s, uint64_t seed, GemmRow* row) {
    const int gpu = info_.index;
    const TypeSetup t = SetupFor(o_.dtype);
    if (info_.compute_capability() < t.min_cc) {
      row->skipped = absl::StrFormat("%s; %s is %d.%d", t.min_cc_reason, info_.name,
                                     info_.cc_major, info_.cc_minor);
      return absl::OkStatus();
    }
    if (o_.dtype == GemmDtype::kFp8 && (s.m % 16 || s.n % 16 || s.k % 16)) {
      row->skipped = "FP8 GEMM needs m, n and k multiples of 16 (cuBLASLt FP8 rules)";
      return absl::OkStatus();
    }
    CMAX_CUDA(cudaSetDevice(gpu));
    const size_t a_bytes = static_cast<size_t>(s.m * s.k) * t.ab_size;
    const size_t b_bytes = static_cast<size_t>(s.k * s.n) * t.ab_size;
    const size_t d_bytes = static_cast<size_t>(s.m * s.n) * t.cd_size;
    size_t free_b = 0, total_b = 0;
    CMAX_CUDA(cudaMemGetInfo(&free_b, &total_b));
    if (a_bytes + b_bytes + d_bytes > free_b / 10 * 9) {
      row->skipped = absl::StrFormat("needs %.2f GiB, %.2f GiB free on the GPU",
                                     (a_bytes + b_bytes + d_bytes) / 1073741824.0,
                                     free_b / 1073741824.0);
      return absl::OkStatus();
    }
    DeviceMem a, b, d, scales, ij_dev, result_dev;
    CMAX_CUDA(cudaMalloc(&a.p, a_bytes));
    CMAX_CUDA(cudaMalloc(&b.p, b_bytes));
    CMAX_CUDA(cudaMalloc(&d.p, d_bytes));
    CMAX_CUDA(LaunchFillUniform(a.p, t.ab_elem, s.m * s.k, seed, ctx_.stream));
    CMAX_CUDA(LaunchFillUniform(b.p, t.ab_elem, s.k * s.n, seed ^ 0xA5A5A5A5ULL, ctx_.stream));
    double ab_scale = 1.0;

    LtObjects lt;
    // No split-K reduction in a 16-bit output type, in place or not
    // (cublas_choice.h, GemmReductionMask): its rounding exceeds the check's
    // tolerance.
    CMAX_RETURN_IF_ERROR(CreateTnMatmul(t, s.m, s.n, s.k, kWorkspaceBytes,
                                        GemmReductionMask(static_cast<int>(t.cd_size)), gpu, &lt));
    if (o_.dtype == GemmDtype::kFp8) {
      CMAX_CUDA(cudaMalloc(&scales.p, 2 * sizeof(float)));
      const float host_scales[2] = {kFp8ScaleA, kFp8ScaleB};
      CMAX_CUDA(cudaMemcpyAsync(scales.p, host_scales, sizeof(host_scales),
                                cudaMemcpyHostToDevice, ctx_.stream));
      void* sa = static_cast<float*>(scales.p);
      void* sb = static_cast<float*>(scales.p) + 1;
      CMAX_CUBLAS(cublasLtMatmulDescSetAttribute(lt.op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa,
                                                 sizeof(sa)));
      CMAX_CUBLAS(cublasLtMatmulDescSetAttribute(lt.op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb,
                                                 sizeof(sb)));
      ab_scale = static_cast<double>(kFp8ScaleA) * kFp8ScaleB;
      // Both accumulation modes are timed (row->fast_accum): Hopper's FP8
      // tensor cores reach their datasheet rate only with fast accumulation,
      // which skips cuBLAS's periodic promotion of partial sums to FP32.
      const int8_t fast = row->fast_accum > 0 ? 1 : 0;
      CMAX_CUBLAS(cublasLtMatmulDescSetAttribute(lt.op, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast,
                                                 sizeof(fast)));
    }
    cublasLtMatmulHeuristicResult_t heur[kHeuristicAlgos] = {};
    int found = 0;
    CMAX_CUBLAS(cublasLtMatmulAlgoGetHeuristic(ctx_.handle, lt.op, lt.a, lt.b, lt.c, lt.c, lt.pref,
                                               kHeuristicAlgos, heur, &found));
    if (found <= 0) {
      row->skipped = "cuBLASLt's heuristic offers no algorithm for this dtype and shape";
      return absl::OkStatus();
    }

    // alpha = 1, beta = 0 in the scale type; C = D (beta 0: C is not read).
    const float alpha_f = 1.0f, beta_f = 0.0f;
    const double alpha_d = 1.0, beta_d = 0.0;
    const void* alpha = t.scale == CUDA_R_64F ? static_cast<const void*>(&alpha_d) : &alpha_f;
    const void* beta = t.scale == CUDA_R_64F ? static_cast<const void*>(&beta_d) : &beta_f;
    auto matmul = [&](const cublasLtMatmulAlgo_t* algo) {
      return cublasLtMatmul(ctx_.handle, lt.op, alpha, a.p, lt.a, b.p, lt.b, beta, d.p, lt.c, d.p,
                            lt.c, algo, ctx_.workspace, kWorkspaceBytes, ctx_.stream);
    };

    // Time each offered algorithm; keep the fastest. One that fails to
    // launch or run is skipped, its error cleared so that it does not end the
    // shape (cudaGetLastError returns and resets a non-sticky error); a
    // sticky error (the context is lost) still ends it.
    Events ev;
    ev.e.resize(static_cast<size_t>(std::max(o_.iters, kAlgoTrialRuns)) + 1, nullptr);
    for (auto& e : ev.e) CMAX_CUDA(cudaEventCreate(&e));
    int best = -1;
    float best_ms = 0;
    auto algo_failed = [&](int i, const std::string& what) -> absl::Status {
      ++row->algos_failed;
      if (row->first_algo_error.empty()) {
        row->first_algo_error = absl::StrCat("algorithm ", i, ": ", what);
      }
      (void)cudaGetLastError();
      // Still usable? A sticky error fails every later call too.
      CMAX_CUDA(cudaStreamSynchronize(ctx_.stream));
      CMAX_CUDA(cudaGetLastError());
      return absl::OkStatus();
    };
    for (int i = 0; i < found; ++i) {
      if (heur[i].state != CUBLAS_STATUS_SUCCESS) continue;
      if (cublasStatus_t st = matmul(&heur[i].algo); st != CUBLAS_STATUS_SUCCESS) {
        CMAX_RETURN_IF_ERROR(algo_failed(i, cublasLtGetStatusName(st)));
        continue;
      }
      CMAX_CUDA(cudaEventRecord(ev.e[0], ctx_.stream));
      cublasStatus_t st = CUBLAS_STATUS_SUCCESS;
      for (int r = 0; r < kAlgoTrialRuns && st == CUBLAS_STATUS_SUCCESS; ++r) {
        st = matmul(&heur[i].algo);
      }
      CMAX_CUDA(cudaEventRecord(ev.e[1], ctx_.stream));
      if (cudaError_t e = cudaEventSynchronize(ev.e[1]); e != cudaSuccess) {
        CMAX_RETURN_IF_ERROR(algo_failed(i, cudaGetErrorName(e)));
        continue;
      }
      if (st != CUBLAS_STATUS_SUCCESS) {
        CMAX_RETURN_IF_ERROR(algo_failed(i, cublasLtGetStatusName(st)));
        continue;
      }
      float ms = 0;
      CMAX_CUDA(cudaEventElapsedTime(&ms, ev.e[0], ev.e[1]));
      ++row->algos_timed;
      if (best < 0 || ms < best_ms) {
        best = i;
        best_ms = ms;
      }
    }
    if (best < 0) {
      row->skipped = absl::StrFormat("none of the %d algorithms cuBLASLt offered ran%s", found,
                                     row->first_algo_error.empty()
                                         ? ""
                                         : absl::StrCat(" (", row->first_algo_error, ")"));
      return absl::OkStatus();
    }
    const cublasLtMatmulAlgo_t* algo = &heur[best].algo;
    // The tolerance follows the reduction the kept algorithm does
    // (gemm_check.h, GemmReduction).
    CMAX_RETURN_IF_ERROR(ReadAlgoSplit(*algo, gpu, &row->split));

    for (int i = 0; i < o_.warmup; ++i) CMAX_CUBLAS(matmul(algo));
    // Poison D (all bits set: NaN in every float type) so that an element the
    // timed runs did not write fails verification.
    CMAX_CUDA(cudaMemsetAsync(d.p, 0xFF, d_bytes, ctx_.stream));
    CMAX_CUDA(cudaEventRecord(ev.e[0], ctx_.stream));
    for (int i = 0; i < o_.iters; ++i) {
      CMAX_CUBLAS(matmul(algo));
      CMAX_CUDA(cudaEventRecord(ev.e[static_cast<size_t>(i) + 1], ctx_.stream));
    }
    CMAX_CUDA(cudaEventSynchronize(ev.e[static_cast<size_t>(o_.iters)]));
    std::vector<double> times;
    for (int i = 0; i < o_.iters; ++i) {
      float ms = 0;
      CMAX_CUDA(cudaEventElapsedTime(&ms, ev.e[static_cast<size_t>(i)],
                                     ev.e[static_cast<size_t>(i) + 1]));
      times.push_back(ms);
    }
    row->median_ms = Median(times);
    row->tflops = row->median_ms > 0 ? GemmFlops(s.m, s.n, s.k) / (row->median_ms * 1e-3) / 1e12 : 0;

    // Verify sampled elements of the timed runs' output.
    auto positions = PickSamplePositions(s.m, s.n, kSamples, seed + 17);
    if (o_.fault_inject && !positions.empty()) {
      // TEST ONLY: bytes 0x7F make a huge value (NaN in fp16) in every output type.
      auto [i, j] = positions[positions.size() / 2];
      char* elem = static_cast<char*>(d.p) + static_cast<size_t>(i + j * s.m) * t.cd_size;
      CMAX_CUDA(cudaMemsetAsync(elem, 0x7F, t.cd_size, ctx_.stream));
    }
    std::vector<int64_t> ij;
    for (auto [i, j] : positions) {
      ij.push_back(i);
      ij.push_back(j);
    }
    const int count = static_cast<int>(positions.size());
    CMAX_CUDA(cudaMalloc(&ij_dev.p, ij.size() * sizeof(int64_t)));
    CMAX_CUDA(cudaMalloc(&result_dev.p, 3 * static_cast<size_t>(count) * sizeof(double)));
    CMAX_CUDA(cudaMemcpyAsync(ij_dev.p, ij.data(), ij.size() * sizeof(int64_t),
                              cudaMemcpyHostToDevice, ctx_.stream));
    CMAX_CUDA(LaunchGemmReference(a.p, b.p, d.p, t.ab_elem, t.cd_elem, s.m, s.k,
                                  static_cast<const int64_t*>(ij_dev.p), count, ab_scale,
                                  static_cast<double*>(result_dev.p), ctx_.stream));
    std::vector<double> result(3 * static_cast<size_t>(count));
    CMAX_CUDA(cudaMemcpyAsync(result.data(), result_dev.p, result.size() * sizeof(double),
                              cudaMemcpyDeviceToHost, ctx_.stream));
    CMAX_CUDA(cudaStreamSynchronize(ctx_.stream));
    std::vector<GemmSample> samples;
    for (int x = 0; x < count; ++x) {
      GemmSample smp;
      smp.i = positions[static_cast<size_t>(x)].first;
      smp.j = positions[static_cast<size_t>(x)].second;
      smp.got = result[3 * static_cast<size_t>(x)];
      smp.ref = result[3 * static_cast<size_t>(x) + 1];
      smp.scale = result[3 * static_cast<size_t>(x) + 2];
      samples.push_back(smp);
    }
    GemmReduction reduction;
    reduction.split_k = row->split.split_k;
    reduction.in_output_type = ReducesInOutputType(row->split.reduction_scheme);
    row->verdict = CheckGemmSamples(o_.dtype, s.k, samples, reduction);
    return absl::OkStatus();
  }

  GpuInfo info_;
  const GemmOptions& o_;
  GpuLtContext ctx_;
};

void RunOneGpu(const GpuInfo& gpu, const GemmOptions& o, std::vector<GemmRow>* rows) {
  GpuGemm g(gpu, o);
  if (absl::Status s = g.Init(); !s.ok()) {
    GemmRow row;
    row.gpu = gpu;
    row.shape = o.shapes.front();
    row.error = s;
    rows->push_back(row);
    return;
  }
  // FP8: both accumulation modes, labelled fp8_fast_accum false / true.
  const std::vector<int> modes =
      o.dtype == GemmDtype::kFp8 ? std::vector<int>{0, 1} : std::vector<int>{-1};
  for (size_t i = 0; i < o.shapes.size(); ++i) {
    for (int mode : modes) {
      rows->push_back(
          g.Run(o.shapes[i], 0x5eed0000ULL + 7919ULL * gpu.index + 104729ULL * i, mode));
      if (!rows->back().error.ok()) return;  // the GPU is in an unknown state: stop here
    }
  }
}

std::string Percent(double tflops, const std::string& model, const std::string& dtype) {
  auto spec = reports::FindGpuSpec(model);
  if (!spec) return "-";
  double peak = reports::PeakTflops(*spec, dtype);
  return peak > 0 ? absl::StrFormat("%.0f%%", 100 * tflops / peak) : "-";
}

}  // namespace

std::optional<int> ParseCudaGemmArgs(int argc, char** argv, CudaGemmArgs* a) {
  std::string backend = "cuda";
  std::string& dtype_name = a->dtype_name;
  std::string& gpus_arg = a->gpus;
  int64_t &m = a->m, &n = a->n, &k = a->k, &iters = a->iters, &warmup = a->warmup;
  bool &jsonl = a->jsonl, &fault_inject = a->fault_inject;
  SuiteFlags flags("gemm", "cmax-bench-cuda",
                   "[--dtype bf16|fp16|fp8|tf32|fp32|fp64] [--m M --n N --k K] [--gpus all|0,1] "
                   "[options]");
  flags.Bind("backend", &backend);
  flags.Bind("dtype", &dtype_name);
  flags.Bind("m", &m);
  flags.Bind("n", &n);
  flags.Bind("k", &k);
  flags.Bind("gpus", &gpus_arg);
  flags.Bind("iters", &iters);
  flags.Bind("warmup", &warmup);
  flags.extra().AddFlag("fault-inject", &fault_inject,
                        "TEST ONLY: corrupt one output element before verification (must FAIL)");
  flags.extra().AddFlag("jsonl", &jsonl, "write records as JSON lines");
  if (auto rc = flags.Parse(argc, argv)) return *rc;
  auto dtype = ParseGemmDtype(dtype_name);
  if (backend != "cuda" || !dtype || iters < 1 || warmup < 0 || m < 0 || n < 0 || k < 0 ||
      m > 65536 || n > 65536 || k > 65536) {
    std::fprintf(stderr,
                 "gemm: bad arguments (backend must be cuda: the cpu GEMM is `cmax-bench gemm "
                 "--backend cpu`; dtype one of bf16 fp16 fp8 tf32 fp32 fp64; 1 <= iters; "
                 "0 <= warmup; sizes <= 65536)\n");
    return kExitCouldNotRun;
  }
  return std::nullopt;
}

int RunCudaGemm(int argc, char** argv) {
  CudaGemmArgs a;
  if (auto rc = ParseCudaGemmArgs(argc, argv, &a)) return *rc;
  const std::string& dtype_name = a.dtype_name;
  const std::string& gpus_arg = a.gpus;
  const int64_t m = a.m, n = a.n, k = a.k, iters = a.iters, warmup = a.warmup;
  const bool jsonl = a.jsonl, fault_inject = a.fault_inject;
  auto dtype = ParseGemmDtype(dtype_name);

  const absl::Status lt_loaded = LoadCublasLt();  // before the versions: they name it
  DriverProbe probe = ProbeDriver();
  CudaVersions versions = GetCudaVersions(probe);
  RecordWriter out("gemm", jsonl ? stdout : nullptr,
                   {{"backend", "cuda"}, {"driver", versions.driver},
                    {"cuda_runtime", versions.runtime}, {"cublas", versions.cublas}});
  // Both findings when both are missing; the driver's exit code first.
  const int lt_rc = CheckCublasLtLoaded(lt_loaded, out, jsonl);
  if (int rc = CheckCudaReady(out, probe, jsonl); rc != 0) return rc;
  if (lt_rc != 0) return lt_rc;
  auto gpus = SelectGpus(gpus_arg, "gemm", out);
  if (!gpus.ok()) return kExitCouldNotRun;

  GemmOptions o;
  o.dtype = *dtype;
  o.iters = static_cast<int>(iters);
  o.warmup = static_cast<int>(warmup);
  o.fault_inject = fault_inject;
  if (m || n || k) {
    o.shapes = {{"custom", m ? m : 8192, n ? n : 8192, k ? k : 8192}};
  } else {
    o.shapes = DefaultShapes();
  }
  if (fault_inject) out.Log("warn", "--fault-inject: one output element is corrupted on purpose");
  out.Progress("gemm", 0, absl::StrCat(dtype_name, " on ", gpus->size(), " GPUs"));

  std::vector<std::vector<GemmRow>> per_gpu(gpus->size());
  std::vector<std::thread> threads;
  for (size_t x = 0; x < gpus->size(); ++x) {
    threads.emplace_back(RunOneGpu, (*gpus)[x], std::cref(o), &per_gpu[x]);
  }
  for (auto& t : threads) t.join();

  int measured = 0, failures = 0;
  std::map<std::string, std::vector<std::string>> skipped;  // reason -> "gpu:i shape"
  const std::string cmd =
      absl::StrFormat("cmax-bench-cuda gemm --dtype %s --gpus %s", dtype_name, gpus_arg);
  if (!jsonl) {
    std::printf("driver %s, CUDA runtime %s, cuBLASLt %s\n", versions.driver.c_str(),
                versions.runtime.c_str(), versions.cublas.c_str());
    std::printf("%-4s %-22s %-6s %-20s %-17s %10s %6s %10s  %s\n", "gpu", "model", "dtype",
                "shape", "m x n x k", "TFLOP/s", "peak", "median_ms", "verified");
  }
  for (const auto& rows : per_gpu) {
    for (const auto& r : rows) {
      std::map<std::string, std::string> labels = r.gpu.Labels();
      labels["dtype"] = dtype_name;
      labels["shape"] = r.shape.name;
      labels["m"] = absl::StrCat(r.shape.m);
      labels["n"] = absl::StrCat(r.shape.n);
      labels["k"] = absl::StrCat(r.shape.k);
      if (r.fast_accum >= 0) labels["fp8_fast_accum"] = r.fast_accum ? "true" : "false";
      const std::string shown_dtype = r.fast_accum > 0 ? dtype_name + "-fa" : dtype_name;
      const std::string subject = absl::StrCat("gpu:", r.gpu.index);
      const std::string mnk = absl::StrCat(r.shape.m, "x", r.shape.n, "x", r.shape.k);
      if (!r.error.ok()) {
        ++failures;
        v1::Finding f;
        f.set_check_id("gemm.cuda_error");
        f.set_severity(v1::SEVERITY_FAIL);
        f.set_category("compute");
        f.set_subject(subject);
        f.set_title(absl::StrCat("GEMM failed on GPU ", r.gpu.index, " (", r.gpu.uuid, ")"));
        f.set_detail(std::string(r.error.message()));
        f.add_evidence(cmd);
        f.add_evidence(absl::StrCat("shape ", r.shape.name, " ", mnk, ", PCI ",
                                    r.gpu.pci_bus_id));
        f.set_action("check the kernel log for Xids on this GPU and nvidia-smi; drain the node "
                     "if the error repeats");
        for (const auto& [key, value] : labels) (*f.mutable_labels())[key] = value;
        out.Find(f);
        if (!jsonl) {
          std::printf("%-4d %-22s %-6s %-20s %-17s ERROR %s\n", r.gpu.index, r.gpu.name.c_str(),
                      shown_dtype.c_str(), r.shape.name.c_str(), mnk.c_str(),
                      std::string(r.error.message()).c_str());
        }
        continue;
      }
      if (!r.skipped.empty()) {
        skipped[r.skipped].push_back(absl::StrCat(subject, " ", r.shape.name));
        if (!jsonl) {
          std::printf("%-4d %-22s %-6s %-20s %-17s skipped: %s\n", r.gpu.index,
                      r.gpu.name.c_str(), shown_dtype.c_str(), r.shape.name.c_str(), mnk.c_str(),
                      r.skipped.c_str());
        }
        continue;
      }
      ++measured;
      labels["verified"] = r.verdict.ok() ? "true" : "false";
      labels["algos_timed"] = absl::StrCat(r.algos_timed);
      labels["split_k"] = absl::StrCat(r.split.split_k);
      labels["reduction_scheme"] =
          r.split.split_k > 1 ? ReductionSchemeName(r.split.reduction_scheme) : "none";
      // The GPU's own dense datasheet peak for the dtype (reports/gpu_specs.cc):
      // what validate.sh holds the figure to, as a fraction.
      if (auto spec = reports::FindGpuSpec(r.gpu.name); spec) {
        if (const double peak = reports::PeakTflops(*spec, dtype_name); peak > 0) {
          labels["spec"] = spec->name;
          labels["spec_tflops"] = absl::StrFormat("%g", peak);
        }
      }
      if (r.algos_failed > 0) {
        labels["algos_failed"] = absl::StrCat(r.algos_failed);
        out.Log("warn", absl::StrCat("GPU ", r.gpu.index, " ", r.shape.name, ": ", r.algos_failed,
                                     " of the offered algorithms failed and were skipped (",
                                     r.first_algo_error, ")"));
      }
      out.Measure("gemm_tflops", r.tflops, "TFLOP/s", labels);
      if (!r.verdict.ok()) {
        ++failures;
        v1::Finding f;
        f.set_check_id("gemm.wrong_result");
        f.set_severity(v1::SEVERITY_FAIL);
        f.set_category("compute");
        f.set_subject(subject);
        f.set_title(absl::StrCat(dtype_name, " GEMM on GPU ", r.gpu.index, " (", r.gpu.uuid,
                                 ") returned a wrong result"));
        f.set_detail(r.verdict.Describe());
        f.add_evidence(absl::StrCat(cmd, fault_inject ? " --fault-inject" : ""));
        f.add_evidence(absl::StrCat("shape ", r.shape.name, " ", mnk, ", ", r.gpu.name, ", PCI ",
                                    r.gpu.pci_bus_id, ", cuBLASLt ", versions.cublas));
        if (fault_inject) f.add_evidence("--fault-inject was given: the corruption was planted");
        f.set_action(fault_inject ? "none: the error was injected by --fault-inject"
                                  : "rerun; a repeated wrong result is silent data corruption: "
                                    "drain the node and replace the GPU");
        for (const auto& [key, value] : labels) (*f.mutable_labels())[key] = value;
        out.Find(f);
      }
      if (!jsonl) {
        std::printf("%-4d %-22s %-6s %-20s %-17s %10.1f %6s %10.3f  %s\n", r.gpu.index,
                    r.gpu.name.c_str(), shown_dtype.c_str(), r.shape.name.c_str(), mnk.c_str(),
                    r.tflops, Percent(r.tflops, r.gpu.name, dtype_name).c_str(), r.median_ms,
                    r.verdict.ok() ? "ok" : ("FAIL: " + r.verdict.Describe()).c_str());
      }
    }
  }
  for (const auto& [reason, where] : skipped) {
    v1::Finding f;
    f.set_check_id("gemm.not_measured");
    f.set_severity(v1::SEVERITY_INFO);
    f.set_category("compute");
    f.set_subject("node");
    f.set_title(absl::StrCat("not measured: ", dtype_name, " GEMM skipped"));
    f.set_detail(reason);
    f.set_not_measured(true);  // skipped shapes are never a pass (record.proto)
    for (const auto& w : where) f.add_evidence(w);
    f.set_action("none when the GPU lacks the data type; otherwise rerun with smaller --m/--n/--k");
    out.Find(f);
  }
  if (failures > 0) return kExitFoundFailures;
  if (measured == 0) {
    std::fprintf(stderr, "gemm: nothing was measured (%s)\n",
                 skipped.empty() ? "no GPU selected" : skipped.begin()->first.c_str());
    return kExitCouldNotRun;
  }
  return kExitPassed;
}

}  // namespace cmax::bench
