#include "common/suite_declaration.h"

namespace cmax::suites::hostcheck {

using v1::SCOPE_NODE;

SuiteInfo Declaration() {
  return {
    .name = "hostcheck",
    .binary = "cmax-bench",
    .category = "reliability",
    .judge_category = "lifecycle",
    .help = "inventory and basic node sanity (GPUs on the bus, driver, memory, swap, disk, clock, GPU-NIC topology)",
    .details =
        "Inventory and sanity of this node: NVIDIA GPUs on the PCI bus, the NVIDIA driver,\n"
        "CPUs (count, model, sockets), memory, NUMA nodes (with CPUs, memory-only, and\n"
        "whether the CPU nodes are balanced), swap, free space on /, clock\n"
        "synchronisation, and the GPU-NIC\n"
        "topology: each GPU's PCIe path, the RDMA NICs (port rate, PCIe link), which NIC\n"
        "shares a PCIe switch with which GPU, ACS redirect on the bridges between them\n"
        "(needs root to read config space) and the IOMMU mode. Reads everything\n"
        "under --root (default /), so it also runs on a copied or fixture tree.\n"
        "--inventory prints one cmax.v1.Inventory JSON line instead of checking (with\n"
        "the fact gpu_nic_map, e.g. 0000:18:00.0=mlx5_0,..., where RDMA NICs exist, and\n"
        "nvlink_domain / nvlink_clique, the GPUs' NVLink cluster UUID and clique ids from\n"
        "NVML's fabric query, on nodes with NVIDIA GPUs and no NVSwitch on the bus, such as\n"
        "GB200 / GB300 NVL72 trays, whose GPUs report a multi-node NVLink domain).\n"
        "GPUs on the PCI bus are checked against the plan's count. A GPU whose PCIe switch has\n"
        "no NIC where others have one warns, as does a NIC whose port rate or PCIe width or speed\n"
        "is below its peers'; ACS ReqRedir/CmpltRedir on a bridge between a GPU and its NIC\n"
        "fails (not measured without root); the IOMMU translating DMA with RDMA NICs present\n"
        "warns. With RDMA NICs, GPUDirect RDMA passes with the driver's open kernel module\n"
        "(dma_buf) and warns with the proprietary one, with or without nvidia_peermem, and\n"
        "GDRCopy's gdrdrv module not loaded warns.\n"
        "Profiling for users warns when kernel.perf_event_paranoid is above 2 or the driver\n"
        "has RestrictProfilingToAdminUsers: 1 (no GPU counters for Nsight Compute).",
    .scopes = {SCOPE_NODE},
    .default_timeout_s = 120,
    .exclusive = false,
    .takes_root = true,
    .params =
        {
            {.name = "expect-gpus", .type = ParamType::kInt, .help = "GPUs expected; fewer fail the node",
             .min = 0, .max = 1024},
            {.name = "expect-gpu-model", .type = ParamType::kToken,
             .help = "text every GPU's model must contain (case, spaces and dashes ignored)"},
            {.name = "min-cpu-cores", .type = ParamType::kInt, .help = "minimum logical CPUs online",
             .min = 0, .max = 1 << 20},
            {.name = "min-memory-gib", .type = ParamType::kNumber,
             .help = "minimum MemTotal in GiB", .min = 0, .max = 1 << 30},
            {.name = "min-free-root-pct", .type = ParamType::kNumber,
             .help = "warn below this free percentage of / (default 10; below 2 fails)", .min = 0, .max = 100},
        },
    // The agent runs `cmax-bench hostcheck --inventory` for its Hello.
    .metrics =
        {
            {.name = "gpu_count", .unit = "count", .better = MetricBetter::kNeither,
             .help = "GPUs found on the PCI bus"},
            {.name = "gpu_present", .unit = "count", .better = MetricBetter::kNeither,
             .help = "one per GPU found (labels: gpu, PCI bus id, model, device id; host_link "
                     "pcie, nvlink_c2c or not_pcie, and pcie_link), always 1"},
            {.name = "cpu_cores", .unit = "count", .better = MetricBetter::kNeither,
             .help = "CPU cores (label model: the CPU model, also on arm64 hosts such as Grace)"},
            {.name = "cpu_sockets", .unit = "count", .better = MetricBetter::kNeither,
             .help = "CPU sockets: distinct physical package ids in sysfs"},
            {.name = "memory_total_gib", .unit = "GiB", .better = MetricBetter::kNeither,
             .help = "installed memory"},
            {.name = "memory_cpu_nodes_gib", .unit = "GiB", .better = MetricBetter::kNeither,
             .help = "memory of the NUMA nodes with CPUs, where memory-only nodes (a Grace "
                     "host's GPU HBM) are counted in MemTotal"},
            {.name = "numa_nodes", .unit = "count", .better = MetricBetter::kNeither,
             .help = "NUMA nodes"},
            {.name = "numa_nodes_cpu", .unit = "count", .better = MetricBetter::kNeither,
             .help = "NUMA nodes with CPUs"},
            {.name = "numa_nodes_memory_only", .unit = "count", .better = MetricBetter::kNeither,
             .help = "NUMA nodes with memory and no CPUs (device memory, e.g. GPU HBM on "
                     "NVLink-C2C)"},
            {.name = "swap_total_gib", .unit = "GiB", .better = MetricBetter::kNeither,
             .help = "swap space"},
            {.name = "root_free_pct", .unit = "%", .better = MetricBetter::kHigher,
             .help = "free space of a file system (label path)"},
            {.name = "gpu_pcie_path", .unit = "bridges", .better = MetricBetter::kNeither,
             .help = "PCIe bridges between the GPU and its root port"},
            {.name = "gpu_nic_map", .unit = "shared switch", .better = MetricBetter::kNeither,
             .help = "1 when the GPU and its nearest NIC share a PCIe switch"},
        },
    .inventory = true,
  };
}

}  // namespace cmax::suites::hostcheck
