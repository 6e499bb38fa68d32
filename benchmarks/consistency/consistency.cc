// consistency: deterministic workloads reduced to digests. The coordinator's
// consistency judge (benchmarks/consistency/consistency_judge.cc) compares digests of
// the same workload, CPU/GPU model and versions across the fleet.
#include <sys/utsname.h>

#include <cstdio>
#include <map>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "benchmarks/consistency/workloads.h"
#include "benchmarks/suite.h"
#include "common/cpuinfo.h"
#include "common/suite_flags.h"
#include "common/record_io.h"
#include "common/sysroot.h"
#include "common/version.h"

namespace cmax::bench {
namespace {

// The CPU model as hostcheck names it (common/cpuinfo.h): the x86 model
// name, or the Arm core from its implementer and part ("Arm Neoverse-V2" on
// Grace); the machine name from uname when /proc/cpuinfo names neither.
std::string CpuModel() {
  Sysroot root;
  if (auto text = root.Read("/proc/cpuinfo"); text.ok()) {
    if (std::string model = CpuModelName(ParseCpuinfo(*text)); !model.empty())
      return model;
  }
  struct utsname u;
  return uname(&u) == 0 ? u.machine : "unknown";
}

std::string Versions() {
  struct utsname u;
  std::string machine = uname(&u) == 0 ? u.machine : "unknown";
#if defined(__clang__)
  std::string compiler = absl::StrCat("clang ", __clang_version__);
#elif defined(__GNUC__)
  std::string compiler = absl::StrCat("gcc ", __VERSION__);
#else
  std::string compiler = "unknown compiler";
#endif
  return absl::StrCat("cmax ", kCmaxVersion, "; ", compiler, "; ", machine);
}

}  // namespace

int RunConsistency(int argc, char** argv) {
  std::string backend = "cpu";
  bool jsonl = false;
  int64_t repeats = 2;
  int64_t seed = 1234567;
  SuiteFlags flags("consistency", "cmax-bench", "[--backend cpu|cuda] [options]");
  flags.Bind("backend", &backend);
  flags.extra().AddInt("repeats", &repeats, "runs of each workload (default 2)");
  flags.extra().AddInt("seed", &seed, "input seed (default 1234567; peers must use the same)");
  flags.extra().AddFlag("jsonl", &jsonl, "write records as JSON lines");
  if (auto rc = flags.Parse(argc, argv)) return *rc;
  RecordWriter out("consistency", jsonl ? stdout : nullptr);
  if (backend == "cuda") {
    const std::string why =
        "backend 'cuda' is not in this binary: cmax-bench consistency runs the cpu backend; the "
        "GPU workloads are cmax-bench-cuda consistency";
    out.Log("error", absl::StrCat("consistency --backend cuda not measured: ", why));
    out.NotMeasured("consistency.not_measured", "reliability", "node",
                    "not measured: the GPU consistency check is not in cmax-bench", why,
                    "run cmax-bench-cuda consistency (a build with CUDA); a plan with "
                    "backend: cuda runs it");
    std::fprintf(stderr, "consistency: %s\n", why.c_str());
    return kExitCouldNotRun;
  }
  if (backend != "cpu" || repeats < 1 || repeats > 100) {
    std::fprintf(stderr, "consistency: need --backend cpu|cuda and --repeats in [1, 100]\n");
    return kExitCouldNotRun;
  }
  const std::string model = CpuModel();
  const std::string versions = Versions();
  bool failed = false;
  const auto& workloads = consistency::Workloads();
  for (size_t w = 0; w < workloads.size(); ++w) {
    const auto& spec = workloads[w];
    std::vector<consistency::WorkloadOutput> runs;
    for (int64_t r = 0; r < repeats; ++r) runs.push_back(spec.run(static_cast<uint64_t>(seed)));
    const auto& first = runs.front();
    std::map<std::string, std::string> labels = {
        {"workload", first.workload}, {"dtype", first.dtype},   {"digest", first.digest},
        {"model", model},             {"versions", versions},   {"backend", "cpu"},
        {"seed", absl::StrCat(seed)}};
    out.Measure("consistency_digest", first.value, "sum", labels);
    std::vector<std::string> differing;
    for (size_t r = 1; r < runs.size(); ++r) {
      if (runs[r].digest != first.digest) {
        differing.push_back(absl::StrCat("repeat ", r + 1, ": ", runs[r].digest));
      }
    }
    if (!differing.empty()) {
      v1::Finding f;
      f.set_check_id("consistency.nondeterministic");
      f.set_severity(v1::SEVERITY_FAIL);
      f.set_category("reliability");
      f.set_subject("cpu");
      f.set_title(absl::StrCat(first.workload, " gave different results on repeats on this node"));
      f.set_detail(absl::StrCat("the same deterministic computation on ", model,
                                " differed between repeats: a CPU, cache or memory fault"));
      f.add_evidence(absl::StrCat("repeat 1: ", first.digest));
      for (const auto& d : differing) f.add_evidence(d);
      f.set_action("drain and inspect hardware: run memtest and the vendor's CPU diagnostics");
      (*f.mutable_labels())["workload"] = first.workload;
      out.Find(f);
      failed = true;
    }
    out.Progress("consistency", static_cast<double>(w + 1) / workloads.size(), first.workload);
    if (!jsonl) {
      std::printf("%-16s %-5s %s  sum %.17g%s\n", first.workload.c_str(), first.dtype.c_str(),
                  first.digest.c_str(), first.value, differing.empty() ? "" : "  FAIL: repeats differ");
    }
  }
  if (!jsonl) std::printf("model: %s\nversions: %s\n", model.c_str(), versions.c_str());
  return failed ? kExitFoundFailures : kExitPassed;
}

}  // namespace cmax::bench
