#include "reports/baseline.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "common/record_io.h"
#include "common/time_util.h"
#include "common/version.h"
#include "google/protobuf/util/json_util.h"
#include "reports/compare.h"
#include "reports/judge_util.h"
#include "reports/stats.h"

namespace cmax::reports {

v1::CompareMetric AsCompareMetric(const v1::BaselineValue& v) {
  v1::CompareMetric m;
  m.set_entry(v.entry());
  m.set_node(v.node());
  m.set_gpu(v.gpu());
  m.set_metric(v.metric());
  m.set_unit(v.unit());
  *m.mutable_labels() = v.labels();
  m.set_value(v.value());
  m.set_better(v.better());
  m.set_count(v.count());
  return m;
}

v1::BaselineFile MakeBaseline(const v1::Scorecard& card) {
  v1::BaselineFile b;
  b.set_run_id(card.run_id());
  b.set_plan(card.plan());
  b.set_cmax_version(kCmaxVersion);
  b.set_created(FormatRfc3339(NowUnixNs()));
  b.set_run_started(card.started());
  b.set_simulated(card.simulated());
  struct Fleet {
    v1::BaselineValue v;
    std::vector<double> values;
  };
  std::map<std::string, Fleet> fleet;
  for (const auto& m : SummaryOf(card)) {
    const std::string better = MetricBetter(m.metric());
    if (better.empty()) continue;
    v1::BaselineValue* v = b.add_values();
    v->set_entry(m.entry());
    v->set_node(m.node());
    v->set_gpu(m.gpu());
    v->set_metric(m.metric());
    v->set_unit(m.unit());
    *v->mutable_labels() = m.labels();
    v->set_value(m.value());
    v->set_better(better);
    v->set_count(m.count());
    if (m.simulated()) b.set_simulated(true);
    v1::CompareMetric key = m;
    key.clear_node();
    key.clear_gpu();
    auto [it, inserted] = fleet.try_emplace(MetricKey(key));
    if (inserted) {
      it->second.v = *v;
      it->second.v.clear_node();
      it->second.v.clear_gpu();
    }
    it->second.values.push_back(m.value());
  }
  for (auto& [key, f] : fleet) {
    f.v.set_count(static_cast<int>(f.values.size()));
    f.v.set_value(ComputeFleetStats(std::move(f.values)).median);
    *b.add_fleet_medians() = std::move(f.v);
  }
  *b.mutable_loss_curves() = card.loss_curves();
  return b;
}

std::string RenderBaselineJson(const v1::BaselineFile& baseline) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.add_whitespace = true;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(baseline, &out, options).ok()) {
    return MessageToJsonLine(baseline, true);
  }
  return out;
}

std::string DescribeBaseline(const v1::Plan& plan) {
  if (!plan.has_baseline()) return "";
  const v1::BaselineFile& b = plan.baseline();
  const double tol =
      plan.baseline_tolerance() > 0 ? plan.baseline_tolerance() : kDefaultBaselineTolerance;
  return absl::StrCat("run ", b.run_id(), " of plan ", b.plan(), " (cmax ", b.cmax_version(),
                      ", saved ", b.created(), b.source().empty() ? "" : ", file ", b.source(),
                      "), ", b.values_size(), " values",
                      b.loss_curves_size() > 0
                          ? absl::StrCat(", ", b.loss_curves_size(), " loss curve(s)")
                          : "",
                      "; tolerance ", FormatNumber(tol * 100), "%",
                      b.simulated() ? "; SIMULATED DATA \u2014 not a measurement" : "");
}

}  // namespace cmax::reports
