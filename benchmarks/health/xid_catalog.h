// The Xid catalogue (data/xid_catalog.yaml): what each NVIDIA Xid means, how
// severe one occurrence is, and what an operator should do.
#ifndef CMAX_BENCHMARKS_HEALTH_XID_CATALOG_H_
#define CMAX_BENCHMARKS_HEALTH_XID_CATALOG_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "cmax/v1/record.pb.h"

namespace cmax::health {

struct XidInfo {
  int code = 0;
  std::string name;
  v1::Severity severity = v1::SEVERITY_WARN;
  std::string action;  // reboot | reset_gpu | drain_inspect | check_application
  std::string advice;
  std::string source;  // URL
};

class XidCatalog {
 public:
  // INVALID_ARGUMENT names the entry and field that is wrong.
  static absl::StatusOr<XidCatalog> Parse(const std::string& yaml_text);
  // The catalogue compiled into the binary.
  static absl::StatusOr<XidCatalog> LoadDefault();

  // The entry for `code`, or the "unknown" entry named "unknown Xid <code>".
  XidInfo Lookup(int code) const;
  bool Knows(int code) const { return xids_.count(code) > 0; }
  XidInfo ForSxid(int code, bool fatal) const;
  size_t size() const { return xids_.size(); }

 private:
  std::map<int, XidInfo> xids_;
  XidInfo unknown_;
  XidInfo sxid_fatal_;
  XidInfo sxid_non_fatal_;
};

// "reset GPU", "reboot", "drain and inspect hardware", "check the application".
std::string ActionWords(const std::string& action);
// A catalog entry's severity word is read by cmax::ParseSeverity
// (common/severity.h).

}  // namespace cmax::health

#endif  // CMAX_BENCHMARKS_HEALTH_XID_CATALOG_H_
