// cmax-bench: every host suite, usable alone like nccl-tests.
//   cmax-bench <suite> [options]     (cmax-bench <suite> --help)

#include "benchmarks/suite.h"
#include "common/version.h"

namespace cmax::bench {
#ifdef CMAX_SUITE_HOSTCHECK
int RunHostcheck(int argc, char** argv);
#endif
#ifdef CMAX_SUITE_SELFTEST
int RunSelftest(int argc, char** argv);
#endif
#ifdef CMAX_SUITE_GEMM
int RunGemm(int argc, char** argv);
#endif
#ifdef CMAX_SUITE_BURNIN
int RunBurnin(int argc, char** argv);
#endif
#ifdef CMAX_SUITE_CONSISTENCY
int RunConsistency(int argc, char** argv);
#endif
#ifdef CMAX_SUITE_HEALTH
int RunHealth(int argc, char** argv);
#endif
#ifdef CMAX_SUITE_AUDIT
int RunAudit(int argc, char** argv);
#endif
#ifdef CMAX_SUITE_STORAGE
int RunStorage(int argc, char** argv);
#endif
#ifdef CMAX_SUITE_CONNECTIVITY
int RunConnectivity(int argc, char** argv);
#endif
#ifdef CMAX_SUITE_COLLECTIVE
int RunCollective(int argc, char** argv);
#endif
#ifdef CMAX_SUITE_DCGM
int RunDcgm(int argc, char** argv);
#endif
#ifdef CMAX_SUITE_RDMA
int RunRdma(int argc, char** argv);
#endif

namespace {
const SuiteEntry kSuites[] = {
#ifdef CMAX_SUITE_HOSTCHECK
    {"hostcheck", RunHostcheck, "inventory and node sanity"},
#endif
#ifdef CMAX_SUITE_SELFTEST
    {"selftest", RunSelftest, "pipeline self-test (records, sleep, fail, crash)"},
#endif
#ifdef CMAX_SUITE_GEMM
    {"gemm", RunGemm, "host GEMM through OpenBLAS, verified"},
#endif
#ifdef CMAX_SUITE_BURNIN
    {"burnin", RunBurnin, "sustained verified load on the host"},
#endif
#ifdef CMAX_SUITE_CONSISTENCY
    {"consistency", RunConsistency, "deterministic workloads reduced to digests"},
#endif
#ifdef CMAX_SUITE_HEALTH
    {"health", RunHealth, "passive health: GPUs and NVLink (NVML), NVSwitch, Xids, InfiniBand"},
#endif
#ifdef CMAX_SUITE_AUDIT
    {"audit", RunAudit, "software versions against advisories, fabric isolation"},
#endif
#ifdef CMAX_SUITE_STORAGE
    {"storage", RunStorage, "storage I/O through fio"},
#endif
#ifdef CMAX_SUITE_CONNECTIVITY
    {"connectivity", RunConnectivity, "full-mesh TCP reachability and RTT"},
#endif
#ifdef CMAX_SUITE_COLLECTIVE
    {"collective", RunCollective, "host collectives (gloo, mpi)"},
#endif
#ifdef CMAX_SUITE_DCGM
    {"dcgm", RunDcgm, "NVIDIA DCGM diagnostic (dcgmi diag -j) as records"},
#endif
#ifdef CMAX_SUITE_RDMA
    {"rdma", RunRdma, "perftest (ib_write_bw, ib_read_bw, ib_write_lat) per rail between two nodes"},
#endif
};
}  // namespace
}  // namespace cmax::bench

int main(int argc, char** argv) {
  using namespace cmax::bench;
  const SuiteBinary binary = {
      .name = "cmax-bench",
      .about = "Runs one cmax evaluation suite on this node. Human output by default;\n"
               "--jsonl writes one cmax.v1.Record per line instead.\n"
               "Exit codes: 0 passed, 1 ran and found failures, 2 could not run.\n",
      .version = std::string("cmax-bench ") + cmax::kCmaxVersion,
      .suites = kSuites,
      .count = sizeof(kSuites) / sizeof(kSuites[0]),
  };
  return RunSuiteBinary(binary, argc, argv);
}
