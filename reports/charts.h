// Chart data for the scorecard: aggregated series computed from the run's
// own records and stored in Scorecard.charts (so the JSON export carries what
// the HTML draws as inline SVG). Pure: no I/O, no clocks.
//
// Charts (ids are stable, the HTML and tests look them up):
//   gemm:<dtype> <m>x<n>x<k>      gemm_tflops per GPU (or per node for the CPU
//                                 backend) with fleet median, Tukey fences
//                                 and the datasheet peak (gpu_specs.h)
//   memory:<test>                 memory_bandwidth_gbps per GPU (h2d, d2h are
//                                 the PCIe copies; hbm, d2d the device memory)
//   busbw:<entry> (<op>)          busbw_gbps against message size, one line per
//                                 run (nodes, dtype, placement), with the
//                                 plan's floor (collective_judge.cc keys)
//   burnin:<metric>               Samples over time per GPU / sensor:
//                                 gpu_sm_clock_mhz, gpu_temperature_c,
//                                 gpu_power_w, burnin_gflops, cpu_freq_mhz,
//                                 temperature_c
//   storage:<pattern> <op>        storage_bandwidth_mbps per node (the node's
//                                 total, job=all), the aggregate in the note
//   connectivity:rtt              rtt_ms heat map src x dst (unreachable
//                                 pairs marked); with more than
//                                 kMaxHeatmapNodes nodes a per-node chart of
//                                 the median RTT from each node instead
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
