#include "common/secrets.h"

#include <sys/stat.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/sysroot.h"

namespace cmax {

absl::StatusOr<std::string> ReadSmallFile(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && st.st_size > (1 << 20)) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": larger than 1 MiB"));
  }
  return Sysroot("/").Read(path);
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path, std::string* warning) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0) {
    if (st.st_size > 4096) return absl::InvalidArgumentError(absl::StrCat(path, ": token larger than 4 KiB"));
    if (warning && (st.st_mode & 077)) {
      *warning = absl::StrCat(path, " is readable by group or others; chmod 600 it");
    }
  }
  auto content = Sysroot("/").Read(path);
  if (!content.ok()) return content.status();
  std::string token(absl::StripAsciiWhitespace(*content));
  if (token.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": token file is empty"));
  return token;
}

}  // namespace cmax
