#include "coordinator/rank_claims.h"

#include <algorithm>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace cmax::coordinator {
namespace {

const google::protobuf::Map<std::string, std::string>* LabelsOf(const v1::Record& r) {
  if (r.has_measurement()) return &r.measurement().labels();
  if (r.has_sample()) return &r.sample().labels();
  if (r.has_finding()) return &r.finding().labels();
  return nullptr;
}

std::string Held(const NodeRanks& ranks) {
  if (ranks.count == 0) return "holds no rank of the task";
  if (ranks.count == 1) return absl::StrCat("holds rank ", ranks.first);
  return absl::StrCat("holds ranks ", ranks.first, "-", ranks.first + ranks.count - 1);
}

}  // namespace

std::vector<int> LocalSizesOf(const TaskRow& task, const std::vector<int>* known) {
  if (known != nullptr && known->size() == task.nodes.size()) return *known;
  const int n = static_cast<int>(task.nodes.size());
  const int per = n == 0 ? 1 : task.assignment.world_size() / n;
  return std::vector<int>(task.nodes.size(), std::max(1, per));
}

NodeRanks RanksOf(const TaskRow& task, const std::vector<int>& local_sizes,
                  const std::string& node) {
  NodeRanks out;
  auto it = std::find(task.nodes.begin(), task.nodes.end(), node);
  if (it == task.nodes.end()) return out;
  const size_t index = static_cast<size_t>(it - task.nodes.begin());
  if (task.assignment.group().empty()) {  // node scope: rank 0 of 1
    out.count = 1;
    return out;
  }
  if (task.assignment.launcher() == "mpirun") {
    if (index != 0) return out;
    out.count = 1;
    int world = 0;
    for (int l : local_sizes) world += l;
    out.label_world = std::max(world, task.assignment.world_size());
    return out;
  }
  for (size_t i = 0; i < index && i < local_sizes.size(); ++i)
    out.first += local_sizes[i];
  out.count = index < local_sizes.size() ? local_sizes[index] : 0;
  return out;
}

std::string RankClaimError(const NodeRanks& ranks, const v1::SpooledRecord& record) {
  const int wire = record.rank();
  if (wire < ranks.first || wire >= ranks.first + ranks.count) {
    return absl::StrCat("claims rank ", wire, ", the node ", Held(ranks));
  }
  const auto* labels = LabelsOf(record.record());
  if (labels == nullptr) return "";
  auto it = labels->find("rank");
  if (it == labels->end()) return "";
  int label = 0;
  if (!absl::SimpleAtoi(it->second, &label)) {
    return absl::StrCat("has rank label \"", absl::CEscape(it->second.substr(0, 32)),
                        "\", not a number");
  }
  if (ranks.label_world > 0) {
    if (label >= 0 && label < ranks.label_world) return "";
    return absl::StrCat("claims rank ", label, " (label), outside the group's ",
                        ranks.label_world, " ranks");
  }
  if (label == wire) return "";
  return absl::StrCat("claims rank ", label, " (label) in rank ", wire,
                      "'s records, the node ", Held(ranks));
}

}  // namespace cmax::coordinator
