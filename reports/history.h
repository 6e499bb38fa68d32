// Node history, incidents and the fleet's reliability (docs/history.md):
// pure functions over the per-(run, node) summaries the coordinator stores
// when a run ends (v1::NodeRunSummary, history.proto). No gRPC, no SQLite;
// the raw records are never needed, so history survives their deletion.
//
// Verdicts: "accept", "reject" or "not measured" (SummarizeRun says which
// scorecard verdict maps to which). "Not measured" is never a pass: a run
// that did not measure a node neither opens nor closes its incident.
//
// Incidents: one opens at the first run that rejects the node. Each failing
// reason of its rejecting runs stays unresolved until a later run measures
// it again and does not fail it; the incident closes at the run that
// resolves the last one, and time to repair = that run - open. A run
// "measures" a reason when it evaluated the reason's suite on the node (a
// finding's suite), else the reason's category, else (a "verdict" reason,
// which has neither) anything on the node. So a quick run that never ran the
// orchestration suite leaves an orchestration incident open, and the next
// full run that fails it again continues that incident rather than opening
// one "within 7 days of a repair". A summary that does not say what it
// measured (version 0, stored before cmax kept it, its scorecard gone since)
// resolves nothing: not measured is never a pass.
#ifndef CMAX_REPORTS_HISTORY_H_
#define CMAX_REPORTS_HISTORY_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cmax/v1/history.pb.h"
#include "cmax/v1/scorecard.pb.h"

namespace cmax::reports {

inline constexpr char kVerdictAccept[] = "accept";
inline constexpr char kVerdictReject[] = "reject";
inline constexpr char kVerdictNotMeasured[] = "not measured";

// NodeRunSummary.version written by SummarizeRun. 1: measured_suites,
// measured_categories and HistoryReason.suite are filled. The coordinator
// summarises again, from scorecard.json, every run whose stored summaries
// are older (CoordinatorCore::BackfillHistory).
inline constexpr int kSummaryVersion = 1;

struct HistoryOptions {
  // Repeat offender: the same reason in `repeat_k` of the node's last
  // `repeat_n` measured runs (3 of 5: one fault that takes a run or two to
  // fix is not yet a repeat offender; one that keeps coming back is).
  int repeat_k = 3;
  int repeat_n = 5;
  // "Came back and failed again": an incident opened within this long after
  // the node's previous incident closed.
  int64_t reopen_window_ns = 7ll * 24 * 3600 * 1000000000;
  size_t top_reasons = 10;
  // ComputeReliability asks it once per node (may be empty); once it says
  // true the summary returned is incomplete and the caller drops it (a
  // query nobody waits for any more, coordinator/history_pool.h).
  std::function<bool()> stop;
};

// One summary per node of a finished run's scorecard: the verdict
// ("accept" for pass, or warn with results from the node, `partial` when
// something was not measured there; "reject" for fail; "not measured" when
// the node gave no results, or its row of the card's node grid has nothing
// but not_measured, and it did not fail), the reasons (rule id, outcome,
// category, message of each warn-or-worse rule on the node), the key
// figures (figures below, from the card's metric_summary) and its GPU count
// (the inventory's gpu_count).
std::vector<v1::NodeRunSummary> SummarizeRun(const v1::Scorecard& card,
                                             int64_t finished_unix_ns,
                                             const std::string& report_dir);

// The key figures: name, unit and how a node's value is taken (the median of
// its metric_summary entries of that metric, filtered by labels).
//   gemm_tflops_per_gpu     gemm_tflops, dtype bf16 (else any dtype)
//   allreduce_busbw_gbps    busbw_gbps, op all_reduce, largest size_bytes
//   storage_read_mbps       storage_bandwidth_mbps, op read, job all
//   burnin_gpu_temperature_c gpu_temperature_c (burn-in's GPU temperature)
//   gpu_count               gpu_count (hostcheck)

// One node's incident state, fed its summaries oldest first: what
// ComputeIncidents and the coordinator's /metrics state (which sees runs one
// at a time) share, so that both close incidents by the same rule.
struct IncidentState {
  bool has_open = false;
  v1::Incident open;              // valid while has_open; unresolved kept current
  int64_t last_close_ns = -1;     // -1: never closed
};
// Applies the node's next summary. Returns true and sets `*closed` when it
// closed the open incident (`closed` may be null).
bool AdvanceIncident(const v1::NodeRunSummary& s, const HistoryOptions& options,
                     IncidentState* state, v1::Incident* closed);

// The node's incidents from its summaries (any order; other nodes' are
// ignored), oldest first.
std::vector<v1::Incident> ComputeIncidents(const std::string& node,
                                           const std::vector<v1::NodeRunSummary>& all,
                                           const HistoryOptions& options = {});

// The fleet's band of a figure in one run: p10 and p90 across its nodes.
struct FigureBand {
  double p10 = 0, p90 = 0;
};
using RunBands = std::map<std::string, FigureBand>;  // figure name -> band
// The bands of one run, from its nodes' summaries (stored beside them when
// the run ends, so that one node's history never reads the fleet's rows).
RunBands ComputeRunBands(const std::vector<v1::NodeRunSummary>& run_summaries);

// Everything about one node; `all` holds every node's summaries (for the
// fleet band). A node without summaries gets state "unknown" and no runs.
v1::NodeHistory ComputeNodeHistory(const std::string& node,
                                   const std::vector<v1::NodeRunSummary>& all,
                                   const HistoryOptions& options = {});
// The same from the node's own summaries and its runs' bands (run id ->
// bands; a run without one gets a band of 0-0).
v1::NodeHistory ComputeNodeHistoryFrom(const std::string& node,
                                       const std::vector<v1::NodeRunSummary>& node_runs,
                                       const std::map<std::string, RunBands>& bands,
                                       const HistoryOptions& options = {});

// The fleet's reliability from every summary. measured: the history holds 2
// or more runs that measured some node (a run on its own is "history: not
// measured").
v1::ReliabilitySummary ComputeReliability(const std::vector<v1::NodeRunSummary>& all,
                                          const HistoryOptions& options = {});

// Least-squares slope of value over time, per day; false with fewer than 2
// points or when all times are equal.
bool LeastSquaresSlopePerDay(const std::vector<int64_t>& times_ns,
                             const std::vector<double>& values, double* slope);

// "2026-11-30": the Monday (UTC) of the ISO week holding `unix_ns`.
std::string WeekStart(int64_t unix_ns);

// Puts the summary into the card (Scorecard.history) and its line into the
// Reliability category's evidence. Evidence only: no grade changes.
void AddHistoryToScorecard(const v1::ReliabilitySummary& summary, v1::Scorecard* card);

// Text for `cmaxctl history`.
std::string RenderNodeHistoryText(const v1::NodeHistory& history);
std::string RenderReliabilityText(const v1::ReliabilitySummary& summary);

}  // namespace cmax::reports

#endif  // CMAX_REPORTS_HISTORY_H_
