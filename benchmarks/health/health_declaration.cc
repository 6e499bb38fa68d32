// Passive health (benchmarks/health): NVML, kernel log Xids, InfiniBand.
#include "common/suite_declaration.h"

namespace cmax::suites::health {

using v1::SCOPE_NODE;

SuiteInfo Declaration() {
  return {
    .name = "health",
    .binary = "cmax-bench",
    .category = "reliability",
    .help = "passive health: GPUs through NVML, Xid/SXid in the kernel log, InfiniBand/RoCE ports",
    .details =
        "Passive node health, one shot: GPUs through NVML (ECC, row remapping, PCIe, throttling,\n"
        "temperature, persistence, MIG, other processes, the driver's recovery action, NVLink\n"
        "state and error counters, link count and speed against the platform), the Fabric Manager\n"
        "and fabric registration where NVSwitches are present, each GPU's NVLink domain (cluster\n"
        "UUID, clique id) and fabric health mask, the IMEX service (nvidia-imex and\n"
        "/etc/nvidia-imex/nodes_config.cfg) on multi-node NVLink trays, NVIDIA Xid/SXid events in the kernel log since boot (/dev/kmsg, else the\n"
        "journal), InfiniBand/RoCE port state, rate and error counters. Thresholds: the compiled-in\n"
        "defaults, then --thresholds, then --set. Findings carry a suggested action. An unreadable\n"
        "kernel log or a missing NVML library is reported as not measured, never as healthy.\n"
        "Exit: 0 no failures, 1 a fail or critical finding, 2 nothing could be measured (a\n"
        "root with no sys, proc, dev or cmax-fixture; GPUs on the bus with neither NVML nor the\n"
        "kernel log readable).",
    .scopes = {SCOPE_NODE},
    .default_timeout_s = 300,
    .exclusive = false,
    .takes_root = true,
    .params =
        {
            {.name = "expect-gpus", .type = ParamType::kInt, .help = "GPUs expected on this node",
             .min = 0, .max = 1024},
            {.name = "expect-ib-rate", .type = ParamType::kNumber,
             .help = "expected rate of every RDMA port in Gb/s", .min = 0, .max = 1e5},
            {.name = "thresholds", .type = ParamType::kPath,
             .help = "YAML file overriding thresholds (absolute path, at most 1 MiB; run by the agent: under its --allow-read directories and world-readable)",
             .path_use = ParamSpec::PathUse::kReadsFile},
            {.name = "set", .type = ParamType::kToken,
             .help = "threshold overrides after --thresholds, e.g. gpu.pcie_replay_warn:50,nvlink.crc_flit_warn:500 (keys of data/thresholds.yaml)"},
        },
  };
}

}  // namespace cmax::suites::health
