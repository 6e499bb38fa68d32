// cmax-bench monitoring: which exporters answer on the node's loopback and
// whether they export the signals ClusterMAX's health checks need; the
// kernel log kept or shipped; cmax's Slurm health check wired. Read-only.
#ifndef CMAX_BENCHMARKS_MONITORING_MONITORING_H_
#define CMAX_BENCHMARKS_MONITORING_MONITORING_H_

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/orchestration/orchestration.h"

namespace cmax::monitoring {

using orchestration::Check;
using orchestration::Status;

struct Exporter {
  std::string name;  // "dcgm", "node", "cmax", or a plan's own name
  int port = 0;
};

// "dcgm:9400,node:9100" -> exporters; INVALID_ARGUMENT naming the bad item.
absl::StatusOr<std::vector<Exporter>> ParseExporters(const std::string& text);

// The metric names of a Prometheus text exposition (version 0.0.4): each
// sample line's name up to '{' or a space; comments and blank lines skipped.
std::set<std::string> MetricNames(const std::string& text);

// One signal a health check needs and the metric names that carry it (any
// one is enough). Sources in monitoring.cc.
struct Signal {
  std::string name;                  // "xid", "ecc_dbe", ...
  std::string what;                  // "Xid errors"
  std::vector<std::string> metrics;  // exact names
  std::string prefix;                // or any name starting with this ("node_infiniband_")
  std::string contains;              // ... and containing this ("error")
};
const std::vector<Signal>& DcgmSignals();

// Fetches an exporter's text: GET http://127.0.0.1:PORT/metrics, or a file
// given with --scrape-file. Non-OK says why (connection refused, timeout,
// HTTP status).
using Scraper = std::function<absl::StatusOr<std::string>(const Exporter&)>;

// GET http://127.0.0.1:port/metrics with HTTP/1.0, at most 32 MiB, within
// `timeout_ms`. PERMISSION_DENIED for 401/403 (it answers, wants a token).
absl::StatusOr<std::string> ScrapeLoopback(int port, int timeout_ms);

struct Options {
  std::string root = "/";
  std::vector<Exporter> exporters;
  Scraper scrape;
};

std::vector<Check> RunChecks(const Options& options);

}  // namespace cmax::monitoring

#endif  // CMAX_BENCHMARKS_MONITORING_MONITORING_H_
