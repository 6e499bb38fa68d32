// The list of judges the scorecard runs (see run_data.h for the contract).
// Each judge lives in judges/<name>_judge.cc and is declared here.
#ifndef CMAX_REPORTS_JUDGES_H_
#define CMAX_REPORTS_JUDGES_H_

#include <vector>

#include "reports/run_data.h"

namespace cmax::reports {

// Every judge, in the order the scorecard runs them.
const std::vector<Judge>& AllJudges();

}  // namespace cmax::reports

#endif  // CMAX_REPORTS_JUDGES_H_
