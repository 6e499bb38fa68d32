#include "common/systemd_unit.h"

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace cmax {
namespace {

constexpr size_t kMaxUnitName = 255;  // systemd's UNIT_NAME_MAX less the NUL

bool IsUnitChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == ':' || c == '-' ||
         c == '_' || c == '.' || c == '\\' || c == '@';
}

absl::Status Refuse(absl::string_view name, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("unit name \"", name, "\" ", why));
}

// name@instance.type: at most one '@', and an instance after it.
absl::Status CheckTemplate(absl::string_view name, absl::string_view stem) {
  const size_t at = stem.find('@');
  if (at == absl::string_view::npos) return absl::OkStatus();
  if (stem.find('@', at + 1) != absl::string_view::npos) return Refuse(name, "has two '@'");
  if (at + 1 == stem.size()) return Refuse(name, "is a template without an instance");
  return absl::OkStatus();
}

}  // namespace

absl::Status CheckSystemdUnitName(absl::string_view name,
                                  absl::Span<const absl::string_view> types) {
  if (name.empty()) return absl::InvalidArgumentError("empty unit name");
  if (name.size() > kMaxUnitName) {
    return absl::InvalidArgumentError(
        absl::StrCat("unit name longer than ", kMaxUnitName, " characters"));
  }
  for (char c : name) {
    if (!IsUnitChar(c)) {
      // The name itself is not repeated: it may hold anything.
      return absl::InvalidArgumentError(
          absl::StrCat("unit name has a character systemd refuses (byte 0x",
                       absl::Hex(static_cast<unsigned char>(c), absl::kZeroPad2), ")"));
    }
  }
  if (name[0] == '-' || name[0] == '.' || name[0] == '@') {
    return Refuse(name, "must start with a letter, digit, ':', '_' or '\\'");
  }
  const size_t dot = name.rfind('.');
  if (dot == absl::string_view::npos || dot == 0) return Refuse(name, "has no type suffix");
  const absl::string_view type = name.substr(dot + 1);
  if (std::find(types.begin(), types.end(), type) == types.end()) {
    return Refuse(name, absl::StrCat("has an unknown type \".", type, "\""));
  }
  return CheckTemplate(name, name.substr(0, dot));
}

bool IsSystemdUnitName(const std::string& name) {
  return CheckSystemdUnitName(name, kWatchedUnitTypes).ok();
}

}  // namespace cmax
