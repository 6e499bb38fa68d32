// A simulated fleet's node history (issue 30 item 4; docs/history.md): W
// weekly runs of N nodes' summaries, generated, every summary labelled
// simulated. Used by cmax-history-scale (benchmarks/history_scale) and by
// the tests that need a store with a large history (tests/integration/
// history_flood_test.cc).
#ifndef CMAX_BENCHMARKS_HISTORY_SCALE_HISTORY_SIM_H_
#define CMAX_BENCHMARKS_HISTORY_SCALE_HISTORY_SIM_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cmax/v1/history.pb.h"

namespace cmax::history_sim {

struct Fleet {
  int nodes = 0;
  int weeks = 0;
  int64_t start_ns = 1767571200ll * 1000000000;  // 2026-01-05, a Monday
};

// "sim-node-00042"; "r20260105-000000-0007".
std::string NodeName(int i);
std::string RunId(int week);

// One vector per week, oldest first, each with every node's summary. A node
// fails with probability 1/200 a week; a failed node is rejected by the runs
// of 1 to 3 weeks, then accepted; 1 run in 50 does not measure a node (its
// agent was away). Deterministic (a fixed seed).
std::vector<std::vector<v1::NodeRunSummary>> Generate(const Fleet& fleet);

// Generates the fleet and stores it, week by week as the coordinator does
// (PutRunHistory), into the store at `db_path` (created when absent).
absl::Status FillStore(const std::string& db_path, const Fleet& fleet);

}  // namespace cmax::history_sim

#endif  // CMAX_BENCHMARKS_HISTORY_SCALE_HISTORY_SIM_H_
