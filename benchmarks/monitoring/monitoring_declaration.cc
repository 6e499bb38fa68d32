// Exporters on the node and the signals they export (ClusterMAX's Monitoring).
#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/allowed_files.h"
#include "common/suite_declaration.h"

namespace cmax::suites::monitoring {

using v1::SCOPE_NODE;

namespace {

// The loopback ports a plan may name without anyone's leave: the exporters'
// own defaults. 9400: dcgm-exporter's --address default ":9400"
// (github.com/NVIDIA/dcgm-exporter, README "Quickstart" and
// pkg/cmd/app.go). 9100: node_exporter's --web.listen-address default
// ":9100" (github.com/prometheus/node_exporter, README; Debian's
// prometheus-node-exporter keeps it). 9464: cmax's own /metrics as this
// suite and docs/monitoring.md name it. Others answering on a node's
// loopback are that node's business: a plan naming any port would learn
// which of them answer on every node (issue 45 item 7).
const std::set<int>& KnownPorts() {
  static const std::set<int> ports = {9100, 9400, 9464};
  return ports;
}

// Ports the operator of this process allows beyond KnownPorts():
// $CMAX_EXPORTER_PORTS, comma-separated (the agent sets it from
// --allow-exporter-ports and passes it to the suite; the coordinator reads
// its own environment). A malformed list allows nothing more.
std::set<int> OperatorPorts() {
  std::set<int> ports;
  const char* env = std::getenv(kExporterPortsEnv);
  if (env == nullptr) return ports;
  for (absl::string_view item : absl::StrSplit(env, ',', absl::SkipWhitespace())) {
    int port = 0;
    if (!absl::SimpleAtoi(item, &port) || port < 1 || port > 65535) return {};
    ports.insert(port);
  }
  return ports;
}

absl::Status CheckExporterPorts(const std::map<std::string, std::string>& params) {
  auto it = params.find("exporters");
  if (it == params.end()) return absl::OkStatus();
  const std::set<int> extra = OperatorPorts();
  for (absl::string_view item : absl::StrSplit(it->second, ',', absl::SkipEmpty())) {
    std::vector<absl::string_view> parts = absl::StrSplit(item, ':');
    int port = 0;
    if (parts.size() != 2 || !absl::SimpleAtoi(parts[1], &port)) continue;  // the suite says
    if (KnownPorts().count(port) || extra.count(port)) continue;
    std::vector<int> allowed(KnownPorts().begin(), KnownPorts().end());
    allowed.insert(allowed.end(), extra.begin(), extra.end());
    return absl::InvalidArgumentError(absl::StrCat(
        "exporters: port ", port, " ('", item, "') is not an exporter port this node allows (",
        absl::StrJoin(allowed, ","), "); its operator can allow more with cmax-agent "
        "--allow-exporter-ports (", kExporterPortsEnv, "), and the coordinator's with ",
        kExporterPortsEnv, " in its environment"));
  }
  return absl::OkStatus();
}

}  // namespace

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
                     "dcgm:9400,node:9100; ports 9100, 9400 and 9464 only, unless "
                     "$CMAX_EXPORTER_PORTS (cmax-agent --allow-exporter-ports) allows more"},
        },
    .check = CheckExporterPorts,
  };
}

}  // namespace cmax::suites::monitoring
