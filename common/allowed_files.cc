#include "common/allowed_files.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "re2/re2.h"

namespace cmax {
namespace {

std::string RealPath(const std::string& path) {
  char buf[PATH_MAX];
  if (realpath(path.c_str(), buf) == nullptr) return "";
  return buf;
}

// `path` is `dir` or lies under it (both resolved, no trailing slash but "/").
bool Under(const std::string& path, const std::string& dir) {
  if (dir == "/") return true;
  return path == dir || absl::StartsWith(path, dir + "/");
}

std::string StripTrailingSlashes(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

}  // namespace

std::optional<std::vector<std::string>> DirsFromEnv(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr) return std::nullopt;
  std::vector<std::string> out;
  for (absl::string_view d : absl::StrSplit(v, ',', absl::SkipWhitespace())) {
    out.push_back(StripTrailingSlashes(std::string(d)));
  }
  return out;
}

namespace {

// realpath, absolute, and under `allowed` when set. Returns the resolved path.
absl::StatusOr<std::string> ResolvePlanFile(const std::string& what, const std::string& path,
                                            const std::optional<std::vector<std::string>>& allowed) {
  if (path.empty() || path[0] != '/') {
    return absl::InvalidArgumentError(absl::StrCat(what, ": must be an absolute path"));
  }
  const std::string real = RealPath(path);
  if (real.empty()) {
    const int err = errno;
    std::string msg = absl::StrCat(what, ": ", strerror(err));
    return err == ENOENT ? absl::NotFoundError(msg) : absl::PermissionDeniedError(msg);
  }
  if (allowed.has_value()) {
    bool inside = false;
    for (const std::string& dir : *allowed) {
      const std::string rdir = RealPath(dir);
      if (!rdir.empty() && Under(real, rdir)) inside = true;
    }
    if (!inside) {
      return absl::PermissionDeniedError(absl::StrCat(
          what, (real != path ? absl::StrCat(" (resolves to ", real, ")") : ""),
          " is outside the directories this agent lets plans name (", kAllowReadEnv, "=",
          absl::StrJoin(*allowed, ","),
          ", the agent's --allow-read); put the file there (health thresholds can also be given "
          "inline with --set)"));
    }
  }
  return real;
}

// Regular, world-readable when `allowed` is set, at most `max_bytes`.
absl::Status CheckPlanFileStat(const std::string& what, const struct stat& st,
                               bool restricted, size_t max_bytes) {
  if (!S_ISREG(st.st_mode)) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": not a regular file (a device, FIFO, socket or directory)"));
  }
  if (restricted && (st.st_mode & S_IROTH) == 0) {
    return absl::PermissionDeniedError(absl::StrCat(
        what, ": readable by its owner or group only (mode ",
        absl::StrFormat("%04o", st.st_mode & 07777),
        "); a file a plan names must be readable by everyone (it is configuration, "
        "not a secret)"));
  }
  if (st.st_size < 0 || static_cast<uint64_t>(st.st_size) > max_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(what, ": ", st.st_size,
                                                   " bytes, more than the limit of ",
                                                   max_bytes, " bytes"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::string> CheckPlanFile(const std::string& flag, const std::string& path,
                                          const std::optional<std::vector<std::string>>& allowed,
                                          size_t max_bytes) {
  const std::string what = absl::StrCat("--", flag, " ", path);
  absl::StatusOr<std::string> real = ResolvePlanFile(what, path, allowed);
  if (!real.ok()) return real.status();
  struct stat st;
  if (stat(real->c_str(), &st) != 0) {
    return absl::PermissionDeniedError(absl::StrCat(what, ": ", strerror(errno)));
  }
  if (absl::Status s = CheckPlanFileStat(what, st, allowed.has_value(), max_bytes); !s.ok()) {
    return s;
  }
  return real;
}

absl::StatusOr<std::string> ReadPlanFile(const std::string& flag, const std::string& path,
                                         const std::optional<std::vector<std::string>>& allowed,
                                         size_t max_bytes) {
  const std::string what = absl::StrCat("--", flag, " ", path);
  absl::StatusOr<std::string> resolved = ResolvePlanFile(what, path, allowed);
  if (!resolved.ok()) return resolved.status();
  const std::string& real = *resolved;
  int fd = open(real.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    return absl::PermissionDeniedError(absl::StrCat(what, ": ", strerror(errno)));
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    const int err = errno;
    close(fd);
    return absl::PermissionDeniedError(absl::StrCat(what, ": ", strerror(err)));
  }
  if (absl::Status s = CheckPlanFileStat(what, st, allowed.has_value(), max_bytes); !s.ok()) {
    close(fd);
    return s;
  }
  // Bounded read: never more than max_bytes + 1, whatever the file claims.
  std::string out;
  out.resize(max_bytes + 1);
  size_t got = 0;
  while (got < out.size()) {
    ssize_t n = read(fd, &out[got], out.size() - got);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      close(fd);
      return absl::PermissionDeniedError(absl::StrCat(what, ": read: ", strerror(err)));
    }
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  close(fd);
  if (got > max_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, ": grew past the limit of ", max_bytes, " bytes while read"));
  }
  out.resize(got);
  return out;
}

