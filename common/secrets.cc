#include "common/secrets.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "common/fnv1a.h"
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

bool SameSecret(const std::string& given, const std::string& want) {
  if (want.empty()) return false;
  unsigned char diff = given.size() != want.size() ? 1 : 0;
  for (size_t i = 0; i < want.size(); ++i) {
    diff |= static_cast<unsigned char>((i < given.size() ? given[i] : 0) ^ want[i]);
  }
  return diff == 0;
}

absl::StatusOr<std::string> RandomHex(size_t bytes) {
  std::vector<unsigned char> buf(bytes);
  size_t got = 0;
  while (got < bytes) {
    ssize_t n = getrandom(buf.data() + got, bytes - got, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return absl::InternalError(absl::StrCat("getrandom: ", strerror(errno)));
    got += static_cast<size_t>(n);
  }
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * bytes);
  for (unsigned char b : buf) {
    out.push_back(kHex[b >> 4]);
    out.push_back(kHex[b & 15]);
  }
  return out;
}

std::string RandomId(size_t bytes) {
  if (auto hex = RandomHex(bytes); hex.ok()) return *std::move(hex);
  static std::atomic<uint64_t> counter{0};
  std::string out;
  for (uint64_t block = 0; out.size() < 2 * bytes; ++block) {
    timespec ts{};
    clock_gettime(CLOCK_REALTIME, &ts);
    const uint64_t parts[] = {static_cast<uint64_t>(ts.tv_sec), static_cast<uint64_t>(ts.tv_nsec),
                              static_cast<uint64_t>(getpid()), counter.fetch_add(1), block};
    Fnv1a64 h;
    h.Update(parts, sizeof(parts));
    out += h.Hex();
  }
  out.resize(2 * bytes);
  return out;
}

}  // namespace cmax
