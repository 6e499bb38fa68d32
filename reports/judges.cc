#include "reports/judges.h"

namespace cmax::reports {

// Declarations of the judges in judges/ (one line each).
void StorageJudge(const RunData& data, std::vector<v1::RuleResult>* out);

const std::vector<Judge>& AllJudges() {
  static const std::vector<Judge> judges = {
      StorageJudge,
  };
  return judges;
}

}  // namespace cmax::reports
