#include "benchmarks/storage/work_dir.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/allowed_files.h"

namespace cmax::storage {
namespace {

std::string RealPath(const std::string& path) {
  char buf[PATH_MAX];
  if (!realpath(path.c_str(), buf)) return "";
  return buf;
}

std::string Parent(const std::string& path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos || slash == 0) return "/";
  return path.substr(0, slash);
}

std::string Base(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// Removes everything inside the directory `fd` (closed on return).
absl::Status RemoveContents(int fd, const std::string& where) {
  DIR* d = fdopendir(fd);
  if (!d) {
    int e = errno;
    close(fd);
    return absl::InternalError(absl::StrCat("opendir ", where, ": ", strerror(e)));
  }
  absl::Status result;
  while (dirent* ent = readdir(d)) {
    std::string name = ent->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (fstatat(dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    std::string path = absl::StrCat(where, "/", name);
    if (S_ISDIR(st.st_mode)) {
      int sub = openat(dirfd(d), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0) {
        result.Update(absl::InternalError(absl::StrCat("open ", path, ": ", strerror(errno))));
        continue;
      }
      result.Update(RemoveContents(sub, path));
      if (unlinkat(dirfd(d), name.c_str(), AT_REMOVEDIR) != 0) {
        result.Update(absl::InternalError(absl::StrCat("rmdir ", path, ": ", strerror(errno))));
      }
    } else if (unlinkat(dirfd(d), name.c_str(), 0) != 0) {
      result.Update(absl::InternalError(absl::StrCat("unlink ", path, ": ", strerror(errno))));
    }
  }
  closedir(d);
  return result;
}

absl::Status FindSymlink(int fd, const std::string& where) {
  DIR* d = fdopendir(fd);
  if (!d) {
    close(fd);
    return absl::OkStatus();
  }
  absl::Status result;
  while (dirent* ent = readdir(d)) {
    std::string name = ent->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (fstatat(dirfd(d), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
    std::string path = absl::StrCat(where, "/", name);
    if (S_ISLNK(st.st_mode)) {
      char target[PATH_MAX];
      ssize_t n = readlinkat(dirfd(d), name.c_str(), target, sizeof(target) - 1);
      target[n > 0 ? n : 0] = '\0';
      result = absl::FailedPreconditionError(absl::StrCat(
          "refusing to follow the symbolic link ", path, " -> ", target,
          " (the suite only reads and writes files inside its own directory)"));
      break;
    }
    if (S_ISDIR(st.st_mode)) {
      int sub = openat(dirfd(d), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0) {
        result = FindSymlink(sub, path);
        if (!result.ok()) break;
      }
    }
  }
  closedir(d);
  return result;
}

}  // namespace

absl::StatusOr<std::string> ResolveBase(const std::string& path) {
  // Under the agent's storage roots (created there when missing), never a
  // system directory: common/allowed_files.h.
  absl::StatusOr<std::string> allowed = CheckStorageDir(path, DirsFromEnv(kStorageRootsEnv));
  if (!allowed.ok()) return allowed.status();
  std::string real = *allowed;
  struct stat st;
  if (stat(real.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat("--path ", path, " is not a directory"));
  }
  if (access(real.c_str(), W_OK | X_OK) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("--path ", path, " is not writable: ", strerror(errno)));
  }
  if (real.find(':') != std::string::npos) {
    // fio splits its directory= option at ':'.
    return absl::FailedPreconditionError(
        absl::StrCat("--path ", real, " contains ':', which fio reads as a list separator"));
  }
  return real;
}

absl::StatusOr<std::string> CreateWorkDir(const std::string& base, const std::string& node) {
  std::string clean;
  for (char c : node) {
    clean.push_back(absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' ||
                            c == '-'
                        ? c
                        : '_');
  }
  if (clean.empty()) clean = "node";
  std::string dir = absl::StrCat(base, "/", kWorkDirPrefix, clean, "-", getpid());
  if (mkdir(dir.c_str(), 0700) != 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot create the work directory ", dir, ": ", strerror(errno)));
  }
  struct stat st;
  std::string real = RealPath(dir);
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || real != dir) {
    rmdir(dir.c_str());
    return absl::FailedPreconditionError(
        absl::StrCat("the work directory ", dir, " is not a plain directory inside ", base));
  }
  return dir;
}

absl::StatusOr<std::string> CheckOwnDir(const std::string& base, const std::string& dir) {
  std::string path = dir.empty() || dir[0] == '/' ? dir : absl::StrCat(base, "/", dir);
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    return absl::FailedPreconditionError(absl::StrCat(path, ": ", strerror(errno)));
  }
  if (S_ISLNK(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "refusing ", path, ": it is a symbolic link (to ", RealPath(path), "), not a directory"));
  }
  if (!S_ISDIR(st.st_mode)) {
    return absl::FailedPreconditionError(absl::StrCat(path, " is not a directory"));
  }
  std::string real = RealPath(path);
  if (Parent(real) != base || !absl::StartsWith(Base(real), kWorkDirPrefix)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "refusing ", path, ": not a ", kWorkDirPrefix, "* directory directly inside ", base));
  }
  return real;
}

absl::Status CheckNoSymlinks(const std::string& dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    return absl::FailedPreconditionError(absl::StrCat("open ", dir, ": ", strerror(errno)));
  }
  return FindSymlink(fd, dir);
}

absl::Status RemoveTree(const std::string& dir) {
  int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return absl::OkStatus();
    if (errno == ELOOP || errno == ENOTDIR) {  // a link or file: remove the entry only
      if (unlink(dir.c_str()) == 0) return absl::OkStatus();
    }
    return absl::InternalError(absl::StrCat("open ", dir, ": ", strerror(errno)));
  }
  absl::Status s = RemoveContents(fd, dir);
  if (rmdir(dir.c_str()) != 0) {
    s.Update(absl::InternalError(absl::StrCat("rmdir ", dir, ": ", strerror(errno))));
  }
  return s;
}

std::string NodeOfWorkDir(const std::string& dir_name) {
  std::string name = Base(dir_name);
  if (!absl::StartsWith(name, kWorkDirPrefix)) return "";
  std::string rest = name.substr(sizeof(kWorkDirPrefix) - 1);
  size_t dash = rest.rfind('-');
  if (dash == std::string::npos || dash == 0 || dash + 1 == rest.size()) return "";
  for (size_t i = dash + 1; i < rest.size(); ++i) {
    if (!absl::ascii_isdigit(static_cast<unsigned char>(rest[i]))) return "";
  }
  return rest.substr(0, dash);
}

}  // namespace cmax::storage
