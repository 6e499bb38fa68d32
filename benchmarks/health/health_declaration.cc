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
        "kernel log readable).\n"
        "The scorecard groups the NVLink domains by rack. More: benchmarks/health/README.md.",
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
    .metrics =
        {
            {.name = "gpu_count", .unit = "count", .better = MetricBetter::kNeither,
             .help = "GPUs the driver reports"},
            {.name = "gpu_pci_count", .unit = "count", .better = MetricBetter::kNeither,
             .help = "NVIDIA GPUs on the PCI bus"},
            {.name = "gpu_recovery_action", .unit = "enum", .better = MetricBetter::kLower,
             .help = "the driver's recovery action for the GPU (NVML; 0 none)"},
            {.name = "gpu_throttle_reasons", .unit = "bitmask", .better = MetricBetter::kNeither,
             .help = "NVML clock event reasons now"},
            {.name = "gpu_ecc_volatile_sbe", .unit = "count", .better = MetricBetter::kLower,
             .help = "single-bit ECC errors since the driver loaded"},
            {.name = "gpu_ecc_volatile_dbe", .unit = "count", .better = MetricBetter::kLower,
             .help = "double-bit ECC errors since the driver loaded"},
            {.name = "gpu_ecc_aggregate_sbe", .unit = "count", .better = MetricBetter::kLower,
             .help = "single-bit ECC errors over the GPU's life"},
            {.name = "gpu_ecc_aggregate_dbe", .unit = "count", .better = MetricBetter::kLower,
             .help = "double-bit ECC errors over the GPU's life"},
            {.name = "gpu_retired_pages_sbe", .unit = "count", .better = MetricBetter::kLower,
             .help = "pages retired for single-bit errors"},
            {.name = "gpu_retired_pages_dbe", .unit = "count", .better = MetricBetter::kLower,
             .help = "pages retired for double-bit errors"},
            {.name = "gpu_remapped_rows_correctable", .unit = "count", .better = MetricBetter::kLower,
             .help = "memory rows remapped for correctable errors"},
            {.name = "gpu_remapped_rows_uncorrectable", .unit = "count", .better = MetricBetter::kLower,
             .help = "memory rows remapped for uncorrectable errors"},
            {.name = "gpu_pcie_link_width", .unit = "lanes", .better = MetricBetter::kHigher,
             .help = "the GPU's current PCIe link width"},
            {.name = "gpu_pcie_replay_count", .unit = "count", .better = MetricBetter::kLower,
             .help = "PCIe replays of the GPU's link"},
            {.name = "gpu_temperature_c", .unit = "C", .better = MetricBetter::kLower,
             .help = "GPU temperature now"},
            {.name = "gpu_violation_power_ns", .unit = "ns", .better = MetricBetter::kLower,
             .help = "time the GPU was held back by power (NVML violation counter)"},
            {.name = "gpu_violation_thermal_ns", .unit = "ns", .better = MetricBetter::kLower,
             .help = "time the GPU was held back by heat (NVML violation counter)"},
            {.name = "gpu_compute_processes", .unit = "count", .better = MetricBetter::kNeither,
             .help = "compute processes running on the GPU"},
            {.name = "nvlink_links_active", .unit = "count", .better = MetricBetter::kHigher,
             .help = "the GPU's active NVLinks"},
            {.name = "nvlink_links_down", .unit = "count", .better = MetricBetter::kLower,
             .help = "the GPU's NVLinks that are down"},
            {.name = "nvlink_links_expected", .unit = "count", .better = MetricBetter::kNeither,
             .help = "NVLinks the GPU's model has"},
            {.name = "nvlink_link_speed_min", .unit = "GB/s", .better = MetricBetter::kHigher,
             .help = "the slowest active NVLink's speed"},
            {.name = "nvlink_replay_errors", .unit = "count", .better = MetricBetter::kLower,
             .help = "NVLink replay errors, summed over the GPU's links"},
            {.name = "nvlink_recovery_errors", .unit = "count", .better = MetricBetter::kLower,
             .help = "NVLink recovery errors, summed over the GPU's links"},
            {.name = "nvlink_crc_flit_errors", .unit = "count", .better = MetricBetter::kLower,
             .help = "NVLink flit CRC errors, summed over the GPU's links"},
            {.name = "nvlink_crc_data_errors", .unit = "count", .better = MetricBetter::kLower,
             .help = "NVLink data CRC errors, summed over the GPU's links"},
            {.name = "nvlink_effective_errors", .unit = "count", .better = MetricBetter::kLower,
             .help = "NVLink effective errors, summed over the GPU's links"},
            {.name = "nvswitch_count", .unit = "count", .better = MetricBetter::kNeither,
             .help = "NVSwitches on the PCI bus"},
            {.name = "fabric_manager_running", .unit = "bool", .better = MetricBetter::kHigher,
             .help = "1 when nv-fabricmanager runs"},
            {.name = "imex_running", .unit = "bool", .better = MetricBetter::kHigher,
             .help = "1 when the IMEX daemon runs"},
            {.name = "imex_domain_nodes", .unit = "count", .better = MetricBetter::kNeither,
             .help = "nodes in the IMEX domain"},
            {.name = "nvlink_fabric", .unit = "bool", .better = MetricBetter::kHigher,
             .help = "1 when the GPU is registered with the NVLink fabric"},
            {.name = "ib_port_count", .unit = "count", .better = MetricBetter::kNeither,
             .help = "InfiniBand ports found"},
            {.name = "ib_port_active", .unit = "bool", .better = MetricBetter::kHigher,
             .help = "1 when the port is active and its link up"},
            {.name = "ib_port_rate_gbps", .unit = "Gb/s", .better = MetricBetter::kHigher,
             .help = "the port's link rate"},
            {.name = "ib_counter", .unit = "count", .better = MetricBetter::kLower,
             .help = "one InfiniBand port counter (label counter)"},
            {.name = "xid_events_total", .unit = "count", .better = MetricBetter::kLower,
             .help = "Xid events in the kernel log"},
            {.name = "sxid_events_total", .unit = "count", .better = MetricBetter::kLower,
             .help = "NVSwitch SXid events in the kernel log"},
            {.name = "xid_count", .unit = "count", .better = MetricBetter::kLower,
             .help = "Xid events of one code on one GPU"},
            {.name = "sxid_count", .unit = "count", .better = MetricBetter::kLower,
             .help = "SXid events of one code on one NVSwitch"},
        },
  };
}

}  // namespace cmax::suites::health
