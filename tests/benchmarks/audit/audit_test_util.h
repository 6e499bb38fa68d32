// Helpers for the audit tests: fixture paths, PATH pointed at a fixture bin
// folder, and lookups in a report.
#ifndef CMAX_TESTS_BENCHMARKS_AUDIT_AUDIT_TEST_UTIL_H_
#define CMAX_TESTS_BENCHMARKS_AUDIT_AUDIT_TEST_UTIL_H_

#include <cstdlib>
#include <string>

#include "benchmarks/audit/audit.h"

namespace cmax::audit::testing {

inline std::string Fixture(const std::string& rel) {
  return std::string(CMAX_SOURCE_DIR) + "/tests/fixtures/audit/" + rel;
}

inline std::string ShippedAdvisories() {
  return std::string(CMAX_SOURCE_DIR) + "/benchmarks/audit/data/advisories.yaml";
}

// Sets PATH to exactly `dir` for its lifetime (fake commands only).
class ScopedPath {
 public:
  explicit ScopedPath(const std::string& dir) {
    const char* old = std::getenv("PATH");
    had_ = old != nullptr;
    if (had_) old_ = old;
    setenv("PATH", dir.c_str(), 1);
  }
  ~ScopedPath() {
    if (had_) {
      setenv("PATH", old_.c_str(), 1);
    } else {
      unsetenv("PATH");
    }
  }

 private:
  bool had_ = false;
  std::string old_;
};

inline const CheckResult* FindCheck(const AuditReport& r, const std::string& check_id,
                                    const std::string& subject = "") {
  for (const auto& c : r.checks) {
    if (c.check_id == check_id && (subject.empty() || c.subject == subject)) return &c;
  }
  return nullptr;
}

inline const ComponentVersion* FindVersion(const AuditReport& r, const std::string& component) {
  for (const auto& v : r.versions) {
    if (v.component == component) return &v;
  }
  return nullptr;
}

// Runs the audit on a fixture root with fake commands from bin/<bin_dir>.
inline AuditReport AuditFixture(const std::string& root, const std::string& bin_dir,
                                const AdvisoryDb& db, Tenancy tenancy = Tenancy::kUnspecified,
                                const std::string& today = "2025-10") {
  ScopedPath path(Fixture("bin/" + bin_dir));
  AuditOptions options;
  options.root = root;
  options.tenancy = tenancy;
  options.today_ym = today;
  options.command_timeout = std::chrono::milliseconds(5000);
  return RunAuditChecks(options, db);
}

}  // namespace cmax::audit::testing

#endif  // CMAX_TESTS_BENCHMARKS_AUDIT_AUDIT_TEST_UTIL_H_
