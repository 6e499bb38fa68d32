// Cost figures of a run (RULES.md, "Cost"): price per delivered BF16
// PFLOP-hour and the GPU-hours (and money) lost to failed nodes. Computed
// from a scorecard alone, so `cmaxctl rank --price` can price a scorecard
// exported from any coordinator. Pure functions.
#ifndef CMAX_REPORTS_COST_H_
#define CMAX_REPORTS_COST_H_

#include <string>

#include "cmax/v1/scorecard.pb.h"

namespace cmax::reports {

// The formula, in words; the same text is in RULES.md and in every
// CostSummary.formula.
inline constexpr char kCostFormula[] =
    "USD per delivered PFLOP-hour = price per GPU-hour / (BF16 TFLOP/s per GPU / 1000), "
    "BF16 TFLOP/s per GPU = median over GPUs of each GPU's best BF16 gemm_tflops shape; "
    "lost GPU-hours = GPUs of nodes with verdict fail x run hours; lost USD = lost GPU-hours "
    "x price";

// BF16 TFLOP/s per GPU (the median over GPUs of each GPU's best BF16 dense
// gemm_tflops, from card.metric_summary or its key measurements), the GPU
// count and run hours, the GPUs of failed nodes, and, when
// `price_per_gpu_hour` > 0, the money figures. Without a BF16 measurement
// usd_per_pflop_hour stays 0 with bf16_measured false and the summary says
// "not measured". `source` names where the price came from.
v1::CostSummary ComputeCost(const v1::Scorecard& card, double price_per_gpu_hour,
                            const std::string& source);

// "$2.49 per GPU-hour: $3.12 per delivered BF16 PFLOP-hour; ..." lines.
std::string RenderCostText(const v1::CostSummary& cost);
// A Markdown section ("## Cost"); empty when the card has no price and no
// GPU-hours to report.
std::string RenderCostMarkdown(const v1::Scorecard& card);
// An HTML section for the scorecard page; empty likewise. Escaped.
std::string RenderCostHtml(const v1::Scorecard& card);

}  // namespace cmax::reports

#endif  // CMAX_REPORTS_COST_H_
