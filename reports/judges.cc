#include "reports/judges.h"

namespace cmax::reports {

const std::vector<Judge>& AllJudges() {
  static const std::vector<Judge>* judges = [] {
    auto* j = new std::vector<Judge>{&FindingsJudge, &TasksJudge, &ExpectationsJudge,
                                     &FleetJudge, &ComputeJudge};
    // Each suite's own judges, in its folder (cmax_suite_judge in its
    // CMakeLists.txt), in registration order.
    j->insert(j->end(), SuiteJudges().begin(), SuiteJudges().end());
    // Last: the comparison against a saved baseline reads the others' view.
    j->push_back(&BaselineJudge);
    return j;
  }();
  return *judges;
}

}  // namespace cmax::reports
