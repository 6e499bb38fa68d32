#include "common/suite_catalog.h"

#include <algorithm>
#include <cmath>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/status_macros.h"

namespace cmax {
namespace {

using v1::SCOPE_BARRIER;
using v1::SCOPE_GANG;
using v1::SCOPE_NODE;
using v1::SCOPE_PAIRS;

// A check for a suite whose backends are different binaries with different
// parsers (SuiteInfo::check): the backend is params["backend"] or
// `default_backend`; `only` maps a parameter to the one backend whose binary
// takes it; `dtypes` lists, per backend, the dtype values its binary runs.
// Each binary's own parser refuses the others (exit 2), so the plan must not
// be accepted with them.
std::function<absl::Status(const std::map<std::string, std::string>&)> BackendRule(
    std::string suite, std::string default_backend, std::map<std::string, std::string> only,
    std::map<std::string, std::vector<std::string>> dtypes) {
  return [suite = std::move(suite), default_backend = std::move(default_backend),
          only = std::move(only),
          dtypes = std::move(dtypes)](const std::map<std::string, std::string>& params) {
    auto b = params.find("backend");
    const std::string backend = b == params.end() ? default_backend : b->second;
    for (const auto& [param, owner] : only) {
      if (params.count(param) && owner != backend) {
        return absl::InvalidArgumentError(absl::StrCat(
            "suite '", suite, "': parameter '", param, "' applies to backend ", owner,
            " only, and this task's backend is ", backend,
            b == params.end() ? " (the default)" : ""));
      }
    }
    auto d = params.find("dtype");
    auto allowed = dtypes.find(backend);
    if (d != params.end() && allowed != dtypes.end() &&
        std::find(allowed->second.begin(), allowed->second.end(), d->second) ==
            allowed->second.end()) {
      return absl::InvalidArgumentError(absl::StrCat(
          "suite '", suite, "': dtype '", d->second, "' is not run by backend ", backend,
          b == params.end() ? " (the default)" : "", "; it runs ",
          absl::StrJoin(allowed->second, ", ")));
    }
    return absl::OkStatus();
  };
}

std::vector<SuiteInfo> MakeCatalog() {
  std::vector<SuiteInfo> c;

  c.push_back({
      .name = "hostcheck",
      .binary = "cmax-bench",
      .category = "reliability",
      .help = "inventory and basic node sanity (GPUs on the bus, driver, memory, swap, disk, clock, GPU-NIC topology)",
      .scopes = {SCOPE_NODE},
      .default_timeout_s = 120,
      .exclusive = false,
      .takes_root = true,
      .params =
          {
              {.name = "expect-gpus", .type = ParamType::kInt, .help = "GPUs expected per node",
               .min = 0, .max = 1024},
              {.name = "expect-gpu-model", .type = ParamType::kToken,
               .help = "substring of the expected GPU model"},
              {.name = "min-cpu-cores", .type = ParamType::kInt, .help = "minimum CPU cores",
               .min = 0, .max = 1 << 20},
              {.name = "min-memory-gib", .type = ParamType::kNumber,
               .help = "minimum memory in GiB", .min = 0, .max = 1 << 30},
              {.name = "min-free-root-pct", .type = ParamType::kNumber,
               .help = "warn below this free percentage of /", .min = 0, .max = 100},
          },
  });

  // A diagnostic suite that exercises the pipeline itself: records, slow,
  // hanging, failing and crashing suites. Its records say "selftest".
  c.push_back({
      .name = "selftest",
      .binary = "cmax-bench",
      .category = "reliability",
      .help = "pipeline self-test: writes records, sleeps, fails or crashes on request",
      .scopes = {SCOPE_NODE, SCOPE_BARRIER, SCOPE_GANG},
      .default_timeout_s = 60,
      .exclusive = true,
      .params =
          {
              {.name = "mode", .type = ParamType::kEnum, .help = "what to do",
               .choices = {"ok", "records", "sleep", "fail", "error", "crash", "barrier",
                           "orphan"}},
              {.name = "records", .type = ParamType::kInt, .help = "records to write",
               .min = 0, .max = 10000000},
              {.name = "seconds", .type = ParamType::kNumber, .help = "time to take",
               .min = 0, .max = 86400},
              {.name = "rate", .type = ParamType::kNumber, .help = "records per second (0: as fast as possible)",
               .min = 0, .max = 1e7},
              {.name = "fail-rank", .type = ParamType::kInt,
               .help = "group tasks: this rank exits 3 (a crash) after its first record",
               .min = 0, .max = 1 << 20},
              {.name = "declare", .type = ParamType::kFlag,
               .help = "first write how many records this run writes in all"},
          },
  });

  // Full-mesh TCP reachability, round-trip time and a short transfer between
  // every pair of ranks of a gang (benchmarks/connectivity), one rank per node
  // by default; judged by reports/judges/connectivity_judge.cc.
  c.push_back({
      .name = "connectivity",
      .binary = "cmax-bench",
      .category = "networking",
      .help = "full-mesh TCP reachability, round-trip time and transfer rate between nodes",
      .scopes = {SCOPE_GANG},
      .default_timeout_s = 300,
      .exclusive = false,
      .params =
          {
              {.name = "port-range", .type = ParamType::kToken,
               .help = "LOW-HIGH: listen on the first free port of this range (default: any)"},
              {.name = "bytes", .type = ParamType::kBytes,
               .help = "bytes per transfer measurement (default 4M)", .min = 1024,
               .max = 1LL << 30},
              {.name = "pings", .type = ParamType::kInt,
               .help = "ping-pongs per pair; the RTT is their median (default 20)", .min = 1,
               .max = 10000},
              {.name = "timeout", .type = ParamType::kNumber,
               .help = "seconds per connection attempt (default 2)", .min = 0.1, .max = 60},
          },
  });

  // GEMM per GPU (cuBLASLt, cmax-bench-cuda gemm: benchmarks/gemm/cuda/) or
  // on the host CPU (OpenBLAS, cmax-bench gemm): --backend picks the binary
  // (SuiteBinary). gpus applies to the cuda backend only, threads to the cpu
  // backend only, and the cpu backend runs fp32 and fp64 only; each binary
  // refuses the rest (exit 2), so `check` refuses them in the plan.
  c.push_back({
      .name = "gemm",
      .binary = "cmax-bench-cuda",
      .category = "compute",
      .help = "verified GEMM throughput per GPU (cuBLASLt) or on the host (OpenBLAS)",
      .scopes = {SCOPE_NODE},
      .default_timeout_s = 1800,
      .exclusive = true,
      .params =
          {
              {.name = "backend", .type = ParamType::kEnum,
               .help = "cuda (every GPU, default) or cpu (OpenBLAS on all cores)",
               .choices = {"cuda", "cpu"}},
              {.name = "dtype", .type = ParamType::kEnum,
               .help = "data type (cpu: fp32 or fp64)",
               .choices = {"bf16", "fp16", "fp8", "tf32", "fp32", "fp64"}},
              {.name = "m", .type = ParamType::kInt, .help = "rows of C", .min = 1, .max = 65536},
              {.name = "n", .type = ParamType::kInt, .help = "columns of C", .min = 1,
               .max = 65536},
              {.name = "k", .type = ParamType::kInt, .help = "inner dimension", .min = 1,
               .max = 65536},
              {.name = "gpus", .type = ParamType::kIntList,
               .help = "GPU indices or 'all' (cuda backend)"},
              {.name = "iters", .type = ParamType::kInt, .help = "timed iterations", .min = 1,
               .max = 100000},
              {.name = "warmup", .type = ParamType::kInt, .help = "warm-up iterations", .min = 0,
               .max = 10000},
              {.name = "threads", .type = ParamType::kInt,
               .help = "OpenBLAS threads, 0 for all (cpu backend)", .min = 0, .max = 65536},
          },
      .binary_by_backend = {{"cuda", "cmax-bench-cuda"}, {"cpu", "cmax-bench"}},
      .check = BackendRule("gemm", "cuda", {{"gpus", "cuda"}, {"threads", "cpu"}},
                           {{"cpu", {"fp32", "fp64"}}}),
  });

  // GPU memory bandwidth (benchmarks/memory/cuda/): cmax-bench-cuda only.
  c.push_back({
      .name = "memory",
      .binary = "cmax-bench-cuda",
      .category = "compute",
      .help = "host<->device (pinned, NUMA-local), device, HBM and peer-to-peer bandwidth, verified",
      .scopes = {SCOPE_NODE},
      .default_timeout_s = 1200,
      .exclusive = true,
      .params =
          {
              {.name = "gpus", .type = ParamType::kIntList, .help = "GPU indices or 'all'"},
              {.name = "size", .type = ParamType::kBytes, .help = "bytes per copy",
               .min = 1 << 20, .max = 64.0 * (1LL << 30)},
              {.name = "iters", .type = ParamType::kInt, .help = "timed iterations", .min = 1,
               .max = 100000},
              {.name = "warmup", .type = ParamType::kInt, .help = "warm-up iterations", .min = 0,
               .max = 10000},
              {.name = "tests", .type = ParamType::kEnumList, .help = "tests to run (default all)",
               .choices = {"h2d", "d2h", "h2d_all", "d2h_all", "d2d", "hbm", "p2p"}},
          },
  });

  // Software versions against advisories, InfiniBand and tenant isolation.
  c.push_back({
      .name = "audit",
      .binary = "cmax-bench",
      .category = "security",
      .help = "component versions against advisories (distribution backports included), "
              "driver branch lifecycle, P_Key/M_Key isolation, forbidden targets",
      .scopes = {SCOPE_NODE},
      .default_timeout_s = 300,
      .exclusive = false,
      .takes_root = true,
      .params =
          {
              {.name = "advisories", .type = ParamType::kPath,
               .help = "advisory file replacing the installed one"},
              {.name = "tenancy", .type = ParamType::kEnum,
               .help = "shared: an unpartitioned fabric fails; single: it is informational",
               .choices = {"shared", "single"}},
              {.name = "forbidden", .type = ParamType::kToken,
               .help = "comma-separated host:port targets a tenant must not reach"},
          },
  });

  // Passive health (benchmarks/health): NVML, kernel log Xids, InfiniBand.
  c.push_back({
      .name = "health",
      .binary = "cmax-bench",
      .category = "reliability",
      .help = "passive health: GPUs through NVML, Xid/SXid in the kernel log, InfiniBand/RoCE ports",
      .scopes = {SCOPE_NODE},
      .default_timeout_s = 300,
      .exclusive = false,
      .takes_root = true,
      .params =
          {
              {.name = "expect-gpus", .type = ParamType::kInt, .help = "GPUs expected per node",
               .min = 0, .max = 1024},
              {.name = "expect-ib-rate", .type = ParamType::kNumber,
               .help = "expected rate of every RDMA port in Gb/s", .min = 0, .max = 1e5},
              {.name = "thresholds", .type = ParamType::kPath,
               .help = "YAML file on the node overriding health thresholds"},
              {.name = "set", .type = ParamType::kToken,
               .help = "threshold overrides section.key:value,... (e.g. nvlink.crc_flit_warn:500)"},
          },
  });

  // Burn-in (benchmarks/burnin): sustained verified GEMM. --backend picks the
  // binary: cmax-bench burnin for cpu (the default), cmax-bench-cuda burnin
  // (benchmarks/burnin/cuda/) for cuda; this is the only way to the GPU
  // burn-in (cmax-bench burnin --backend cuda does not hand over). threads
  // applies to the cpu backend, gpus and bug-report to the cuda backend; the
  // cpu backend runs fp32 and fp64, the cuda backend bf16 and fp32. Each
  // binary refuses the rest (exit 2), so `check` refuses them in the plan.
  c.push_back({
      .name = "burnin",
      .binary = "cmax-bench",
      .category = "reliability",
      .help = "sustained verified GEMM load with telemetry (host or GPUs)",
      .scopes = {SCOPE_NODE, SCOPE_BARRIER},
      .default_timeout_s = 7200,
      .exclusive = true,
      .params =
          {
              {.name = "backend", .type = ParamType::kEnum, .help = "cpu or cuda",
               .choices = {"cpu", "cuda"}},
              {.name = "duration", .type = ParamType::kNumber, .help = "seconds of load",
               .min = 1, .max = 7 * 86400},
              {.name = "threads", .type = ParamType::kInt,
               .help = "host threads (cpu backend; 0: all cores)", .min = 0, .max = 4096},
              {.name = "dtype", .type = ParamType::kEnum, .help = "element type",
               .choices = {"fp32", "fp64", "bf16"}},
              {.name = "gpus", .type = ParamType::kIntList,
               .help = "GPU indices or 'all' (cuda backend)"},
              {.name = "bug-report", .type = ParamType::kEnum,
               .help = "on: nvidia-bug-report.sh after a failure (cuda backend)",
               .choices = {"on", "off"}},
          },
      .binary_by_backend = {{"cuda", "cmax-bench-cuda"}, {"cpu", "cmax-bench"}},
      .check = BackendRule("burnin", "cpu",
                           {{"threads", "cpu"}, {"gpus", "cuda"}, {"bug-report", "cuda"}},
                           {{"cpu", {"fp32", "fp64"}}, {"cuda", {"bf16", "fp32"}}}),
  });

  // Numerical consistency (benchmarks/consistency): digests of deterministic
  // workloads, compared across the fleet by reports/judges/consistency_judge.cc.
  // cpu (the default) in cmax-bench, cuda in cmax-bench-cuda consistency
  // (benchmarks/consistency/cuda/); gpus applies to the cuda backend only.
  c.push_back({
      .name = "consistency",
      .binary = "cmax-bench",
      .category = "reliability",
      .help = "deterministic workloads reduced to digests (silent data corruption check)",
      .scopes = {SCOPE_NODE, SCOPE_BARRIER},
      .default_timeout_s = 900,
      .exclusive = true,
      .params =
          {
              {.name = "backend", .type = ParamType::kEnum, .help = "cpu or cuda",
               .choices = {"cpu", "cuda"}},
              {.name = "gpus", .type = ParamType::kIntList,
               .help = "GPU indices or 'all' (cuda backend)"},
          },
      .binary_by_backend = {{"cuda", "cmax-bench-cuda"}, {"cpu", "cmax-bench"}},
      .check = BackendRule("consistency", "cpu", {{"gpus", "cuda"}}, {}),
  });

  // NVIDIA DCGM's diagnostic (benchmarks/dcgm): opt-in, stresses the GPUs
  // at levels 2 and 3, so exclusive. Where DCGM is missing it says so (exit 2).
  c.push_back({
      .name = "dcgm",
      .binary = "cmax-bench",
      .category = "reliability",
      .help = "NVIDIA DCGM diagnostic (dcgmi diag -r LEVEL -j) as findings per test and GPU",
      .scopes = {SCOPE_NODE},
      .default_timeout_s = 6000,
      .exclusive = true,
      .params =
          {
              {.name = "level", .type = ParamType::kInt, .help = "diagnostic run level",
               .min = 1, .max = 3},
          },
  });

  // perftest between the two nodes of a pair, rail by rail (benchmarks/rdma,
  // issue 20 item 2): rank 0 serves, rank 1 connects; judged by
  // reports/judges/rdma_judge.cc against the port rate and the fleet.
  // Exclusive: it saturates the node's NICs.
  c.push_back({
      .name = "rdma",
      .binary = "cmax-bench",
      .category = "networking",
      .help = "perftest ib_write_bw, ib_read_bw and ib_write_lat per rail between node pairs",
      .scopes = {SCOPE_PAIRS},
      .default_timeout_s = 1800,
      .exclusive = true,
      .takes_root = true,
      .params =
          {
              {.name = "tests", .type = ParamType::kEnumList, .help = "perftest runs per rail",
               .choices = {"write_bw", "read_bw", "write_lat", "all"}},
              {.name = "duration", .type = ParamType::kInt,
               .help = "seconds per bandwidth run (-D, default 5)", .min = 0, .max = 3600},
              {.name = "iters", .type = ParamType::kInt, .help = "iterations per run (-n)",
               .min = 1, .max = 100000000},
              {.name = "size", .type = ParamType::kBytes, .help = "message size (-s)", .min = 2,
               .max = 1 << 30},
              {.name = "port", .type = ParamType::kInt,
               .help = "first TCP port for perftest's exchange (-p, default 18515)",
               .min = 1024, .max = 65435},
              {.name = "gid-index", .type = ParamType::kInt, .help = "RoCE GID index (-x)",
               .min = 0, .max = 255},
              {.name = "cuda", .type = ParamType::kEnum,
               .help = "GPU memory through --use_cuda: auto, on, off",
               .choices = {"auto", "on", "off"}},
              {.name = "timeout", .type = ParamType::kNumber,
               .help = "seconds one perftest run may take", .min = 1, .max = 86400},
              {.name = "min-rate-fraction", .type = ParamType::kNumber,
               .help = "bandwidth floor as a fraction of the port rate (default 0.9)",
               .min = 0.1, .max = 1},
          },
  });

  // Storage through fio (benchmarks/storage): honest data, direct I/O where
  // allowed; with scope barrier every node starts its measured phase at once.
  c.push_back({
      .name = "storage",
      .binary = "cmax-bench",
      .category = "storage",
      .help = "storage bandwidth, IOPS, latency, metadata, checkpoint and restore through fio",
      .scopes = {SCOPE_NODE, SCOPE_BARRIER},
      .default_timeout_s = 3600,
      .exclusive = true,
      .params =
          {
              {.name = "path", .type = ParamType::kPath, .help = "directory to measure"},
              {.name = "pattern", .type = ParamType::kEnumList, .help = "patterns to run",
               .choices = {"seq-write", "seq-read", "rand-read", "rand-write", "metadata",
                           "checkpoint", "restore", "all"}},
              {.name = "size", .type = ParamType::kBytes, .help = "bytes per job and file",
               .min = 4096, .max = 1e15},
              {.name = "block-size", .type = ParamType::kBytes, .help = "block size",
               .min = 512, .max = 1 << 30},
              {.name = "queue-depth", .type = ParamType::kInt, .help = "I/O depth per job",
               .min = 1, .max = 4096},
              {.name = "jobs", .type = ParamType::kInt, .help = "parallel jobs (one file each)",
               .min = 1, .max = 1024},
              {.name = "duration", .type = ParamType::kNumber,
               .help = "seconds per time-based pattern", .min = 1, .max = 86400},
              {.name = "files", .type = ParamType::kInt, .help = "files per job (metadata)",
               .min = 1, .max = 10000000},
              {.name = "direct", .type = ParamType::kFlag, .help = "O_DIRECT (default)"},
              {.name = "buffered", .type = ParamType::kFlag, .help = "use the page cache"},
              {.name = "verify", .type = ParamType::kFlag, .help = "crc32c on every block"},
              {.name = "keep", .type = ParamType::kFlag,
               .help = "leave the files (a checkpoint for another node's restore)"},
              {.name = "shard-from", .type = ParamType::kToken,
               .help = "restore: the node whose kept shard to read, or 'next'"},
          },
  });

  // Every suite that can run as a gang may be launched by mpirun; these are
  // the only mpirun options a plan can set (ValidateMpirunOption).
  for (SuiteInfo& suite : c) {
    if (std::find(suite.scopes.begin(), suite.scopes.end(), SCOPE_GANG) == suite.scopes.end()) {
      continue;
    }
    suite.params.push_back({.name = std::string(kMpirunBindTo), .type = ParamType::kToken,
                            .help = "launcher mpirun: --bind-to none|core|socket|numa"});
    suite.params.push_back({.name = std::string(kMpirunMapBy), .type = ParamType::kToken,
                            .help = "launcher mpirun: --map-by (ppr:N:UNIT, node, socket, "
                                    "numa, core, slot, hwthread, with :PE=N, :SPAN, ...)"});
    suite.params.push_back({.name = std::string(kMpirunIfInclude), .type = ParamType::kToken,
                            .help = "launcher mpirun: interfaces or CIDRs for Open MPI's TCP "
                                    "traffic (btl_tcp_if_include and oob_tcp_if_include)"});
  }
  // Collectives (benchmarks/collective, benchmarks/collective/cuda/collective_nccl.cc):
  // nccl-tests' flags in their long forms (-b/-e/-f/-n/-w/-c/-d are the same
  // options); --backend picks the binary. expect-gdr applies to nccl only.
  c.push_back({
      .name = "collective",
      .binary = "cmax-bench-cuda",
      .category = "networking",
      .help = "collectives timed and verified like nccl-tests: NCCL per GPU (with the transport "
              "NCCL used), gloo or Open MPI on the host",
      .scopes = {SCOPE_GANG, SCOPE_PAIRS, SCOPE_NODE},
      .default_timeout_s = 1800,
      .exclusive = true,
      .params =
          {
              {.name = "backend", .type = ParamType::kEnum,
               .help = "nccl (GPUs, default), gloo (host, agents launcher) or mpi (host, mpirun)",
               .choices = {"nccl", "gloo", "mpi"}},
              {.name = "op", .type = ParamType::kEnumList, .help = "operations, or all",
               .choices = {"all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast",
                           "sendrecv", "all"}},
              {.name = "min-bytes", .type = ParamType::kBytes, .help = "smallest size (-b)",
               .min = 1, .max = 1e12},
              {.name = "max-bytes", .type = ParamType::kBytes, .help = "largest size (-e)",
               .min = 1, .max = 1e12},
              {.name = "factor", .type = ParamType::kInt, .help = "size multiplier (-f)",
               .min = 2, .max = 1024},
              {.name = "iters", .type = ParamType::kInt, .help = "timed iterations (-n)",
               .min = 1, .max = 100000},
              {.name = "warmup", .type = ParamType::kInt, .help = "warm-up iterations (-w)",
               .min = 0, .max = 10000},
              {.name = "check-iters", .type = ParamType::kInt,
               .help = "verified iterations per size (-c)", .min = 0, .max = 1000},
              {.name = "dtype", .type = ParamType::kEnum, .help = "element type (-d)",
               .choices = {"int8", "uint8", "int32", "uint32", "int64", "uint64", "half",
                           "float", "double", "bfloat16"}},
              {.name = "timeout", .type = ParamType::kNumber,
               .help = "seconds one collective may take", .min = 1, .max = 86400},
              {.name = "expect-gdr", .type = ParamType::kFlag,
               .help = "nccl: inter-node traffic must use GPUDirect RDMA"},
              // Soak (benchmarks/collective_common/soak.h): one op at one
              // size (min-bytes = max-bytes) for `soak` seconds. The suite
              // refuses (exit 2) a soak shorter than two intervals.
              {.name = "soak", .type = ParamType::kNumber,
               .help = "seconds to run one op at one size (min-bytes = max-bytes), busbw per "
                       "interval; the task timeout must exceed it",
               .min = 2, .max = 7 * 86400},
              {.name = "interval", .type = ParamType::kNumber,
               .help = "soak: seconds per busbw interval (default 10)", .min = 1, .max = 86400},
              {.name = "stall", .type = ParamType::kNumber,
               .help = "soak: seconds without a completed iteration on a rank that count as a "
                       "stall (default 60)",
               .min = 1, .max = 86400},
          },
      .binary_by_backend = {{"nccl", "cmax-bench-cuda"}, {"gloo", "cmax-bench"},
                            {"mpi", "cmax-bench"}},
  });

  return c;
}

bool IsTokenChar(char ch) {
  return absl::ascii_isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' ||
         ch == ':' || ch == ',' || ch == '+' || ch == '-';
}

absl::Status Bad(const ParamSpec& spec, const std::string& value, const std::string& want) {
  return absl::InvalidArgumentError(
      absl::StrCat("parameter '", spec.name, "': '", value, "' is not ", want));
}

absl::Status CheckRange(const ParamSpec& spec, const std::string& value, double v) {
  if ((spec.min != 0 || spec.max != 0) && (v < spec.min || v > spec.max)) {
    return Bad(spec, value, absl::StrCat("within [", spec.min, ", ", spec.max, "]"));
  }
  return absl::OkStatus();
}

}  // namespace

const std::vector<SuiteInfo>& SuiteCatalog() {
  static const std::vector<SuiteInfo>* catalog = new std::vector<SuiteInfo>(MakeCatalog());
  return *catalog;
}

const SuiteInfo* FindSuite(const std::string& name) {
  for (const auto& s : SuiteCatalog()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::string SuiteBinary(const SuiteInfo& suite, const std::vector<std::string>& args) {
  for (const auto& arg : args) {
    if (!absl::StartsWith(arg, "--backend=")) continue;
    auto it = suite.binary_by_backend.find(arg.substr(10));
    if (it != suite.binary_by_backend.end()) return it->second;
  }
  return suite.binary;
}

absl::StatusOr<int64_t> ParseBytes(const std::string& text) {
  if (text.empty()) return absl::InvalidArgumentError("empty size");
  std::string digits = text;
  int64_t mult = 1;
  char last = absl::ascii_toupper(static_cast<unsigned char>(digits.back()));
  if (last == 'B' && digits.size() > 1) {  // "64KB", "1MiB" style suffixes
    digits.pop_back();
    if (!digits.empty() && (digits.back() == 'i' || digits.back() == 'I')) digits.pop_back();
    last = absl::ascii_toupper(static_cast<unsigned char>(digits.back()));
  }
  switch (last) {
    case 'K': mult = int64_t{1} << 10; break;
    case 'M': mult = int64_t{1} << 20; break;
    case 'G': mult = int64_t{1} << 30; break;
    case 'T': mult = int64_t{1} << 40; break;
    default: break;
  }
  if (mult != 1) digits.pop_back();
  int64_t n = 0;
  if (!absl::SimpleAtoi(digits, &n) || n < 0 || n > (INT64_MAX / mult)) {
    return absl::InvalidArgumentError(absl::StrCat("'", text, "' is not a size in bytes"));
  }
  return n * mult;
}

absl::Status ValidateParam(const ParamSpec& spec, const std::string& value) {
  if (value.size() > 4096) return Bad(spec, value.substr(0, 32) + "...", "short enough");
  if (IsMpirunOption(spec.name)) return ValidateMpirunOption(spec.name, value);
  switch (spec.type) {
    case ParamType::kInt: {
      int64_t v;
      if (!absl::SimpleAtoi(value, &v)) return Bad(spec, value, "an integer");
      return CheckRange(spec, value, static_cast<double>(v));
    }
    case ParamType::kNumber: {
      double v;
      if (!absl::SimpleAtod(value, &v) || !std::isfinite(v)) return Bad(spec, value, "a number");
      return CheckRange(spec, value, v);
    }
    case ParamType::kBytes: {
      auto v = ParseBytes(value);
      if (!v.ok()) return Bad(spec, value, "a size (4096, 64K, 1M, 2G)");
      return CheckRange(spec, value, static_cast<double>(*v));
    }
    case ParamType::kEnum:
      if (std::find(spec.choices.begin(), spec.choices.end(), value) == spec.choices.end()) {
        return Bad(spec, value, absl::StrCat("one of ", absl::StrJoin(spec.choices, ", ")));
      }
      return absl::OkStatus();
    case ParamType::kEnumList: {
      if (value.empty()) return Bad(spec, value, "a list");
      for (absl::string_view item : absl::StrSplit(value, ',')) {
        if (std::find(spec.choices.begin(), spec.choices.end(), item) == spec.choices.end()) {
          return Bad(spec, value,
                     absl::StrCat("a comma-separated list of ", absl::StrJoin(spec.choices, ", ")));
        }
      }
      return absl::OkStatus();
    }
    case ParamType::kIntList: {
      if (value == "all") return absl::OkStatus();
      if (value.empty()) return Bad(spec, value, "a list of integers or 'all'");
      for (absl::string_view item : absl::StrSplit(value, ',')) {
        int64_t v;
        if (!absl::SimpleAtoi(item, &v) || v < 0) {
          return Bad(spec, value, "a list of integers or 'all'");
        }
      }
      return absl::OkStatus();
    }
    case ParamType::kPath: {
      if (value.empty() || value[0] != '/') return Bad(spec, value, "an absolute path");
      for (char ch : value) {
        if (!(absl::ascii_isalnum(static_cast<unsigned char>(ch)) || ch == '/' || ch == '_' ||
              ch == '.' || ch == '-' || ch == '+' || ch == '@' || ch == ':')) {
          return Bad(spec, value, "a path of letters, digits and / _ . - + @ :");
        }
      }
      for (absl::string_view part : absl::StrSplit(value, '/')) {
        if (part == "..") return Bad(spec, value, "a path without '..'");
      }
      return absl::OkStatus();
    }
    case ParamType::kToken:
      if (value.empty() || value.size() > 128 ||
          !std::all_of(value.begin(), value.end(), IsTokenChar)) {
        return Bad(spec, value, "a word of letters, digits and _ . : , + -");
      }
      return absl::OkStatus();
    case ParamType::kFlag:
      if (value != "true" && value != "false") return Bad(spec, value, "true or false");
      return absl::OkStatus();
  }
  return absl::InternalError("unknown parameter type");
}

absl::StatusOr<std::vector<std::string>> BuildSuiteArgs(
    const SuiteInfo& suite, const std::map<std::string, std::string>& params,
    bool check_across) {
  std::vector<std::string> args;
  for (const auto& [name, value] : params) {  // std::map: sorted by name
    // Through a plain reference: clang before 16 cannot capture a structured
    // binding (the fuzz build uses clang 14).
    const std::string& wanted = name;
    auto it = std::find_if(suite.params.begin(), suite.params.end(),
                           [&](const ParamSpec& p) { return p.name == wanted; });
    if (it == suite.params.end()) {
      std::vector<std::string> known;
      for (const auto& p : suite.params) known.push_back(p.name);
      return absl::InvalidArgumentError(
          absl::StrCat("suite '", suite.name, "' has no parameter '", name, "' (known: ",
                       known.empty() ? "none" : absl::StrJoin(known, ", "), ")"));
    }
    if (auto s = ValidateParam(*it, value); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("suite '", suite.name, "': ", s.message()));
    }
    if (it->type == ParamType::kFlag) {
      if (value == "true") args.push_back(absl::StrCat("--", name));
    } else {
      args.push_back(absl::StrCat("--", name, "=", value));
    }
  }
  if (check_across && suite.check) CMAX_RETURN_IF_ERROR(suite.check(params));
  return args;
}

absl::Status ValidateSuiteArgs(const SuiteInfo& suite, const std::vector<std::string>& args) {
  std::set<std::string> seen;
  std::map<std::string, std::string> params;  // for suite.check
  for (const auto& arg : args) {
    if (!absl::StartsWith(arg, "--")) {
      return absl::InvalidArgumentError(absl::StrCat("argument '", arg, "' is not a --flag"));
    }
    std::string body = arg.substr(2);
    size_t eq = body.find('=');
    std::string name = body.substr(0, eq);
    auto it = std::find_if(suite.params.begin(), suite.params.end(),
                           [&](const ParamSpec& p) { return p.name == name; });
    if (it == suite.params.end()) {
      return absl::InvalidArgumentError(
          absl::StrCat("suite '", suite.name, "' does not accept --", name));
    }
    if (!seen.insert(name).second) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, " given twice"));
    }
    if (it->type == ParamType::kFlag) {
      if (eq != std::string::npos) {
        return absl::InvalidArgumentError(absl::StrCat("--", name, " takes no value"));
      }
      params[name] = "true";
      continue;
    }
    if (eq == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, " needs a value"));
    }
    if (auto s = ValidateParam(*it, body.substr(eq + 1)); !s.ok()) return s;
    params[name] = body.substr(eq + 1);
  }
  if (suite.check) CMAX_RETURN_IF_ERROR(suite.check(params));
  return absl::OkStatus();
}

