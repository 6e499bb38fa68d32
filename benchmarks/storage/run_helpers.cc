#include "benchmarks/storage/run_helpers.h"

#include <sys/stat.h>

#include "absl/strings/str_format.h"

namespace cmax::storage {

std::string HumanBytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (b >= 1024 && u < 5) {
    b /= 1024;
    ++u;
  }
  return absl::StrFormat("%.1f %s", b, units[u]);
}

std::string Tail(const std::string& s, size_t n) {
  return s.size() <= n ? s : s.substr(s.size() - n);
}

bool FileSize(const std::string& path, int64_t* size) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  *size = st.st_size;
  return true;
}

v1::Finding MakeFinding(const std::string& check_id, v1::Severity severity,
                        const std::string& subject, const std::string& title,
                        const std::string& detail) {
  v1::Finding f;
  f.set_check_id(check_id);
  f.set_severity(severity);
  f.set_category("storage");
  f.set_subject(subject);
  f.set_title(title);
  f.set_detail(detail);
  return f;
}

}  // namespace cmax::storage
