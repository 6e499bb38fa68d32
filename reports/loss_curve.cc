#include "reports/loss_curve.h"

#include <optional>
#include <string>

#include "absl/strings/numbers.h"
#include "common/suite_declaration.h"
#include "reports/judge_util.h"
#include "reports/record_set.h"
#include "reports/record_speaker.h"

namespace cmax::reports {

std::map<int, double> AgreedLosses(const std::map<int, std::map<int, double>>& loss_by_rank) {
  std::map<int, std::map<double, int>> votes;  // step -> value -> ranks
  std::map<int, double> lowest;                // step -> the lowest rank's value
  for (const auto& [rank, losses] : loss_by_rank) {  // ascending ranks
    for (const auto& [step, v] : losses) {
      ++votes[step][v];
      lowest.try_emplace(step, v);
    }
  }
  std::map<int, double> agreed;
  for (const auto& [step, by_value] : votes) {
    double ref = lowest.at(step);
    int best = by_value.at(ref);
    for (const auto& [v, n] : by_value) {
      if (n > best) {
        best = n;
        ref = v;
      }
    }
    agreed[step] = ref;
  }
  return agreed;
}

std::string CurveDevice(const google::protobuf::Map<std::string, std::string>& labels) {
  const std::string device = LabelValue(labels, "device");
  const std::string cpu = LabelValue(labels, "cpu_model");
  return device == "cpu" && !cpu.empty() ? device + " (" + cpu + ")" : device;
}

std::vector<v1::LossCurve> LossCurvesOf(const RunData& data) {
  struct Task {
    v1::LossCurve curve;
    std::map<int, std::map<int, double>> loss_by_rank;
  };
  std::map<std::string, Task> tasks;
  const RecordSpeaker speaker(data);
  auto add = [&](const v1::ExportedRecord& rec) {
    const v1::Sample& s = rec.record().sample();
    // Only a rank's own records give its loss (record_speaker.h).
    const std::optional<int> own = speaker.OwnRank(rec, s.labels());
    int step = 0;
    if (!own || !absl::SimpleAtoi(LabelValue(s.labels(), "step"), &step)) return;
    const int rank = *own;
    Task& t = tasks[rec.task_id()];
    if (t.loss_by_rank.empty()) {
      t.curve.set_task(rec.task_id());
      t.curve.set_model(LabelValue(s.labels(), "model"));
      t.curve.set_device(CurveDevice(s.labels()));
      t.curve.set_dtype(LabelValue(s.labels(), "dtype"));
      t.curve.set_torch_version(LabelValue(s.labels(), "torch_version"));
    }
    t.loss_by_rank[rank][step] = s.value();
  };
  // The suites' declared loss metrics (MetricSpec::loss_curve): the
  // scorecard names no suite.
  for (const SuiteInfo& suite : SuiteCatalog()) {
    for (const MetricSpec& metric : suite.metrics) {
      if (!metric.loss_curve) continue;
      RecordFilter filter;
      filter.kind = v1::Record::kSample;
      filter.metric = metric.name;
      filter.suite_or_own = suite.name;
      ForEachRecord(data, filter, add);
    }
  }
  std::vector<v1::LossCurve> out;
  for (auto& [id, t] : tasks) {
    t.curve.set_replicas(static_cast<int>(t.loss_by_rank.size()));
    for (const auto& [step, loss] : AgreedLosses(t.loss_by_rank)) {
      if (t.curve.steps_size() >= kLossCurveMaxPoints) {
        t.curve.set_steps_left_out(t.curve.steps_left_out() + 1);
        continue;
      }
      t.curve.add_steps(step);
      t.curve.add_losses(loss);
    }
    out.push_back(std::move(t.curve));
  }
  return out;
}

}  // namespace cmax::reports
