#include "reports/judges.h"

namespace cmax::reports {

// Declarations of the judges in judges/ (one line each).
// (none yet)

const std::vector<Judge>& AllJudges() {
  static const std::vector<Judge> judges = {
      // (one line per judge)
  };
  return judges;
}

}  // namespace cmax::reports
