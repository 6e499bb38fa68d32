// Training loss curves (docs/workload.md; the metrics a suite declares with
// MetricSpec::loss_curve): per task, the loss its data-parallel replicas
// agreed on at each logged step. The
// scorecard carries them (Scorecard.loss_curves), `cmaxctl baseline save`
// keeps them (BaselineFile.loss_curves), and the workload judge holds a
// later run of the same model to them. Pure functions.
#ifndef CMAX_REPORTS_LOSS_CURVE_H_
#define CMAX_REPORTS_LOSS_CURVE_H_

#include <map>
#include <string>
#include <vector>

#include "cmax/v1/plan.pb.h"
#include "reports/run_data.h"

namespace cmax::reports {

// Points kept per curve; the steps after these are counted, not kept.
inline constexpr int kLossCurveMaxPoints = 10000;

// The agreed loss at each step of `loss_by_rank` (rank -> step -> loss): the
// value most ranks logged at that step, the lowest rank's on a tie.
std::map<int, double> AgreedLosses(const std::map<int, std::map<int, double>>& loss_by_rank);

// What computed a loss curve, from a workload record's labels: the GPU's
// name, or "cpu (<cpu_model>)" (fp32 results depend on the CPU's vector
// code paths).
std::string CurveDevice(const google::protobuf::Map<std::string, std::string>& labels);

// One curve per task with Samples of a declared loss metric
// (MetricSpec::loss_curve; labels rank and step), in task order; model,
// device, dtype and torch_version from the Samples' labels (model empty for
// records written before the `model` label).
std::vector<v1::LossCurve> LossCurvesOf(const RunData& data);

}  // namespace cmax::reports

#endif  // CMAX_REPORTS_LOSS_CURVE_H_
