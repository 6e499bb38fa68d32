// The advisory table the audit checks versions against: a YAML file shipped
// in the repository (benchmarks/audit/data/advisories.yaml, installed as
// share/cmax/advisories.yaml) and replaceable with --advisories.
//
// An advisory says which versions of one component are vulnerable:
//   - `introduced`: versions below it are not affected (optional);
//   - `fixed`: upstream's fixed versions, one per maintained branch (a
//     "ladder": runc 1.2.8 / 1.3.3 / 1.4.0-rc.3). A version is fixed when it is
//     at or above the fixed version of its own branch (major.minor; the major
//     number for drivers), or at or above every listed fix when its branch has
//     none. A version on an older branch with no fix is vulnerable.
//   - `distributions`: fixed package versions where distributions backported
//     the fix ("debian/bookworm": "1.1.5+ds1-1+deb12u1"), compared with the
//     distribution's own scheme (debian or rpm).
// The file also holds the NVIDIA driver branch table (supported and
// end-of-life branches, each with its source).
#ifndef CMAX_BENCHMARKS_AUDIT_ADVISORIES_H_
#define CMAX_BENCHMARKS_AUDIT_ADVISORIES_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/audit/version.h"

namespace cmax::audit {

// What the table knows about a component.
struct ComponentInfo {
  std::string id;        // "runc", "container_toolkit", "driver", ...
  std::string name;      // "runc", "NVIDIA Container Toolkit"
  VersionScheme scheme = VersionScheme::kSemver;
  // True when Linux distributions ship their own (possibly backported)
  // package of it, so a distribution package must be compared with the
  // distribution's fixed version, not upstream's.
  bool distribution_packages = false;
  std::string upgrade_url;
};

struct Advisory {
  std::string id;         // "NVIDIA-5659", "GHSA-xr7r-f8xq-vfvv"
  std::string component;  // a ComponentInfo id
  std::vector<std::string> cves;
  std::string severity;   // low, medium, high, critical
  std::string introduced;               // optional
  std::vector<std::string> fixed;       // upstream fixed versions
  std::map<std::string, std::string> distributions;  // "debian/bookworm" -> version
  std::string url;        // the advisory
  std::string upgrade_url;
  std::vector<std::string> links;       // more references
  std::string description;
  std::string remediation;
  // The first publication date, "YYYY-MM-DD" (CSAF initial_release_date, OSV
  // published); empty when the source does not say. The grace period counts
  // from it.
  std::string published;
  // The affected ranges as the source states them, one per branch:
  // "< 570.133.07", "<= 1.17.7", ">= 24.0.0 (no fix)". A range whose
  // branch has no fixed version marks that branch unfixed.
  std::vector<std::string> affected;
  int line = 0;           // 1-based line in the file
};

struct DriverBranchInfo {
  int branch = 0;
  std::string designation;  // "LTSB", "PB", "NFB"
  std::string status;       // "supported" or "eol"
  std::string eol;          // "YYYY-MM" (end of that month), empty when unknown
  std::string source;       // URL
};

struct AdvisoryDb {
  std::string path;
  std::map<std::string, ComponentInfo> components;
  std::vector<Advisory> advisories;
  std::vector<DriverBranchInfo> driver_branches;
  std::string driver_table_as_of;   // what date the branch table reflects
  std::string driver_table_source;
  // When the table was generated, "YYYY-MM-DD" (empty: undated, e.g. a
  // hand-written table without `generated:`), and what it was built from.
  std::string generated;
  std::vector<std::string> sources;
  // Set when the table could not be loaded (empty otherwise): every version
  // check is then UNKNOWN with this reason, never a pass.
  std::string error;
};

// Parses the YAML text; `source` names it in errors. INVALID_ARGUMENT names
// the file, line and column, and the advisory's index and id.
absl::StatusOr<AdvisoryDb> ParseAdvisories(const std::string& text, const std::string& source);
// Reads and parses a file (NOT_FOUND when it does not exist).
absl::StatusOr<AdvisoryDb> LoadAdvisories(const std::string& path);

// The installed table: <dir of the running binary>/../share/cmax/advisories.yaml,
// else the source tree's copy (when built from one); empty when neither exists.
std::string DefaultAdvisoriesPath();

// The branch entry for `branch`, or nullptr.
const DriverBranchInfo* FindDriverBranch(const AdvisoryDb& db, int branch);

}  // namespace cmax::audit

#endif  // CMAX_BENCHMARKS_AUDIT_ADVISORIES_H_