absl::Status ValidateSuiteEnv(const std::string& name, const std::string& value) {
  // Tuning variables only. Sources: NCCL's environment variable documentation
  // (docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html).
  static const std::set<std::string> kAllowed = {
      "NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_P2P_DISABLE", "NCCL_P2P_LEVEL",
      "NCCL_SHM_DISABLE", "NCCL_IB_DISABLE", "NCCL_NET_GDR_LEVEL", "NCCL_NET_GDR_READ",
      "NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "NCCL_IB_TC", "NCCL_IB_SL", "NCCL_IB_QPS_PER_CONNECTION",
      "NCCL_IB_TIMEOUT", "NCCL_IB_RETRY_CNT", "NCCL_CROSS_NIC", "NCCL_SOCKET_IFNAME",
      "NCCL_SOCKET_FAMILY", "NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_NCHANNELS",
      "NCCL_MAX_NCHANNELS", "NCCL_NVLS_ENABLE", "NCCL_COLLNET_ENABLE", "NCCL_BUFFSIZE",
      "NCCL_NTHREADS", "NCCL_CUMEM_ENABLE", "NCCL_NVLINK_ENABLE",
      "CUDA_DEVICE_MAX_CONNECTIONS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS",
      "GLOO_SOCKET_IFNAME"};
  if (!kAllowed.count(name)) {
    return absl::InvalidArgumentError(
        absl::StrCat("environment variable '", name, "' is not allowed in a plan"));
  }
  if (value.size() > 256) {
    return absl::InvalidArgumentError(absl::StrCat("value of ", name, " is too long"));
  }
  for (char ch : value) {
    if (!(IsTokenChar(ch) || ch == '=' || ch == '^' || ch == '/')) {
      return absl::InvalidArgumentError(
          absl::StrCat("value of ", name, " has a character that is not allowed: '", std::string(1, ch), "'"));
    }
  }
  return absl::OkStatus();
}

