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
  double threshold_pct = 5.0;  // a metric moved when |change| > this
};

// Run A (before) against run B (after). A metric moved when both runs have
// its key and |after - before| / |before| > threshold (from 0: +-100%).
// Findings are matched by (node, check id, subject, severity) and only
// warn or worse are listed; verdicts by node. `regressions` counts metrics
// that got worse in their known direction, nodes whose verdict got worse
// (or that are gone), findings of warn or worse that appeared, and a worse
// tier.
Comparison CompareScorecards(const v1::Scorecard& a, const v1::Scorecard& b,
                             const CompareOptions& options = {});

std::string RenderCompareText(const Comparison& c);
// Proto JSON, proto field names, pretty-printed.
std::string RenderCompareJson(const Comparison& c);
// One self-contained HTML page (inline CSS, no script); every text escaped.
std::string RenderCompareHtml(const Comparison& c);


}  // namespace cmax::reports

#endif  // CMAX_REPORTS_COMPARE_H_
