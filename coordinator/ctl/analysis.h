// cmaxctl commands that read scorecards rather than drive runs: compare,
// baseline save and rank (reports/compare.h, baseline.h, rank.h). compare
// and baseline fetch scorecards from the coordinator (GetReport, format
// json) unless given files; rank reads files only.
#ifndef CMAX_COORDINATOR_CTL_ANALYSIS_H_
#define CMAX_COORDINATOR_CTL_ANALYSIS_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "cmax/v1/scorecard.pb.h"
#include "coordinator/ctl/client.h"

namespace cmax::ctl {

// Exit codes: 0 no regression, 1 regressions found, 2 usage or unreadable
// input, 3 coordinator unreachable.
int CmdCompare(const ClientOptions& options, const std::vector<std::string>& args);
// Exit codes: 0 written, 1 cannot write, 2 usage, 3 coordinator unreachable.
int CmdBaseline(const ClientOptions& options, const std::vector<std::string>& args);
// Exit codes: 0 printed, 1 cannot write, 2 usage or unreadable input.
int CmdRank(const std::vector<std::string>& args);

// A scorecard exported as JSON (cmaxctl report RUN --format json). Unknown
// fields are accepted (a newer cmax may have added some).
absl::StatusOr<v1::Scorecard> ParseScorecardJson(const std::string& text,
                                                 const std::string& source);

}  // namespace cmax::ctl

#endif  // CMAX_COORDINATOR_CTL_ANALYSIS_H_
