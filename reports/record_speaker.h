// Who a record speaks for (docs/security.md, "A record speaks for the node
// that sent it"). A stored record's node (ExportedRecord.node) is the agent
// that sent it, authenticated by its stream, and its rank
// (ExportedRecord.rank) one the coordinator assigned to that node
// (coordinator/rank_claims.h refuses any other at ingest). A record speaks
// for its own node and its own rank only; under launcher mpirun the group's
// first node reports every rank of the group through one spool, so it
// speaks for each node and rank of its group.
//
// Judges take a record's node and rank from here (or RecordNode), never from
// a label that names a node or a rank: such a label only describes a peer
// ("to node-b"), and a record whose label claims to be another node's or
// rank's own is ignored. Pure; built once per judge from the run.
#ifndef CMAX_REPORTS_RECORD_SPEAKER_H_
#define CMAX_REPORTS_RECORD_SPEAKER_H_

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cmax/v1/run.pb.h"
#include "reports/run_data.h"

namespace cmax::reports {

class RecordSpeaker {
 public:
  explicit RecordSpeaker(const RunData& data);

  // Whether `rec` may speak for `node`: it is the record's sender
  // (RecordNode), or the sender is the first node of an mpirun group that
  // holds `node`.
  bool SpeaksFor(const v1::ExportedRecord& rec, const std::string& node) const;

  // The record's own rank by its `rank` label: the label when it parses and
  // is the record's rank (ExportedRecord.rank), or under mpirun any rank
  // from the group's first node; nullopt when absent, malformed or another
  // rank's.
  std::optional<int> OwnRank(
      const v1::ExportedRecord& rec,
      const google::protobuf::Map<std::string, std::string>& labels) const;

  // Whether `node` may be named as a peer of the record's task: one of the
  // task's nodes, or of the run's when the task is not known.
  bool IsPeer(const v1::ExportedRecord& rec, const std::string& node) const;

 private:
  struct Task {
    std::vector<std::string> nodes;
    bool mpirun = false;
  };
  const Task* Find(const std::string& task_id) const;

  std::unordered_map<std::string, Task> tasks_;  // by task id
  std::vector<std::string> run_nodes_;
};

}  // namespace cmax::reports

#endif  // CMAX_REPORTS_RECORD_SPEAKER_H_
