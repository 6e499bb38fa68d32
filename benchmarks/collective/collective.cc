// cmax-bench collective: host collectives (gloo, Open MPI) with nccl-tests'
// flags, table and definitions (benchmarks/collective_common/runner.h).
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "benchmarks/collective_common/runner.h"
#include "benchmarks/suite.h"
#include "common/args.h"
#include "common/record_io.h"

#ifdef CMAX_HAVE_GLOO
#include "benchmarks/collective/gloo_backend.h"
#endif
#ifdef CMAX_HAVE_MPI
#include "benchmarks/collective/mpi_backend.h"
#endif

namespace cmax::bench {

int RunCollective(int argc, char** argv) {
  collective::Flags flags;
  flags.backend = "gloo";
  std::string gloo_address;
  SuiteFlags parser("collective", "cmax-bench");
  collective::AddFlags(&parser, &flags);
  parser.extra().AddString("gloo-address", &gloo_address,
                   "address or host name gloo listens on (default: the host name)");
  if (auto rc = parser.Parse(argc, argv)) return *rc;
  RecordWriter out("collective", flags.jsonl ? stdout : nullptr);
  auto options = collective::ResolveOptions(flags);
  if (!options.ok()) {
    collective::ReportNotMeasured(out, flags.backend, std::string(options.status().message()));
    std::fprintf(stderr, "collective: %s\n", std::string(options.status().message()).c_str());
    return kExitCouldNotRun;
  }
  std::vector<std::string> args(argv, argv + argc);
  options->command = absl::StrCat("cmax-bench ", absl::StrJoin(args, " "));

  std::unique_ptr<collective::Backend> backend;
  auto refuse = [&](const std::string& why) {
    collective::ReportNotMeasured(out, flags.backend, why);
    std::fprintf(stderr, "collective: %s\n", why.c_str());
    return kExitCouldNotRun;
  };
  if (flags.backend == "gloo") {
#ifdef CMAX_HAVE_GLOO
    collective::GlooConfig config;
    if (const char* ifname = std::getenv("GLOO_SOCKET_IFNAME")) config.iface = ifname;
    config.address = gloo_address;
    config.timeout = std::chrono::milliseconds(static_cast<int64_t>(flags.timeout_s * 1000));
    auto b = collective::CreateGlooBackend(config);
    if (!b.ok()) return refuse(std::string(b.status().message()));
    backend = std::move(*b);
#else
    return refuse("not built with gloo (install libgloo-dev and rebuild)");
#endif
  } else if (flags.backend == "mpi") {
#ifdef CMAX_HAVE_MPI
    auto b = collective::CreateMpiBackend();
    if (!b.ok()) return refuse(std::string(b.status().message()));
    backend = std::move(*b);
#else
    return refuse("not built with MPI (install libopenmpi-dev and rebuild)");
#endif
  } else {
    return refuse(absl::StrCat("unknown backend '", flags.backend,
                               "' (cmax-bench: gloo or mpi; nccl runs in cmax-bench-cuda)"));
  }
  FILE* table = (!flags.jsonl && backend->rank() == 0) ? stdout : nullptr;
  return collective::RunCollectives(*options, *backend, out, table);
}

}  // namespace cmax::bench
