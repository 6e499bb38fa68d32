// Placeholder until the rule engine lands: builds the skeleton of a scorecard.
#include "reports/scorecard.h"

#include "common/record_io.h"

namespace cmax::reports {

v1::Scorecard BuildScorecard(const RunData& data) {
  v1::Scorecard card;
  card.set_run_id(data.run.run_id());
  card.set_plan(data.plan.name());
  card.set_tier("not rated");
  return card;
}

std::string RenderJson(const v1::Scorecard& card) { return MessageToJsonLine(card, true); }
std::string RenderMarkdown(const v1::Scorecard& card) { return "# cmax scorecard\n"; }
std::string RenderHtml(const v1::Scorecard& card) { return "<html></html>"; }

}  // namespace cmax::reports
