// The history queries the coordinator answers (core_history.cc), on a store
// connection of the caller's: kept apart so that the scale benchmark
// (benchmarks/history_scale) measures the very path the coordinator takes.
#ifndef CMAX_COORDINATOR_HISTORY_QUERIES_H_
#define CMAX_COORDINATOR_HISTORY_QUERIES_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cmax/v1/history.pb.h"
#include "coordinator/store.h"

namespace cmax::coordinator {

// Stores a finished run's per-node summaries.
absl::Status PutRunHistory(Store& store, const std::string& run_id,
                           const std::vector<v1::NodeRunSummary>& summaries, int64_t now_unix_ns);

// One node's history (`cmaxctl history NODE`, /nodes/NAME); NOT_FOUND when
// no stored run has the node.
absl::StatusOr<v1::NodeHistory> QueryNodeHistory(Store& store, const std::string& node);

// The fleet's reliability (`cmaxctl history`, /fleet, the scorecard's
// history evidence). `stop` (may be empty) is asked per batch of rows read
// and per node; CANCELLED once it says true.
absl::StatusOr<v1::ReliabilitySummary> QueryFleetReliability(
    Store& store, const std::function<bool()>& stop = {});

}  // namespace cmax::coordinator

#endif  // CMAX_COORDINATOR_HISTORY_QUERIES_H_
