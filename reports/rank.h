// The league table of `cmaxctl rank` (RULES.md, "Ranking"): scorecards of
// different clusters, maybe from different coordinators, ordered by the
// written rules, ties explained, and a second order by cost per delivered
// BF16 PFLOP-hour. Pure functions.
#ifndef CMAX_REPORTS_RANK_H_
#define CMAX_REPORTS_RANK_H_

#include <string>
#include <vector>

#include "cmax/v1/scorecard.pb.h"

namespace cmax::reports {

struct RankInput {
  std::string cluster;             // shown name (file name without .json by default)
  v1::Scorecard card;
  double price_per_gpu_hour = 0;   // 0: the card's own cost price, if any
};

// The rules, in the order they are applied (also printed by every rendering).
const std::vector<std::string>& RankRules();

// One entry per input, best first, positions 1..n with ties sharing one.
v1::RankTable RankClusters(const std::vector<RankInput>& inputs);

std::string RenderRankText(const v1::RankTable& table);
std::string RenderRankJson(const v1::RankTable& table);
// GitHub-flavoured Markdown; every text from the data is escaped.
std::string RenderRankMarkdown(const v1::RankTable& table);

}  // namespace cmax::reports

#endif  // CMAX_REPORTS_RANK_H_
