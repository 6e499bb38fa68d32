// Which ranks of a task a node speaks for, and whether a record's rank
// claims fit them: ingest (core_ingest.cc) refuses a record that claims a
// rank the scheduler did not assign to the node that sent it, so no node's
// records are stored as another node's (docs/security.md, "A record speaks
// for the node that sent it").
//
// The layout is the scheduler's (Scheduler::Assign): ranks contiguous per
// node in TaskRow::nodes order, `local_sizes` ranks on each. A task that is
// not a group (node scope) holds rank 0 on its node. Under launcher mpirun
// the group's first node reports every rank through one spool as wire rank
// 0, its records labelled with their own rank: it alone speaks for the
// group (the other nodes' output reaches the coordinator only through it).
//
// Pure functions; no thread of their own.
#ifndef CMAX_COORDINATOR_RANK_CLAIMS_H_
#define CMAX_COORDINATOR_RANK_CLAIMS_H_

#include <string>
#include <vector>

#include "cmax/v1/service.pb.h"
#include "coordinator/store.h"

namespace cmax::coordinator {

// The ranks one node holds in a task.
struct NodeRanks {
  int first = 0;  // wire ranks [first, first + count); count 0: none
  int count = 0;
  // > 0 (mpirun, first node): `rank` labels may name any rank below it;
  // 0: a `rank` label must be the record's wire rank.
  int label_world = 0;
};

// Ranks per node in task.nodes order: `known` (the scheduler's layout of the
// current attempt) when it has one entry a node, else world_size spread
// evenly (the layout after a coordinator restart), every entry at least 1.
std::vector<int> LocalSizesOf(const TaskRow& task, const std::vector<int>* known);

// What `node` holds of `task` with these local sizes; count 0 when the node
// is not the task's (or is a non-first node of an mpirun group).
NodeRanks RanksOf(const TaskRow& task, const std::vector<int>& local_sizes,
                  const std::string& node);

// "" when the record's wire rank and its `rank` label (Measurement, Sample
// or Finding; a Log has no labels) fit `ranks`, else why not, for the log:
// "claims rank 1, node-a holds rank 0".
std::string RankClaimError(const NodeRanks& ranks, const v1::SpooledRecord& record);

}  // namespace cmax::coordinator

#endif  // CMAX_COORDINATOR_RANK_CLAIMS_H_