std::string ParseErrorWithoutContent(const std::string& flag, const std::string& path,
                                     const std::string& what, const absl::Status& error) {
  const std::string msg(error.message());
  int line = 0, column = 0;
  // yaml-cpp: "yaml-cpp: error at line 3, column 5: ..."; cmax parsers:
  // "<source>:3:5: ...".
  if (!RE2::PartialMatch(msg, R"(line (\d+), column (\d+))", &line, &column)) {
    std::string quoted = RE2::QuoteMeta(path);
    if (!RE2::PartialMatch(msg, quoted + R"(:(\d+):(\d+))", &line, &column)) {
      line = column = 0;
    }
  }
  std::string where = line > 0 ? absl::StrCat(" (line ", line, ", column ", column, ")") : "";
  return absl::StrCat("--", flag, " ", path, ": not a valid ", what, where,
                      "; the file's content is not quoted here: run the suite by hand on the node "
                      "(without CMAX_ALLOW_READ) for the parser's own message");
}

bool IsSystemDirectory(const std::string& resolved, const std::vector<std::string>& allowed_roots) {
  if (resolved == "/") return true;
  static const char* kSystem[] = {"/bin", "/boot", "/dev",  "/etc",  "/lib", "/lib32", "/lib64",
                                  "/libx32", "/proc", "/run", "/sbin", "/sys", "/usr"};
  for (const char* s : kSystem) {
    if (Under(resolved, s)) return true;
  }
  if (Under(resolved, "/var/lib")) {
    for (const std::string& r : allowed_roots) {
      const std::string rr = RealPath(r);
      if (!rr.empty() && rr != "/var/lib" && Under(resolved, rr)) return false;
    }
    return true;
  }
  return false;
}

absl::StatusOr<std::string> CheckStorageDir(const std::string& path_in,
                                            const std::optional<std::vector<std::string>>& roots,
                                            bool create) {
  const std::string path = StripTrailingSlashes(path_in);
  if (path.empty() || path[0] != '/') {
    return absl::FailedPreconditionError(
        absl::StrCat("--path must be an absolute directory, got '", path_in, "'"));
  }
  for (absl::string_view c : absl::StrSplit(path, '/')) {
    if (c == "..") {
      return absl::FailedPreconditionError(
          absl::StrCat("--path ", path, ": '..' is not allowed in the path"));
    }
  }
  std::vector<std::string> allowed_roots = roots.value_or(std::vector<std::string>{});
  if (roots.has_value()) {
    const std::string* root = nullptr;
    for (const std::string& r : *roots) {
      if (!r.empty() && r[0] == '/' && Under(path, StripTrailingSlashes(r))) root = &r;
    }
    if (root == nullptr) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--path ", path, " is outside the storage roots this agent allows (",
          kStorageRootsEnv, "=", absl::StrJoin(*roots, ","),
          ", the agent's --storage-roots); leave path out to use ",
          roots->empty() ? "the agent's storage dir" : (*roots)[0]));
    }
    // Create what is missing below the root, one component at a time, and
    // never through a symbolic link.
    std::string cur = StripTrailingSlashes(*root);
    struct stat st;
    if (lstat(cur.c_str(), &st) != 0) {
      return absl::FailedPreconditionError(
          absl::StrCat("storage root ", cur, ": ", strerror(errno)));
    }
    std::string rest = path.substr(cur.size());
    for (absl::string_view c : absl::StrSplit(rest, '/', absl::SkipEmpty())) {
      if (c == ".") continue;
      cur = absl::StrCat(cur == "/" ? "" : cur, "/", c);
      if (lstat(cur.c_str(), &st) != 0) {
        if (errno == ENOENT && !create) {
          // The suite creates the rest; the system check on the words alone.
          if (IsSystemDirectory(path, allowed_roots)) {
            return absl::FailedPreconditionError(absl::StrCat(
                "--path ", path, " is a system directory; storage runs never write there"));
          }
          return path;
        }
        if (errno != ENOENT || mkdir(cur.c_str(), 0700) != 0 || lstat(cur.c_str(), &st) != 0) {
          return absl::FailedPreconditionError(
              absl::StrCat("--path ", path, ": cannot create ", cur, ": ", strerror(errno)));
        }
      }
      if (S_ISLNK(st.st_mode) || !S_ISDIR(st.st_mode)) {
        return absl::FailedPreconditionError(absl::StrCat(
            "--path ", path, ": ", cur, " is ",
            S_ISLNK(st.st_mode) ? "a symbolic link" : "not a directory", " inside the root"));
      }
    }
  }
  const std::string real = RealPath(path);
  if (real.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("--path ", path, ": ", strerror(errno)));
  }
  if (roots.has_value()) {
    bool inside = false;
    for (const std::string& r : *roots) {
      const std::string rr = RealPath(r);
      if (!rr.empty() && Under(real, rr)) inside = true;
    }
    if (!inside) {
      return absl::FailedPreconditionError(absl::StrCat(
          "--path ", path, " resolves to ", real, ", outside the storage roots this agent "
          "allows (", kStorageRootsEnv, "=", absl::StrJoin(*roots, ","), ")"));
    }
  }
  if (IsSystemDirectory(real, allowed_roots)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--path ", path, (real != path ? absl::StrCat(" (", real, ")") : ""),
        " is a system directory; storage runs never write there"));
  }
  return real;
}

}  // namespace cmax
