// cmaxctl remediation status|pause|resume|approve|dismiss|reload: the fault
// loop's state and the admin's commands (coordinator/remediation/
// incidents.h, docs/remediation.md).
#ifndef CMAX_COORDINATOR_CTL_REMEDIATION_H_
#define CMAX_COORDINATOR_CTL_REMEDIATION_H_

#include <string>
#include <vector>

#include "cmax/v1/service.pb.h"
#include "coordinator/ctl/client.h"

namespace cmax::ctl {

// Exit codes: 0 done, 2 usage or an unknown incident, 3 coordinator
// unreachable, 6 credentials refused (pause, resume, approve, dismiss and
// reload need the admin role), 1 otherwise (a refused policy: its line).
int CmdRemediation(Client& client, const std::vector<std::string>& args);

// The status as text: the mode, the breaker, then each incident with its
// timings (detect, quarantine, repair) and its steps.
std::string RemediationText(const v1::RemediationStatus& status);

}  // namespace cmax::ctl

#endif  // CMAX_COORDINATOR_CTL_REMEDIATION_H_
