#include "common/systemd_unit.h"

#include <cstring>

#include "absl/strings/match.h"

namespace cmax {

bool IsSystemdUnitName(const std::string& name) {
  if (name.empty() || name.size() > 255 || name[0] == '-' || name[0] == '.') return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == ':' || c == '_' || c == '.' || c == '\\' || c == '@' || c == '-';
    if (!ok) return false;
  }
  for (const char* suffix : {".service", ".socket", ".target", ".mount"}) {
    if (absl::EndsWith(name, suffix) && name.size() > std::strlen(suffix)) return true;
  }
  return false;
}

}  // namespace cmax
