// The node page's section on the fault loop's incidents (docs/remediation.md,
// coordinator/remediation/incidents.h): each incident's id, state, check,
// opening time, steps (action, outcome, by whom, duration) and measured
// phases (detect, quarantine, repair), newest first and bounded. A pure
// function of GetRemediation's answer; every text from it is escaped.
#ifndef CMAX_COORDINATOR_WEB_REMEDIATION_SECTION_H_
#define CMAX_COORDINATOR_WEB_REMEDIATION_SECTION_H_

#include <string>

#include "absl/status/statusor.h"
#include "cmax/v1/incident.pb.h"

namespace cmax::coordinator::web {

// The node page shows at most this many incidents (the newest), and says
// how many more there are.
inline constexpr int kMaxRemediationShown = 20;

// The section for `node` (an <h2> and what follows). `status` not OK: the
// section says why the incidents are not shown.
std::string RemediationSection(const std::string& node,
                               const absl::StatusOr<v1::RemediationStatus>& status);

}  // namespace cmax::coordinator::web

#endif  // CMAX_COORDINATOR_WEB_REMEDIATION_SECTION_H_