bool IsMpirunOption(const std::string& name) { return absl::StartsWith(name, "mpirun-"); }

absl::Status ValidateMpirunOption(const std::string& name, const std::string& value) {
  auto bad = [&](const std::string& want) {
    return absl::InvalidArgumentError(absl::StrCat("parameter '", name, "': '",
                                                   value.substr(0, 64), "' is not ", want));
  };
  if (value.empty() || value.size() > 128) return bad("1 to 128 characters");
  if (name == kMpirunBindTo) {
    static const std::set<std::string> kBind = {"none", "core", "socket", "numa"};
    if (!kBind.count(value)) return bad("one of none, core, socket, numa");
    return absl::OkStatus();
  }
  if (name == kMpirunMapBy) {
    // Open MPI 4.1 mpirun(1), --map-by: an object, or ppr:N:object, then
    // modifiers after colons.
    static const std::set<std::string> kObjects = {"slot",     "hwthread", "core", "l1cache",
                                                   "l2cache",  "l3cache",  "socket", "numa",
                                                   "package",  "board",    "node"};
    static const std::set<std::string> kModifiers = {"SPAN", "OVERSUBSCRIBE", "NOOVERSUBSCRIBE",
                                                     "NOLOCAL", "DISPLAY"};
    std::vector<std::string> parts = absl::StrSplit(value, ':');
    size_t i = 0;
    auto small_number = [](const std::string& t) {
      int n = 0;
      return t.size() <= 4 && absl::SimpleAtoi(t, &n) && n >= 1 &&
             std::all_of(t.begin(), t.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
    };
    if (parts[0] == "ppr") {
      if (parts.size() < 3 || !small_number(parts[1]) || !kObjects.count(parts[2])) {
        return bad("ppr:N:OBJECT");
      }
      i = 3;
    } else {
      if (!kObjects.count(parts[0])) {
        return bad("a mapping (ppr:N:OBJECT or slot, hwthread, core, socket, numa, node...)");
      }
      i = 1;
    }
    for (; i < parts.size(); ++i) {
      const std::string& m = parts[i];
      if (kModifiers.count(m)) continue;
      if (absl::StartsWith(m, "PE=") && small_number(m.substr(3))) continue;
      return bad("a mapping with modifiers PE=N, SPAN, OVERSUBSCRIBE, NOOVERSUBSCRIBE, "
                 "NOLOCAL or DISPLAY");
    }
    return absl::OkStatus();
  }
  if (name == kMpirunIfInclude) {
    // Interface names (IFNAMSIZ: at most 15 characters) or IPv4 CIDRs,
    // comma-separated, as btl_tcp_if_include accepts them.
    for (absl::string_view item : absl::StrSplit(value, ',')) {
      if (item.empty() || item.size() > 18) return bad("interface names or CIDRs");
      size_t slash = item.find('/');
      if (slash != absl::string_view::npos) {
        std::vector<std::string> octets = absl::StrSplit(item.substr(0, slash), '.');
        int bits = 0;
        bool ok = octets.size() == 4 && absl::SimpleAtoi(item.substr(slash + 1), &bits) &&
                  bits >= 0 && bits <= 32;
        for (const auto& o : octets) {
          int v = 0;
          ok = ok && !o.empty() && o.size() <= 3 && absl::SimpleAtoi(o, &v) && v >= 0 && v <= 255;
        }
        if (!ok) return bad("interface names or IPv4 CIDRs (10.0.0.0/8)");
        continue;
      }
      if (item.size() > 15 || item[0] == '-') return bad("interface names (up to 15 characters)");
      for (char ch : item) {
        if (!(absl::ascii_isalnum(static_cast<unsigned char>(ch)) || ch == '_' || ch == '.' ||
              ch == '-')) {
          return bad("interface names of letters, digits and _ . -");
        }
      }
    }
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(absl::StrCat(
      "mpirun option '", name.substr(0, 64), "' is not allowed (allowed: ", kMpirunBindTo, ", ",
      kMpirunMapBy, ", ", kMpirunIfInclude, ")"));
}

absl::StatusOr<std::vector<std::string>> MpirunOptionArgs(
    const std::vector<std::string>& suite_args, std::vector<std::string>* rest) {
  std::vector<std::string> out;
  rest->clear();
  for (const std::string& arg : suite_args) {
    if (!absl::StartsWith(arg, "--mpirun-")) {
      rest->push_back(arg);
      continue;
    }
    size_t eq = arg.find('=');
    if (eq == std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat(arg.substr(0, 64), " needs a value"));
    }
    std::string name = arg.substr(2, eq - 2);
    std::string value = arg.substr(eq + 1);
    if (absl::Status s = ValidateMpirunOption(name, value); !s.ok()) return s;
    if (name == kMpirunBindTo) {
      out.insert(out.end(), {"--bind-to", value});
    } else if (name == kMpirunMapBy) {
      out.insert(out.end(), {"--map-by", value});
    } else {
      out.insert(out.end(), {"--mca", "btl_tcp_if_include", value, "--mca", "oob_tcp_if_include",
                             value});
    }
  }
  return out;
}

std::string ScopeName(v1::Scope scope) {
  switch (scope) {
    case SCOPE_NODE: return "node";
    case SCOPE_GANG: return "gang";
    case SCOPE_BARRIER: return "barrier";
    case SCOPE_PAIRS: return "pairs";
    default: return "unspecified";
  }
}

}  // namespace cmax
