// Everything the scorecard is computed from: one run as the store holds it.
#ifndef CMAX_REPORTS_RUN_DATA_H_
#define CMAX_REPORTS_RUN_DATA_H_

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cmax/v1/inventory.pb.h"
#include "cmax/v1/plan.pb.h"
#include "cmax/v1/record.pb.h"
#include "cmax/v1/run.pb.h"
#include "cmax/v1/scorecard.pb.h"

namespace cmax::reports {

class RecordSet;  // record_set.h

struct RunData {
  v1::RunInfo run;
  v1::Plan plan;
  std::vector<v1::TaskInfo> tasks;            // every task of the run
  std::vector<v1::ExportedRecord> records;    // every stored record of the run
  std::map<std::string, v1::Inventory> inventories;  // node -> its last Hello
  std::vector<std::string> nodes;             // the nodes the run selected
  // More records of the run, held compactly (record_set.h): the
  // coordinator's scorecard of a big run reads them here instead of into
  // `records`. Judges read both through ForEachRecord, never `records`
  // alone.
  std::shared_ptr<RecordSet> record_set;
};

// A judge turns part of a run into rule results. Judges are pure functions:
// no I/O, no clocks. The scorecard builder (scorecard.h) aggregates every
// judge's results into category grades, node verdicts and the tier.
//
// Contract for a RuleResult:
//   category: one of Compute, Networking, Storage, Reliability, Security,
//             Lifecycle (exact spelling).
//   outcome:  pass, warn, fail, critical, or not_measured.
//   node:     the node it is about, or empty for fleet-wide results. A warn
//             on a node makes its verdict at least warn; fail or critical
//             make it fail.
//   Evidence and message must let an operator act (node, GPU, port, value,
//   expectation, command, stderr tail).
using Judge = void (*)(const RunData& data, std::vector<v1::RuleResult>* out);

}  // namespace cmax::reports

#endif  // CMAX_REPORTS_RUN_DATA_H_
