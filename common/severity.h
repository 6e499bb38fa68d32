// The names of a finding's severity (cmax.v1.Severity, proto/cmax/v1/
// record.proto): "info", "warn", "fail", "critical". One table in
// common/severity.cc gives both directions, so a name written by a suite, a
// catalog (the health suite's XID catalog) or a report reads back as the
// same severity.
#ifndef CMAX_COMMON_SEVERITY_H_
#define CMAX_COMMON_SEVERITY_H_

#include <string>
#include <string_view>

#include "cmax/v1/record.pb.h"

namespace cmax {

// "info", "warn", "fail", "critical"; "unspecified" for SEVERITY_UNSPECIFIED
// and any value the enum does not name. (Also declared in
// common/record_io.h, which keeps its declaration; this is its definition.)
std::string SeverityName(v1::Severity severity);

// The severity named `word` (exactly one of SeverityName's lower-case names);
// SEVERITY_UNSPECIFIED for any other word, "unspecified" included, so a
// caller refuses it with its own context.
v1::Severity ParseSeverity(std::string_view word);

}  // namespace cmax

#endif  // CMAX_COMMON_SEVERITY_H_
