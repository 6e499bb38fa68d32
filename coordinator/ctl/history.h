// What `cmaxctl history [NODE] [--json]` prints (docs/history.md): a node's
// history or the fleet's, rendered by reports/history.h. Every string in it
// came from agents' records (finding titles, reasons, rule ids, node names,
// messages), so the whole text passes ForTerminal (progress.h), the filter
// `run` and `report` use, and JSON passes ForTerminalJson.
#ifndef CMAX_COORDINATOR_CTL_HISTORY_H_
#define CMAX_COORDINATOR_CTL_HISTORY_H_

#include <string>

#include "cmax/v1/history.pb.h"

namespace cmax::ctl {

// `node`: the request named a node (resp.node()), else the fleet
// (resp.fleet()). `json`: one JSON object (GetHistoryResponse), pretty.
std::string HistoryOutput(const v1::GetHistoryResponse& resp, bool node, bool json);

}  // namespace cmax::ctl

#endif  // CMAX_COORDINATOR_CTL_HISTORY_H_
