// Collectives (benchmarks/collective, benchmarks/collective/cuda/collective_nccl.cc):
// nccl-tests' flags in their long forms (-b/-e/-f/-n/-w/-c/-d are the same
// options); --backend picks the binary. expect-gdr applies to nccl only.
#include "common/suite_declaration.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "benchmarks/collective/busbw_floor_keys.h"

namespace cmax::suites::collective {

using v1::SCOPE_GANG;
using v1::SCOPE_NODE;
using v1::SCOPE_PAIRS;

namespace {

// "busbw:<plan entry> (<op>)": bus bandwidth against message size, a line
// per run (its nodes, dtype, in-place), against the plan's floor for the op
// (the collective judge's keys, most specific first). Soaks are not drawn.
bool BusbwChart(const v1::Measurement& m, const std::string& node,
                const std::string& entry, ChartNames* out) {
  if (ChartLabel(m, "soak") == "true") return false;
  const std::string op = ChartLabel(m, "op");
  const std::string nodes = ChartLabel(m, "nodes");
  out->id = absl::StrCat("busbw:", entry, " (", op, ")");
  out->title = absl::StrCat("Bus bandwidth ", op, " (", entry, ")");
  out->line = absl::StrCat(nodes.empty() ? node : nodes, " ", ChartLabel(m, "dtype"),
                           ChartLabel(m, "placement") == "in" ? " in-place" : "");
  const std::vector<absl::string_view> node_list =
      absl::StrSplit(nodes, ',', absl::SkipWhitespace());
  out->floor_keys = BusbwFloorKeys(op, node_list.size() <= 1);
  return true;
}

}  // namespace

SuiteInfo Declaration() {
  return {
    .name = "collective",
    .category = "networking",
    .help = "collectives timed and verified like nccl-tests: NCCL per GPU (with the transport "
            "NCCL used), gloo or Open MPI on the host",
    .details =
        "Host collectives timed and verified like nccl-tests: gloo (TCP, under the agents\n"
        "launcher; its store is the group's rendezvous) or mpi (Open MPI, under mpirun).\n"
        "Every element of every rank's output is checked; a wrong element fails the run\n"
        "(exit 1).\n"
        "  --backend gloo|mpi\n"
        "Flags as nccl-tests: -b -e -f -n -w -c -d, and --op NAME|list|all.\n"
        "--soak SECONDS runs one op at one size (-b = -e) for that long, busbw per\n"
        "--interval (default 10 s), and a rank with no completed iteration for --stall\n"
        "seconds (default 60) reports the stall and exits 1.\n"
        "gloo listens on $GLOO_SOCKET_IFNAME when set, else --gloo-address, else the host\n"
        "name.",
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
             .help = "inter-node traffic must use GPUDirect RDMA (a finding fails otherwise)",
             .backends = {"nccl"}},
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
    .backends =
        {
            {.name = "nccl", .binary = "cmax-bench-cuda",
             .summary = "NCCL collectives like nccl-tests, verified; transport check",
             .details =
                 "NCCL collectives, one rank per GPU, timed and verified like nccl-tests. A rank\n"
                 "of a group task (CMAX_RENDEZVOUS) drives the GPU of its local rank; run by\n"
                 "hand, one thread per GPU of --gpus. NCCL's INFO log goes to\n"
                 "$CMAX_TASK_DIR/nccl-debug.<host>.<pid>.log and is checked for the transport,\n"
                 "GPUDirect RDMA and NVLS. NCCL (libnccl.so.2) is loaded from the node at\n"
                 "start-up (cmax-bench-cuda --help says where it looks); without it the suite is\n"
                 "not measured (exit 2). Communicators are created non-blocking and a rank that\n"
                 "does not join within --timeout is reported by rank. --soak SECONDS runs one op\n"
                 "at one size (-b = -e) for that long, busbw per --interval, and a rank with no\n"
                 "completed iteration for --stall seconds reports the stall and exits 1."},
            // gloo and mpi: cmax-bench, with the suite's details.
            {.name = "gloo", .binary = "cmax-bench", .summary = "host collectives (gloo, mpi)"},
            {.name = "mpi", .binary = "cmax-bench", .summary = "host collectives (gloo, mpi)"},
        },
    // busbw_gbps is not compared across the fleet here: benchmarks/collective/collective_judge.cc
    // judges it (largest size per run, pairs), since a pair's record sits on
    // its rank-0 node, which is not the one to blame.
    .metrics =
        {
            {.name = "busbw_gbps", .unit = "GB/s",
             .help = "bus bandwidth as nccl-tests computes it, per op and size",
             .chart = {.kind = ChartKind::kBySize, .names = BusbwChart,
                       .labels = {"soak", "op", "nodes", "dtype", "placement", "size_bytes"},
                       .family = "Bus bandwidth against message size",
                       .reference = ChartReference::kPlanFloor, .x_key = "size_bytes",
                       .x_label = "message size (bytes)"}},
            {.name = "algbw_gbps", .unit = "GB/s", .help = "algorithm bandwidth per op and size"},
            // Every other metric the suite writes (the declarations test reads them all).
            {.name = "time_us", .unit = "us", .better = MetricBetter::kLower,
             .help = "mean time of one operation at this size (nccl-tests' time)"},
            {.name = "avg_busbw_gbps", .unit = "GB/s", .better = MetricBetter::kHigher,
             .help = "soak: the average bus bandwidth over its results (nccl-tests' \"Avg bus bandwidth\"), rank 0"},
            {.name = "nccl_channels", .unit = "count", .better = MetricBetter::kNeither,
             .help = "nccl backend: channels NCCL set up (its INFO log)"},
            {.name = "nccl_net_connections", .unit = "count", .better = MetricBetter::kNeither,
             .help = "nccl backend: connections over a network transport (its INFO log)"},
            {.name = "nccl_gdr_connections", .unit = "count", .better = MetricBetter::kNeither,
             .help = "nccl backend: network connections with GPUDirect RDMA (its INFO log)"},
            {.name = "nccl_nvls_channels", .unit = "count", .better = MetricBetter::kNeither,
             .help = "nccl backend: NVLink SHARP channels (its INFO log)"},
        },
  };
}

}  // namespace cmax::suites::collective
