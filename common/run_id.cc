#include "common/run_id.h"

#include <cctype>

namespace cmax {

bool IsSafeRunId(const std::string& id) {
  if (id.empty() || id.size() > 128) return false;
  for (char c : id) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' ||
          c == '.'))
      return false;
  }
  return id.find("..") == std::string::npos;
}

}  // namespace cmax
