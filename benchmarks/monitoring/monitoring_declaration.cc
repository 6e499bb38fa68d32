// Exporters on the node and the signals they export (ClusterMAX's Monitoring).
#include "common/suite_declaration.h"

namespace cmax::suites::monitoring {

using v1::SCOPE_NODE;

SuiteInfo Declaration() {
  return {
    .name = "monitoring",
    .binary = "cmax-bench",
    .category = "monitoring",
    .help = "exporters answering on the node's loopback, the health signals they export, the "
            "kernel log kept, the cmax Slurm health check wired",
    .details =
        "Scrapes each exporter at http://127.0.0.1:PORT/metrics (--exporters, default\n"
        "dcgm:9400,node:9100; cmax's own /metrics when its port is named, e.g. cmax:9464) and\n"
        "checks that the signals ClusterMAX's health checks need are exported, naming each\n"
        "missing one: from the DCGM exporter Xid errors, ECC double-bit errors, row remapping,\n"
        "PCIe replays, NVLink error counters, temperature, power and throttle reasons; from\n"
        "node_exporter the InfiniBand error counters where RDMA devices exist. An exporter\n"
        "that does not answer fails (DCGM on a GPU node) or warns, and its signals are not\n"
        "measured. Under --root (default /): the kernel log kept (journald Storage=persistent,\n"
        "or /var/log/journal with Storage=auto) or shipped (rsyslog forwarding, fluent-bit,\n"
        "vector, promtail, alloy), and slurm.conf's HealthCheckProgram being cmax's.\n"
        "Only 127.0.0.1 is scraped; nothing is written.",
    .scopes = {SCOPE_NODE},
    .default_timeout_s = 60,
    .exclusive = false,
    .takes_root = true,
    .params =
        {
            {.name = "exporters", .type = ParamType::kToken,
             .help = "comma-separated NAME:PORT exporters on 127.0.0.1 (dcgm and node have "
                     "signal lists; others are checked for answering), default "
                     "dcgm:9400,node:9100"},
        },
  };
}

}  // namespace cmax::suites::monitoring
