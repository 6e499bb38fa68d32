// One simulated node's data on N nodes: the run a scorecard of N identical
// nodes is built from. The 1-node and N-node scorecards of it must agree on
// every node rule and verdict (issue 18; scale_test and cmax-scale-agree).
#ifndef CMAX_BENCHMARKS_SCALE_SAME_DATA_H_
#define CMAX_BENCHMARKS_SCALE_SAME_DATA_H_

#include <string>

#include "cmax/v1/plan.pb.h"
#include "cmax/v1/scorecard.pb.h"
#include "reports/run_data.h"

namespace cmax::scale {

// `nodes` simulated nodes ("sim00000" ...), each with node 0's inventory,
// every task of `plan` completed and node 0's records of it, all marked
// simulated. With `faulty` node 0 (and so every node) has the simulator's
// slow GPU, flapping port and SDC digest, so node rules fire; without, none
// does. With `compact` the records go into a RecordSet (run_data.h), as the
// coordinator holds a big run's; otherwise into RunData::records.
reports::RunData SameDataOn(int nodes, const v1::Plan& plan, bool compact, bool faulty = false);

// How the N-node card `many` agrees with the 1-node card `one`.
struct Agreement {
  int node_rules_compared = 0;   // node rules of `many` checked against `one`'s
  int node_rules_differing = 0;  // outcome, value, expected or unit differ
  int nodes_missing_rules = 0;   // (node, category)s whose rule count is not `one`'s
  // Node rules a category did not show past its limit (500 a category:
  // reports/scorecard.cc); the node's reasons still carry them.
  int node_rules_not_shown = 0;
  int verdicts_differing = 0;    // verdict or reasons differ (beyond the
                                 // node's name and an SDC suspect's peer count)
  // Categories graded differently. Allowed only where `one` is not measured
  // and `many` grades it on fleet rules alone (a single node has nothing to
  // compare with: inventory or version drift across nodes).
  int grades_differing = 0;
  int grades_differing_allowed = 0;
  bool tier_same = false;
  std::string first_difference;  // the first one found, for the operator
  bool ok() const {
    return tier_same && node_rules_differing == 0 && nodes_missing_rules == 0 &&
           verdicts_differing == 0 && grades_differing == grades_differing_allowed;
  }
};
Agreement CompareOneToMany(const v1::Scorecard& one, const v1::Scorecard& many);

}  // namespace cmax::scale

#endif  // CMAX_BENCHMARKS_SCALE_SAME_DATA_H_
