// burnin: sustained verified load. --backend cpu runs GEMM on the host here.
// The GPU burn-in is cmax-bench-cuda burnin (benchmarks/burnin/cuda/), which
// the agent runs for backend cuda (the catalog's binary_by_backend); this
// binary does not hand over to it.
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "benchmarks/burnin/cpu_burnin.h"
#include "benchmarks/suite.h"
#include "common/suite_flags.h"
#include "common/record_io.h"

namespace cmax::bench {

namespace {
// A coefficient of variation above this over one-second windows is reported
// as unstable throughput (cmax's choice: thermal or power throttling, or
// other load on the node, shows up as a wide spread).
constexpr double kUnstableCv = 0.15;
}  // namespace

int RunBurnin(int argc, char** argv) {
  std::string backend = "cpu";
  bool jsonl = false;
  burnin::CpuBurninOptions o;
  int64_t threads = 0, size = o.size, fault = 0;
  SuiteFlags flags("burnin", "cmax-bench", "--backend cpu|cuda --duration SECONDS [options]");
  flags.Bind("backend", &backend);
  flags.Bind("duration", &o.duration_s);
  flags.Bind("threads", &threads);
  flags.Bind("dtype", &o.dtype);
  flags.extra().AddInt("size", &size, "matrix size n (default 1024)");
  flags.extra().AddInt("fault-inject", &fault, "TEST ONLY: corrupt one element at iteration N");
  flags.extra().AddFlag("jsonl", &jsonl, "write records as JSON lines");
  if (auto rc = flags.Parse(argc, argv)) return *rc;
  RecordWriter out("burnin", jsonl ? stdout : nullptr);
  if (backend == "cuda") {
    const std::string why =
        "backend 'cuda' is not in this binary: cmax-bench burnin measures the cpu backend; the "
        "GPU burn-in is cmax-bench-cuda burnin";
    out.Log("error", absl::StrCat("burnin --backend cuda not measured: ", why));
    out.NotMeasured("burnin.not_measured", "reliability", "node",
                    "not measured: the GPU burn-in is not in cmax-bench", why,
                    "run cmax-bench-cuda burnin (a build with CUDA); a plan with backend: cuda "
                    "runs it");
    std::fprintf(stderr, "burnin: %s\n", why.c_str());
    return kExitCouldNotRun;
  }
  if (backend != "cpu") {
    std::fprintf(stderr, "burnin: --backend %s: expected cpu or cuda\n", backend.c_str());
    return kExitCouldNotRun;
  }
  o.threads = static_cast<int>(threads);
  o.size = static_cast<int>(size);
  o.fault_inject = fault;
  if (fault > 0) {
    out.Log("warn", absl::StrCat("--fault-inject ", fault,
                                 ": TEST ONLY, one element will be corrupted on purpose"));
  }
  auto r = burnin::RunCpuBurnin(o, &out);
  if (!r.ok()) {
    out.NotMeasured("burnin.not_measured", "reliability", "node",
                    "not measured: the CPU burn-in could not run",
                    std::string(r.status().message()));
    std::fprintf(stderr, "burnin: %s\n", std::string(r.status().message()).c_str());
    return kExitCouldNotRun;
  }
  std::map<std::string, std::string> labels = {{"backend", "cpu"},
                                               {"dtype", o.dtype},
                                               {"size", absl::StrCat(o.size)},
                                               {"threads", absl::StrCat(r->threads)},
                                               {"implementation", r->implementation}};
  out.Measure("burnin_gflops_mean", r->gflops_mean, "GFLOP/s", labels);
  if (r->windows > 0) {
    out.Measure("burnin_gflops_min_window", r->gflops_min_window, "GFLOP/s", labels);
  }
  if (r->windows > 1) out.Measure("burnin_gflops_cv", r->gflops_cv, "ratio", labels);
  out.Measure("burnin_iterations", static_cast<double>(r->iterations), "count", labels);
  out.Measure("burnin_mismatched_elements", static_cast<double>(r->mismatched_elements), "count",
              labels);
  out.Measure("burnin_seconds", r->seconds, "s", labels);
  if (r->max_temperature_c) out.Measure("burnin_temperature_max_c", *r->max_temperature_c, "C");
  if (r->min_freq_mhz) out.Measure("burnin_cpu_freq_min_mhz", *r->min_freq_mhz, "MHz");
  if (r->max_freq_mhz) out.Measure("burnin_cpu_freq_max_mhz", *r->max_freq_mhz, "MHz");

  bool failed = false;
  if (r->iterations == 0) {
    v1::Finding f;
    f.set_check_id("burnin.no_iterations");
    f.set_severity(v1::SEVERITY_FAIL);
    f.set_category("reliability");
    f.set_subject("node");
    f.set_title("burn-in finished no verified iteration");
    f.set_detail(absl::StrCat("duration ", o.duration_s, " s was shorter than one GEMM of n=",
                              o.size, ": nothing was verified"));
    f.set_action("rerun with a longer --duration or a smaller --size");
    out.Find(f);
    failed = true;
  }
  if (r->mismatched_elements > 0) {
    const burnin::Mismatch& m = *r->first_mismatch;
    v1::Finding f;
    f.set_check_id("burnin.mismatch");
    f.set_severity(v1::SEVERITY_FAIL);
    f.set_category("reliability");
    f.set_subject("node");
    f.set_title(absl::StrCat("CPU burn-in: ", r->mismatched_elements,
                             " mismatched elements, first at iteration ", m.iteration,
                             ", element (", m.row, ", ", m.col, ")",
                             fault > 0 ? " (injected by --fault-inject: test only)" : ""));
    f.set_detail(absl::StrFormat(
        "%s GEMM n=%d on %d threads (%s): iteration %d element (%d, %d) = %.9g, the first "
        "iteration gave %.9g (relative tolerance %g)",
        o.dtype, o.size, r->threads, r->implementation, m.iteration, m.row, m.col, m.got,
        m.expected, burnin::ToleranceFor(o.dtype)));
    f.add_evidence(absl::StrCat("iterations verified: ", r->iterations));
    f.set_action(fault > 0 ? "none: the corruption was injected on purpose (--fault-inject)"
                           : "drain and inspect hardware: the same computation gave a different "
                             "result (CPU, memory or cache fault); run memtest and the vendor's "
                             "CPU diagnostics");
    (*f.mutable_labels())["iteration"] = absl::StrCat(m.iteration);
    (*f.mutable_labels())["element"] = absl::StrCat(m.row, ",", m.col);
    if (fault > 0) (*f.mutable_labels())["fault_injected"] = "true";
    out.Find(f);
    failed = true;
  }
  if (r->windows >= 3 && r->gflops_cv > kUnstableCv) {
    v1::Finding f;
    f.set_check_id("burnin.unstable_throughput");
    f.set_severity(v1::SEVERITY_WARN);
    f.set_category("reliability");
    f.set_subject("node");
    f.set_title(absl::StrFormat("CPU burn-in throughput varies: CV %.2f over %d windows",
                                r->gflops_cv, r->windows));
    f.set_detail(absl::StrFormat("mean %.1f GFLOP/s, slowest window %.1f GFLOP/s", r->gflops_mean,
                                 r->gflops_min_window));
    f.set_action("check for thermal or power throttling and for other load on the node");
    out.Find(f);
  }
  if (!jsonl) {
    std::printf("burnin cpu %s n=%d threads=%d (%s): %lld iterations in %.1f s\n",
                o.dtype.c_str(), o.size, r->threads, r->implementation.c_str(),
                static_cast<long long>(r->iterations), r->seconds);
    std::printf("  GFLOP/s mean %.1f, min window %.1f, CV %.3f\n", r->gflops_mean,
                r->gflops_min_window, r->gflops_cv);
    std::printf("  mismatched elements: %lld\n", static_cast<long long>(r->mismatched_elements));
    if (r->first_mismatch) {
      std::printf("  FAIL first mismatch: iteration %lld element (%d, %d)\n",
                  static_cast<long long>(r->first_mismatch->iteration), r->first_mismatch->row,
                  r->first_mismatch->col);
    }
  }
  return failed ? kExitFoundFailures : kExitPassed;
}

}  // namespace cmax::bench
