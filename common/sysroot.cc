#include "common/sysroot.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"

namespace cmax {

Sysroot::Sysroot(std::string root) : root_(std::move(root)) {
  if (root_.empty()) root_ = "/";
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

std::string Sysroot::Path(const std::string& absolute) const {
  if (root_ == "/") return absolute;
  return absl::StrCat(root_, absolute.empty() || absolute[0] != '/' ? "/" : "", absolute);
}

absl::StatusOr<std::string> Sysroot::Read(const std::string& absolute) const {
  std::string path = Path(absolute);
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    int e = errno;
    std::string msg = absl::StrCat(path, ": ", strerror(e));
    if (e == ENOENT || e == ENOTDIR) return absl::NotFoundError(msg);
    if (e == EACCES || e == EPERM) return absl::PermissionDeniedError(msg);
    return absl::InternalError(msg);
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return absl::InternalError(absl::StrCat(path, ": read error"));
  return ss.str();
}

std::optional<std::string> Sysroot::ReadLine(const std::string& absolute) const {
  auto content = Read(absolute);
  if (!content.ok()) return std::nullopt;
  std::string line = content->substr(0, content->find('\n'));
  return std::string(absl::StripTrailingAsciiWhitespace(line));
}

bool Sysroot::Exists(const std::string& absolute) const {
  struct stat st;
  return stat(Path(absolute).c_str(), &st) == 0;
}

std::vector<std::string> Sysroot::List(const std::string& absolute) const {
  std::vector<std::string> names;
  DIR* dir = opendir(Path(absolute).c_str());
  if (!dir) return names;
  while (dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace cmax
