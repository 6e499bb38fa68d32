// Chart data for the scorecard: aggregated series computed from the run's
// own records and stored in Scorecard.charts (so the JSON export carries what
// the HTML draws as inline SVG). Pure: no I/O, no clocks.
//
// What is drawn comes from the suites' declarations (MetricSpec::chart,
// common/suite_declaration.h): the kind (per GPU or per node bars, lines
// against message size, a source-by-destination matrix, Samples over time),
// the chart each measurement goes to and its title (the suite's
// ChartNamer), the reference line (the GPU's datasheet peak, the plan's
// floor) and the family the card names as not measured when nothing of it
// was drawn. Nothing here knows a suite. The ids are stable; the HTML and
// tests look them up: gemm:<dtype> <m>x<n>x<k>, memory:<test>,
// busbw:<entry> (<op>), storage:<pattern> <op>, connectivity:rtt,
// <suite>:<sample metric>. A matrix past kMaxHeatmapNodes nodes becomes a
// per-node chart of the median from each node. Outliers are marked with the
// metric's declared margin (OutlierMargin), as the judges name them.
//
// Scale: a per_subject chart keeps every value up to kMaxSubjectsDrawn, else
// a histogram of all values plus the outliers (named, at most kMaxNamed); a
// series chart keeps every line up to kMaxSeriesDrawn, else the fleet's band
// (min, median, max per x) plus the outlier lines.
#ifndef CMAX_REPORTS_CHARTS_H_
#define CMAX_REPORTS_CHARTS_H_

#include <cstddef>

#include "cmax/v1/scorecard.pb.h"
#include "reports/run_data.h"

namespace cmax::reports {

inline constexpr size_t kMaxSubjectsDrawn = 256;
inline constexpr size_t kMaxNamed = 48;
inline constexpr size_t kMaxSeriesDrawn = 16;
inline constexpr size_t kMaxPointsPerSeries = 240;
inline constexpr size_t kMaxHeatmapNodes = 64;
inline constexpr size_t kHistogramBins = 40;

// Fills card->charts, card->charts_not_measured and card->node_grid from
// `data` (the judged view) and what the card already holds (categories,
// node verdicts and their reasons). Call it last in BuildScorecard.
void BuildCharts(const RunData& data, v1::Scorecard* card);

}  // namespace cmax::reports

#endif  // CMAX_REPORTS_CHARTS_H_
