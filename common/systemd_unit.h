// systemd unit names as cmax accepts them from an operator's flags and
// policies before they reach an argv (systemctl, cmax-watch).
#ifndef CMAX_COMMON_SYSTEMD_UNIT_H_
#define CMAX_COMMON_SYSTEMD_UNIT_H_

#include <string>

namespace cmax {

// True for a unit name of the characters systemd allows
// ([A-Za-z0-9:_.\\@-], systemd.unit(5)), at most 255 of them, not starting
// with '-' or '.', and ending in .service, .socket, .target or .mount.
bool IsSystemdUnitName(const std::string& name);

}  // namespace cmax

#endif  // CMAX_COMMON_SYSTEMD_UNIT_H_
