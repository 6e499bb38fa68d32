#include "common/secrets.h"

#include <errno.h>
#include <grp.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
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

namespace {

// The group a packaged token file belongs to (deploy/debian: 0640 root:cmax).
constexpr char kTokenGroup[] = "cmax";

// "readable", "readable and writable", ... for the rwx bits in `bits` (0..7).
std::string Access(unsigned bits) {
  std::vector<const char*> words;
  if (bits & 4) words.push_back("readable");
  if (bits & 2) words.push_back("writable");
  if (bits & 1) words.push_back("executable");
  return absl::StrJoin(words, " and ");
}

// The group's name from the group database, or "" when it has none.
std::string GroupName(gid_t gid) {
  std::vector<char> buf(1024);
  for (;;) {
    group gr;
    group* found = nullptr;
    int rc = getgrgid_r(gid, &gr, buf.data(), buf.size(), &found);
    if (rc == ERANGE && buf.size() < (1u << 20)) {
      buf.resize(buf.size() * 2);
      continue;
    }
    return rc == 0 && found != nullptr && found->gr_name != nullptr ? found->gr_name : "";
  }
}

}  // namespace

bool ProcessInGroup(gid_t gid) {
  if (getegid() == gid) return true;
  int n = getgroups(0, nullptr);
  if (n <= 0) return false;
  std::vector<gid_t> groups(static_cast<size_t>(n));
  n = getgroups(n, groups.data());
  for (int i = 0; i < n; ++i) {
    if (groups[static_cast<size_t>(i)] == gid) return true;
  }
  return false;
}

std::string TokenFileModeWarning(const std::string& path, unsigned mode, gid_t gid) {
  std::vector<std::string> problems;
  const unsigned others = mode & 07, group_bits = (mode >> 3) & 07;
  const std::string name = GroupName(gid);
  const std::string group =
      name.empty() ? absl::StrCat("group ", gid) : absl::StrCat("group ", name, " (gid ", gid, ")");
  if (others != 0) problems.push_back(absl::StrCat(Access(others), " by others"));
  if (group_bits & 2) problems.push_back(absl::StrCat("writable by ", group));
  if ((group_bits & 4) && !ProcessInGroup(gid) && name != kTokenGroup) {
    problems.push_back(absl::StrCat("readable by ", group,
                                    ", which is neither this process's group nor ",
                                    kTokenGroup));
  }
  if (problems.empty()) return "";
  return absl::StrFormat(
      "%s (mode %04o) is %s; chmod 600 %s, or chmod 640 %s and chown root:%s %s (the "
      "packaged layout)",
      path, mode & 07777, absl::StrJoin(problems, ", "), path, path, kTokenGroup, path);
}

absl::StatusOr<std::string> ReadTokenFile(const std::string& path, std::string* warning) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0) {
    if (st.st_size > 4096) return absl::InvalidArgumentError(absl::StrCat(path, ": token larger than 4 KiB"));
    if (warning) *warning = TokenFileModeWarning(path, st.st_mode, st.st_gid);
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
