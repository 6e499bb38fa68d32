// Is the node's scheduler set up for GPU jobs (ClusterMAX's Orchestration).
#include "common/suite_declaration.h"

namespace cmax::suites::orchestration {

using v1::SCOPE_NODE;

SuiteInfo Declaration() {
  return {
    .name = "orchestration",
    .binary = "cmax-bench",
    .category = "orchestration",
    .help = "Slurm or Kubernetes set up for whole, isolated, topology-aware GPUs with health "
            "checks wired in (read-only)",
    .details =
        "Reads the node's scheduler configuration under --root (default /), read-only.\n"
        "Slurm (slurm.conf in /etc/slurm, /etc/slurm-llnl or slurmd's configless cache, and\n"
        "cgroup.conf, gres.conf, topology.conf, plugstack.conf beside it; on the real root\n"
        "also `scontrol show config` and `scontrol show node`): GPUs in gres.conf and\n"
        "slurm.conf against the GPUs on the PCI bus (or AutoDetect=nvml), ConstrainDevices=yes\n"
        "(otherwise also a Security fail), TaskPlugin task/cgroup and task/affinity,\n"
        "SelectType select/cons_tres, HealthCheckProgram and its interval (and whether it is\n"
        "cmax's), job accounting for sacct (AccountingStorageType slurmdbd), TopologyPlugin\n"
        "topology/tree or topology/block placing this node, pyxis and\n"
        "enroot (info), the node's state in Slurm; with --step a one-step job through srun\n"
        "(cmax-bench orchestration --step-probe inside it) that must see exactly the one GPU\n"
        "it asked for (all CPUs with --exclusive) and the cores of that GPU's NUMA node.\n"
        "Kubernetes (/var/lib/kubelet/config.yaml, /var/lib/kubelet/device-plugins): the\n"
        "NVIDIA device plugin (or GPU Operator), CDI specs (info), topologyManagerPolicy\n"
        "single-numa-node or restricted, cpuManagerPolicy static, an RDMA device plugin\n"
        "where RDMA devices exist.\n"
        "Neither found fails a managed cluster; with --managed=false (bare metal) it is not\n"
        "measured. Every finding names the file and line (or command output line) it read\n"
        "and what to set where. An input that cannot be read is not measured, never a pass.",
    .scopes = {SCOPE_NODE},
    .default_timeout_s = 60,
    .exclusive = false,
    .takes_root = true,
    .params =
        {
            {.name = "managed", .type = ParamType::kEnum,
             .help = "true (default): a managed cluster, no scheduler fails; false: bare metal, "
                     "not measured",
             .choices = {"true", "false"}},
            {.name = "scheduler", .type = ParamType::kEnum,
             .help = "auto (default): whatever is found; slurm or kubernetes: only that one",
             .choices = {"auto", "slurm", "kubernetes"}},
            {.name = "step", .type = ParamType::kFlag,
             .help = "also run a one-step Slurm job on this node (srun -N1 -w NODE --exclusive, "
                     "--gres=gpu:1 on a GPU node) that must see exactly the GPUs it asked for "
                     "and the CPU cores of their NUMA node (real root only)"},
        },
    .metrics =
        {
            {.name = "slurm_block", .unit = "count", .better = MetricBetter::kNeither,
             .help = "the node's topology/block block in topology.conf (labels block, source "
                     "file:line), always 1; compared with the NVLink domains health reads"},
        },
  };
}

}  // namespace cmax::suites::orchestration
