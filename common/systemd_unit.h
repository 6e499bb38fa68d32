// systemd unit names as cmax accepts them from an operator's flags and
// policies, and from the coordinator, before they reach an argv (systemctl,
// cmax-watch). The one check for the watch's --services, the policy's
// allow_units and restart_unit, and the agent's --remediation-units; each
// caller says which unit types it takes.
#ifndef CMAX_COMMON_SYSTEMD_UNIT_H_
#define CMAX_COMMON_SYSTEMD_UNIT_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace cmax {

// The types the watch follows (--services, IsSystemdUnitName).
inline constexpr absl::string_view kWatchedUnitTypes[] = {"service", "socket", "target", "mount"};

// OK for a name of the characters systemd allows ([A-Za-z0-9:_.\\@-],
// systemd.unit(5)), 1 to 255 of them, not starting with '-', '.' or '@',
// whose type (after the last '.') is one of `types`, with at most one '@'
// and, where there is one, an instance after it. INVALID_ARGUMENT says
// what is wrong ("unit name has a character systemd refuses (byte 0x3b)");
// the name is repeated only once its characters are known to be safe.
absl::Status CheckSystemdUnitName(absl::string_view name,
                                  absl::Span<const absl::string_view> types);

// CheckSystemdUnitName(name, kWatchedUnitTypes).ok().
bool IsSystemdUnitName(const std::string& name);

}  // namespace cmax

#endif  // CMAX_COMMON_SYSTEMD_UNIT_H_
