// Inline-SVG drawings of the scorecard's charts (reports/charts.h) and of
// its node x category grid, for reports/render_html.cc. Every text from the
// data is escaped (svg.h); every mark carries a <title>.
#ifndef CMAX_REPORTS_HTML_CHART_SVG_H_
#define CMAX_REPORTS_HTML_CHART_SVG_H_

#include <string>

#include "cmax/v1/scorecard.pb.h"

namespace cmax::reports {

// The chart as a <figure> with its SVG, caption and (where the SVG cannot
// carry them all) a short HTML list of named outliers or line colours.
std::string ChartFigure(const v1::Chart& chart);

// The node x category grid as a <figure>; one row per node up to
// kMaxGridRows nodes, else one row per distinct pattern of outcomes with its
// node count ("812 nodes: ..."). Empty when the card has no nodes.
inline constexpr int kMaxGridRows = 64;
std::string NodeGridFigure(const v1::Scorecard& card);

// The id of a node's anchor: "node-" and the name with every character
// outside [A-Za-z0-9._-] replaced by '_'.
std::string NodeAnchor(const std::string& node);

}  // namespace cmax::reports

#endif  // CMAX_REPORTS_HTML_CHART_SVG_H_
