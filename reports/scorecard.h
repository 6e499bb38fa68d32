// Builds a run's scorecard from its data and renders it.
#ifndef CMAX_REPORTS_SCORECARD_H_
#define CMAX_REPORTS_SCORECARD_H_

#include <string>

#include "cmax/v1/scorecard.pb.h"
#include "reports/run_data.h"

namespace cmax::reports {

// Runs every judge and aggregates: category grades, node verdicts, tier.
v1::Scorecard BuildScorecard(const RunData& data);

std::string RenderJson(const v1::Scorecard& card);
std::string RenderMarkdown(const v1::Scorecard& card);
std::string RenderHtml(const v1::Scorecard& card);

}  // namespace cmax::reports

#endif  // CMAX_REPORTS_SCORECARD_H_
