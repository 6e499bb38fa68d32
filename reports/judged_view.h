// What the judges see of a run (RULES.md, "What is judged"): only each
// task's last attempt, only records that arrived while their task was open,
// and nothing of `selftest` (it measures cmax's pipeline, not the cluster).
// Everything left out is kept as history for the node verdicts.
#ifndef CMAX_REPORTS_JUDGED_VIEW_H_
#define CMAX_REPORTS_JUDGED_VIEW_H_

#include <map>
#include <string>
#include <vector>

#include "reports/run_data.h"

namespace cmax::reports {

struct JudgedView {
  RunData data;  // the input with `records` filtered as above
  // node -> what was left out, in words ("hostcheck: attempt 1 lost (agent
  // lost), attempt 2 completed"; "3 records of gemm arrived after the task
  // ended: shown in the export, not judged").
  std::map<std::string, std::vector<std::string>> history;
};

// Pure. A record is kept unless its task is known and the record belongs to
// an earlier attempt, it is flagged late, or it is selftest's.
JudgedView MakeJudgedView(const RunData& data);
// The same view, moving the kept records out of `data` instead of copying
// them (the coordinator's scorecard holds each record once); `data` keeps
// everything else, its `records` are left empty. A `record_set` is moved
// into the view with the left-out records marked dropped (the const
// overload copies it).
JudgedView MakeJudgedView(RunData&& data);

// True when `rec` evaluated the cluster: a Measurement, or a Finding whose
// outcome came from evidence (not_measured unset). Progress, Log, Sample and
// Artifact records evaluate nothing.
bool Evaluates(const v1::ExportedRecord& rec);

}  // namespace cmax::reports

#endif  // CMAX_REPORTS_JUDGED_VIEW_H_
