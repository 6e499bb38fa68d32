#include "reports/record_speaker.h"

#include <algorithm>

#include "absl/strings/numbers.h"
#include "reports/judge_util.h"

namespace cmax::reports {
namespace {

bool Holds(const std::vector<std::string>& nodes, const std::string& node) {
  return std::find(nodes.begin(), nodes.end(), node) != nodes.end();
}

}  // namespace

RecordSpeaker::RecordSpeaker(const RunData& data) : run_nodes_(data.nodes) {
  for (const auto& t : data.tasks) {
    Task& task = tasks_[t.task_id()];
    task.nodes = SplitNodes(t.node());
    const v1::SuiteSpec* entry = PlanEntryOf(data, t);
    task.mpirun =
        entry != nullptr && entry->launcher() == "mpirun" && task.nodes.size() > 1;
  }
}

const RecordSpeaker::Task* RecordSpeaker::Find(const std::string& task_id) const {
  auto it = tasks_.find(task_id);
  return it == tasks_.end() ? nullptr : &it->second;
}

bool RecordSpeaker::SpeaksFor(const v1::ExportedRecord& rec,
                              const std::string& node) const {
  const std::string sender = RecordNode(rec);
  if (sender.empty() || node.empty()) return false;
  if (node == sender) return true;
  const Task* t = Find(rec.task_id());
  return t != nullptr && t->mpirun && t->nodes.front() == sender && Holds(t->nodes, node);
}

std::optional<int> RecordSpeaker::OwnRank(
    const v1::ExportedRecord& rec,
    const google::protobuf::Map<std::string, std::string>& labels) const {
  auto it = labels.find("rank");
  int rank = 0;
  if (it == labels.end() || !absl::SimpleAtoi(it->second, &rank) || rank < 0) {
    return std::nullopt;
  }
  if (rank == rec.rank()) return rank;
  const Task* t = Find(rec.task_id());
  if (t != nullptr && t->mpirun && t->nodes.front() == RecordNode(rec)) return rank;
  return std::nullopt;
}

bool RecordSpeaker::IsPeer(const v1::ExportedRecord& rec, const std::string& node) const {
  if (node.empty()) return false;
  if (const Task* t = Find(rec.task_id()); t != nullptr && !t->nodes.empty()) {
    return Holds(t->nodes, node);
  }
  return run_nodes_.empty() || Holds(run_nodes_, node);
}

}  // namespace cmax::reports
