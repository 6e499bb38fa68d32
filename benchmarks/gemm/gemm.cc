// cmax-bench gemm: the host's GEMM through OpenBLAS, verified. Gives CPU
// nodes (Grace-class hosts too) a real compute figure; the GPU GEMM is
// cmax-bench-cuda gemm (benchmarks/cuda/).
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "benchmarks/gemm/host_gemm.h"
#include "benchmarks/suite.h"
#include "common/suite_flags.h"
#include "common/record_io.h"

namespace cmax::bench {

int RunGemm(int argc, char** argv) {
  std::string backend = "cpu";
  std::string dtype_name = "fp64";
  int64_t m = 4096, n = 4096, k = 4096, iters = 5, warmup = 1, threads = 0;
  bool fault_inject = false, jsonl = false;
  SuiteFlags flags("gemm", "cmax-bench", "--backend cpu [--dtype fp32|fp64] [--m M --n N --k K] [options]");
  flags.Bind("backend", &backend);
  flags.Bind("dtype", &dtype_name);
  flags.Bind("m", &m);
  flags.Bind("n", &n);
  flags.Bind("k", &k);
  flags.Bind("iters", &iters);
  flags.Bind("warmup", &warmup);
  flags.Bind("threads", &threads);
  flags.extra().AddFlag("fault-inject", &fault_inject,
                        "TEST ONLY: corrupt one output element before verification (must FAIL)");
  flags.extra().AddFlag("jsonl", &jsonl, "write records as JSON lines");
  if (auto rc = flags.Parse(argc, argv)) return *rc;
  RecordWriter out("gemm", jsonl ? stdout : nullptr);
  auto could_not_run = [&](const std::string& why) {
    std::fprintf(stderr, "gemm: %s\n", why.c_str());
    out.Log("error", absl::StrCat("not measured: ", why));
    out.NotMeasured("gemm.not_measured", "compute", "cpu",
                    "not measured: the host GEMM could not run", why);
    return kExitCouldNotRun;
  };
  if (backend != "cpu") {
    return could_not_run(absl::StrCat("backend '", backend,
                                      "' is not in this binary: cmax-bench gemm measures the "
                                      "cpu backend; the GPU GEMM is cmax-bench-cuda gemm"));
  }
  auto dtype = ParseGemmDtype(dtype_name);
  if (!dtype || (*dtype != GemmDtype::kFp32 && *dtype != GemmDtype::kFp64)) {
    return could_not_run(absl::StrCat("--dtype '", dtype_name, "': the cpu backend measures fp32 or fp64"));
  }
  HostGemmOptions o;
  o.dtype = *dtype;
  o.m = m;
  o.n = n;
  o.k = k;
  o.iters = static_cast<int>(iters);
  o.warmup = static_cast<int>(warmup);
  o.threads = static_cast<int>(threads);
  o.fault_inject = fault_inject;
  if (fault_inject) out.Log("warn", "--fault-inject: one output element is corrupted on purpose");
  out.Progress("gemm", 0, absl::StrCat("cpu ", dtype_name, " ", m, "x", n, "x", k));
  auto r = RunHostGemm(o);
  if (!r.ok()) return could_not_run(std::string(r.status().message()));

  std::map<std::string, std::string> labels = {
      {"backend", "cpu"},        {"dtype", dtype_name},         {"m", absl::StrCat(m)},
      {"n", absl::StrCat(n)},    {"k", absl::StrCat(k)},        {"threads", absl::StrCat(r->threads)},
      {"verified", r->verdict.ok() ? "true" : "false"}};
  out.Measure("gemm_tflops", r->gflops / 1000.0, "TFLOP/s", labels);
  out.Log("info", absl::StrCat("OpenBLAS: ", r->blas_config, "; ", r->verdict.Describe()));
  if (!r->verdict.ok()) {
    v1::Finding f;
    f.set_check_id("gemm.wrong_result");
    f.set_severity(v1::SEVERITY_FAIL);
    f.set_category("compute");
    f.set_subject("cpu");
    f.set_title(absl::StrCat("host ", dtype_name, " GEMM returned a wrong result"));
    f.set_detail(r->verdict.Describe());
    f.add_evidence(absl::StrFormat("cmax-bench gemm --backend cpu --dtype %s --m %d --n %d --k %d%s",
                                   dtype_name, m, n, k, fault_inject ? " --fault-inject" : ""));
    f.add_evidence(absl::StrCat("OpenBLAS ", r->blas_config, ", ", r->threads, " threads"));
    if (fault_inject) f.add_evidence("--fault-inject was given: the corruption was planted");
    f.set_action(fault_inject ? "none: the error was injected by --fault-inject"
                              : "rerun; a repeated wrong result points at the CPU or memory "
                                "(check EDAC/MCE logs) and the node should be drained");
    (*f.mutable_labels())["dtype"] = dtype_name;
    out.Find(f);
  }
  if (!jsonl) {
    std::printf("%-8s %-6s %7s %7s %7s %8s %12s %10s  %s\n", "backend", "dtype", "m", "n", "k",
                "threads", "GFLOP/s", "median_ms", "verified");
    std::printf("%-8s %-6s %7lld %7lld %7lld %8d %12.1f %10.3f  %s\n", "cpu", dtype_name.c_str(),
                (long long)m, (long long)n, (long long)k, r->threads, r->gflops,
                r->median_s * 1e3, r->verdict.ok() ? "ok" : "FAIL");
    std::printf("%s%s\n", r->verdict.ok() ? "" : "FAIL gemm.wrong_result: ",
                r->verdict.Describe().c_str());
  }
  return r->verdict.ok() ? kExitPassed : kExitFoundFailures;
}

}  // namespace cmax::bench
