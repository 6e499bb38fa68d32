// Baselines (the SuperBench convention: a run's figures saved as a baseline
// file that later runs are diagnosed against with rules such as a relative
// variance per metric; https://microsoft.github.io/superbenchmark, user
// tutorial "Data Diagnosis": baseline file and rule file).
//
// `cmaxctl baseline save RUN -o FILE` writes MakeBaseline of the run's
// scorecard; a plan's `baseline: FILE` embeds it in Plan.baseline and
// judges/baseline_judge.cc flags regressions against it. Pure functions.
#ifndef CMAX_REPORTS_BASELINE_H_
#define CMAX_REPORTS_BASELINE_H_

#include <string>

#include "cmax/v1/plan.pb.h"
#include "cmax/v1/scorecard.pb.h"

namespace cmax::reports {

inline constexpr double kDefaultBaselineTolerance = 0.05;

// Every metric of the card's summary whose better direction is known
// (compare.h, MetricBetter), per node/GPU/entry, and the fleet medians per
// (entry, metric, other labels) over the nodes and GPUs. Values of metrics
// whose direction is unknown are left out (a change could not be called a
// regression). Stamps run id, plan, cmax version and the time of saving.
// Keeps the card's training loss curves (loss_curve.h).
v1::BaselineFile MakeBaseline(const v1::Scorecard& card);

// Proto JSON, proto field names, pretty-printed.
std::string RenderBaselineJson(const v1::BaselineFile& baseline);

// "run R of plan P (cmax V, saved T), N values[, K loss curve(s)]; tolerance 5%".
std::string DescribeBaseline(const v1::Plan& plan);

// The CompareMetric a baseline value stands for (same key, compare.h).
v1::CompareMetric AsCompareMetric(const v1::BaselineValue& v);

}  // namespace cmax::reports

#endif  // CMAX_REPORTS_BASELINE_H_
