#include "coordinator/ctl/history.h"

#include "common/record_io.h"
#include "coordinator/ctl/progress.h"
#include "reports/history.h"

namespace cmax::ctl {

std::string HistoryOutput(const v1::GetHistoryResponse& resp, bool node, bool json) {
  if (json) return ForTerminalJson(MessageToJsonLine(resp, true)) + "\n";
  return ForTerminal(node ? reports::RenderNodeHistoryText(resp.node())
                          : reports::RenderReliabilityText(resp.fleet()));
}

}  // namespace cmax::ctl
