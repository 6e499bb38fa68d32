// Full-mesh TCP reachability, round-trip time and a short transfer between
// every pair of ranks of a gang (benchmarks/connectivity), one rank per node
// by default; judged by benchmarks/connectivity/connectivity_judge.cc.
#include "common/suite_declaration.h"

namespace cmax::suites::connectivity {

using v1::SCOPE_GANG;

namespace {

// "connectivity:rtt": round-trip time from each source to each destination.
bool RttChart(const v1::Measurement&, const std::string&, const std::string&,
              ChartNames* out) {
  out->id = "connectivity:rtt";
  out->title = "Connectivity: round-trip time, source (row) to destination (column)";
  return true;
}

}  // namespace

SuiteInfo Declaration() {
  return {
    .name = "connectivity",
    .binary = "cmax-bench",
    .category = "networking",
    .help = "full-mesh TCP reachability, round-trip time and transfer rate between nodes",
    .details =
        "Full-mesh TCP reachability, RTT and transfer rate between the ranks of a\n"
        "gang (cmax runs it with scope gang, one rank per node). It needs the\n"
        "group's rendezvous (CMAX_RENDEZVOUS, set by the agent): run alone it\n"
        "exits 2.",
    .scopes = {SCOPE_GANG},
    // Between ranks: a gang of one rank has no pair to measure.
    .min_ranks = 2,
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
    // rtt_ms is judged per node pair by benchmarks/connectivity/connectivity_judge.cc, which
    // blames the node behind the slow pairs rather than the pair's source.
    .metrics =
        {
            // Practically slow beyond the fence: at least 2x the fleet's
            // median (a relative excess of 1.0; the judge also asks 0.1 ms
            // above it). A TCP round trip inside a rack is some 20-60 us;
            // 30 us more is scheduling noise.
            {.name = "rtt_ms", .unit = "ms", .better = MetricBetter::kLower,
             .fleet_min_margin = 1.0, .help = "TCP round-trip time between two ranks",
             .chart = {.kind = ChartKind::kMatrix, .names = RttChart, .labels = {"src", "dst"},
                       .family = "Connectivity matrix", .reachable_metric = "reachable",
                       .many_title = "Connectivity: median round-trip time from each node"}},
            {.name = "reachable", .unit = "bool",
             .help = "1 when a rank reached the other, 0 when it could not"},
            // Every other metric the suite writes (the declarations test reads them all).
            {.name = "transfer_mbps", .unit = "Mbit/s", .better = MetricBetter::kHigher,
             .help = "TCP transfer rate to the peer"},
        },
  };
}

}  // namespace cmax::suites::connectivity
