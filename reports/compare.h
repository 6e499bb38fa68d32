// Comparing two runs (`cmaxctl compare`): the per-key metric summary every
// scorecard carries (Scorecard.metric_summary), and what moved, appeared,
// cleared or changed from run A to run B. Pure functions, no I/O.
#ifndef CMAX_REPORTS_COMPARE_H_
#define CMAX_REPORTS_COMPARE_H_

#include <string>
#include <vector>

#include "cmax/v1/scorecard.pb.h"
#include "reports/run_data.h"

namespace cmax::reports {

using Comparison = v1::CompareResult;

// Most keys a scorecard's metric_summary holds; the rest are counted in
// metric_summary_note.
inline constexpr size_t kMaxSummaryKeys = 20000;

// "higher", "lower", or "" when no side is better: the direction the suite
// that writes the metric declares (MetricSpec::better); "" for a name no
// suite declares.
std::string MetricBetter(const std::string& metric);

// One entry per (plan entry, node, gpu label, metric, other labels) of the
// run's measurements (the judged view: last attempts, no late or selftest
// records), its value the median. Sorted by key. At most kMaxSummaryKeys;
// `*dropped` (if given) gets the number of keys left out.
std::vector<v1::CompareMetric> BuildMetricSummary(const RunData& data, size_t* dropped = nullptr);

// The key a CompareMetric is matched by across runs.
std::string MetricKey(const v1::CompareMetric& m);
// "gemm node-1 gpu 0 gemm_tflops (dtype=bf16, m=8192)" for people.
std::string MetricLabel(const v1::CompareMetric& m);

// The card's metric_summary; for a scorecard written before it existed, one
// built from its key measurements (entry = suite).
std::vector<v1::CompareMetric> SummaryOf(const v1::Scorecard& card);

struct CompareOptions {
  // The least |change| in percent that is a move; a metric's noise can ask
  // for more (CompareScorecards).
  double threshold_pct = 5.0;
};

// Run A (before) against run B (after); only what both runs measured is
// compared, and what one of them did not measure is said so, never counted
// as a change.
//  - Metrics are matched by MetricKey (identifying labels only: no instant,
//    series or rank of one run). A metric moved when |after - before| /
//    |before| (from 0: +-100%) exceeds its noise: the largest of the
//    threshold, the metric's declared noise (MetricSpec::fleet_min_margin)
//    and its spread in run A, 3 IQR relative to the median: of its own
//    values where it has several, else of its peers (the same entry, metric
//    and labels on other nodes, at least 3), else a floor per unit (10% for
//    times, 5% for rates); a fall counts as the rise that undoes it. Keys
//    above the threshold but within their noise
//    are counted (within_noise), not listed.
//  - Findings of warn or worse (not could-not-run ones) are matched by
//    (node, check id, subject, severity). One only in A "cleared" when a
//    task of its suite completed on its node in B, else it is "not
//    measured in B"; one only in B "appeared" likewise, else "not measured
//    in A".
//  - Verdicts by node; a verdict change is comparable only when both runs
//    ran the same suites on the node (and both had the node).
// `regressions` counts metrics worse beyond their noise in their known
// direction, comparable nodes whose verdict got worse, findings that
// appeared, and a worse tier (both rated). `summary` holds the lines the
// renderers lead with.
Comparison CompareScorecards(const v1::Scorecard& a, const v1::Scorecard& b,
                             const CompareOptions& options = {});

// Each renderer leads with the summary; the text and HTML list at most 20
// rows a section (the HTML folds up to 200 more into a <details>) and count
// the rest; the JSON holds every row.
std::string RenderCompareText(const Comparison& c);
// Proto JSON, proto field names, pretty-printed.
std::string RenderCompareJson(const Comparison& c);
// One self-contained HTML page (inline CSS, no script); every text escaped.
std::string RenderCompareHtml(const Comparison& c);


}  // namespace cmax::reports

#endif  // CMAX_REPORTS_COMPARE_H_
