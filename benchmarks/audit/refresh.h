// `cmax-bench audit refresh`: builds the advisory table from the vendors' own
// machine-readable advisories.
//
// Inputs, one JSON document a file:
//   - CSAF 2.0 security advisories as NVIDIA publishes them
//     (github.com/NVIDIA/product-security, one <bulletin>.json per bulletin;
//     OASIS CSAF 2.0 §3.2: document.tracking, product_tree.branches,
//     vulnerabilities[].product_status / scores / remediations). NVIDIA's
//     product_version names carry the versions ("All driver versions prior to
//     570.133.07", "All versions up to and including 1.17.7", "1.17.8"), and
//     the architecture branch the driver branch ("Linux(R570)").
//   - OSV records (ossf.github.io/osv-schema: id, published, aliases,
//     affected[].package / ranges[].events, database_specific.severity,
//     references[]), as the GitHub Advisory Database and the Go vulnerability
//     database publish them.
// Each maps to one advisory per table component it names (products the audit
// does not judge are left out); the rest of the table (components, the driver
// branch table, advisories no document names) comes from a base table.
#ifndef CMAX_BENCHMARKS_AUDIT_REFRESH_H_
#define CMAX_BENCHMARKS_AUDIT_REFRESH_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "benchmarks/audit/advisories.h"

namespace cmax::audit {

// What one document said, mapped to table entries.
struct ParsedDocument {
  std::string format;                // "csaf" or "osv"
  std::string id;                    // "5659", "GHSA-v23v-6jw2-98fq"
  std::string url;                   // where the advisory is published
  std::vector<Advisory> advisories;  // one per judged component; may be empty
};

// Parses one document. INVALID_ARGUMENT (naming `source` and the missing or
// malformed field) when the text is not JSON, is truncated, or is neither a
// CSAF 2.0 advisory nor an OSV record with the fields the table needs.
absl::StatusOr<ParsedDocument> ParseAdvisoryDocument(const std::string& text,
                                                     const std::string& source);

struct RefreshResult {
  AdvisoryDb db;                      // base plus every parsed advisory
  std::vector<std::string> parsed;    // file names, sorted
  std::vector<std::string> skipped;   // "file: why", one per skipped document
};

// Reads every *.json file directly under `dir` (sorted by name), parses it
// and merges its advisories into `base` (an advisory with the same id
// replaces the base's). `today` ("YYYY-MM-DD") becomes `generated`; every
// parsed document is named in `sources`. NOT_FOUND / PERMISSION_DENIED when
// the directory cannot be listed; a document that does not parse is skipped
// and listed in `skipped`, never fatal.
absl::StatusOr<RefreshResult> RefreshFromDirectory(const std::string& dir, AdvisoryDb base,
                                                   const std::string& today);

// The table as YAML in the format ParseAdvisories reads (round-trips).
std::string FormatAdvisoryTable(const AdvisoryDb& db);

}  // namespace cmax::audit

#endif  // CMAX_BENCHMARKS_AUDIT_REFRESH_H_
