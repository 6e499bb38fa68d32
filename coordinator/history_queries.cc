#include "coordinator/history_queries.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "reports/history.h"

namespace cmax::coordinator {

absl::Status PutRunHistory(Store& store, const std::string& run_id,
                           const std::vector<v1::NodeRunSummary>& summaries, int64_t now_unix_ns) {
  std::vector<Store::FigureBandRow> rows;
  for (const auto& [figure, band] : reports::ComputeRunBands(summaries)) {
    rows.push_back({figure, band.p10, band.p90});
  }
  return store.PutRunSummaries(run_id, summaries, now_unix_ns, rows);
}

absl::StatusOr<v1::NodeHistory> QueryNodeHistory(Store& store, const std::string& node) {
  // The node's own rows (indexed by node), and the bands of its runs: at
  // 52 runs of 10,000 nodes this reads 52 rows and 52 runs' bands, not the
  // fleet's 520,000 rows (benchmarks/history_scale).
  CMAX_ASSIGN_OR_RETURN(std::vector<v1::NodeRunSummary> own, store.LoadNodeRunSummaries(node));
  if (own.empty()) {
    return absl::NotFoundError(
        absl::StrCat("no finished run of this coordinator has node ", node));
  }
  std::map<std::string, reports::RunBands> bands;
  for (const auto& s : own) {
    if (bands.count(s.run_id())) continue;
    CMAX_ASSIGN_OR_RETURN(std::vector<Store::FigureBandRow> rows, store.LoadRunBands(s.run_id()));
    reports::RunBands& b = bands[s.run_id()];
    if (rows.empty()) {
      // Summarised before bands were stored: from the run's rows.
      CMAX_ASSIGN_OR_RETURN(std::vector<v1::NodeRunSummary> run,
                            store.LoadRunSummaries(s.run_id()));
      b = reports::ComputeRunBands(run);
    }
    for (const auto& r : rows) b[r.figure] = reports::FigureBand{r.p10, r.p90};
  }
  return reports::ComputeNodeHistoryFrom(node, own, bands);
}

absl::StatusOr<v1::ReliabilitySummary> QueryFleetReliability(
    Store& store, const std::function<bool()>& stop) {
  CMAX_ASSIGN_OR_RETURN(std::vector<v1::NodeRunSummary> all,
                        store.LoadNodeRunSummaries("", false, stop));
  reports::HistoryOptions options;
  options.stop = stop;
  v1::ReliabilitySummary summary = reports::ComputeReliability(all, options);
  if (stop && stop()) return absl::CancelledError("fleet history: stopped (nobody waits for it)");
  return summary;
}

}  // namespace cmax::coordinator
