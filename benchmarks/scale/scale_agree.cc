// cmax-scale-agree: the 1-node and the N-node scorecards of the same
// per-node data (benchmarks/scale/same_data.h) agree on every node rule,
// verdict and reason, on the tier, and on every category's grade except
// where only fleet-wide rules grade it (issue 18). Prints the figures;
// exits 1 at the first disagreement, naming it. Simulated data; no I/O.
//   cmax-scale-agree [--nodes N] [--plan FILE] [--clean]
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "benchmarks/scale/measure.h"
#include "benchmarks/scale/same_data.h"
#include "common/args.h"
#include "common/plan_parser.h"
#include "reports/record_set.h"
#include "reports/scorecard.h"

int main(int argc, char** argv) {
  int64_t nodes = 10000;
  bool clean = false;
  std::string plan_file = CMAX_SOURCE_DIR "/benchmarks/scale/scale.yaml";
  cmax::ArgParser p("cmax-scale-agree [--nodes N] [--plan FILE] [--clean]",
                    "Builds the scorecard of one simulated node's data on 1 node and on N "
                    "nodes and checks that they agree rule by rule; exit 1 when not.");
  p.AddInt("nodes", &nodes, "nodes of the big card (default 10000)");
  p.AddString("plan", &plan_file, "the plan (default benchmarks/scale/scale.yaml)");
  p.AddFlag("clean", &clean,
            "no faults (by default every node has the simulator's slow GPU, flapping port "
            "and SDC digest, so that node rules fire)");
  cmax::ParseToolArgsOrExit(p, argc, argv);
  if (nodes < 2 || nodes > 100000) {
    std::fprintf(stderr, "--nodes must be 2 to 100000\n");
    return 2;
  }
  auto plan = cmax::LoadPlanFile(plan_file);
  if (!plan.ok()) {
    std::fprintf(stderr, "%s: %s\n", plan_file.c_str(), plan.status().ToString().c_str());
    return 2;
  }
  using cmax::scale::Clock;
  using cmax::scale::Seconds;
  const auto a = Clock::now();
  const cmax::v1::Scorecard one = cmax::reports::BuildScorecard(cmax::scale::SameDataOn(1, *plan, false, !clean));
  const auto b = Clock::now();
  cmax::reports::RunData data = cmax::scale::SameDataOn(static_cast<int>(nodes), *plan, true, !clean);
  const size_t records = cmax::reports::RecordCount(data);
  const auto c = Clock::now();
  const cmax::v1::Scorecard many = cmax::reports::BuildScorecard(std::move(data));
  const auto d = Clock::now();
  const cmax::scale::Agreement agree = cmax::scale::CompareOneToMany(one, many);
  std::printf("SIMULATED data: one node's records on every node (plan %s, %s)\n",
              plan->name().c_str(), clean ? "no faults" : "slow GPU, flapping port, SDC on each");
  std::printf("nodes                     1 | %lld\n", static_cast<long long>(nodes));
  std::printf("records                   %zu\n", records);
  std::printf("scorecard_s               %.2f | %.2f (data made in %.1f s)\n", Seconds(a, b),
              Seconds(c, d), Seconds(b, c));
  std::printf("peak_rss_mb               %.0f\n", cmax::scale::StatusKb("VmHWM") / 1024.0);
  std::printf("tier                      %s | %s\n", one.tier().c_str(), many.tier().c_str());
  std::printf("node_rules_compared       %d\n", agree.node_rules_compared);
  std::printf("node_rules_not_shown      %d (past a category's limit; in the reasons)\n",
              agree.node_rules_not_shown);
  std::printf("node_rules_differing      %d\n", agree.node_rules_differing);
  std::printf("nodes_missing_rules       %d\n", agree.nodes_missing_rules);
  std::printf("verdicts_differing        %d of %d\n", agree.verdicts_differing, many.nodes_size());
  std::printf("grades_differing          %d (%d of them fleet-only: not measured on one node)\n",
              agree.grades_differing, agree.grades_differing_allowed);
  if (!agree.ok()) {
    std::printf("DISAGREE: %s\n", agree.first_difference.c_str());
    // What each card says of the first node, to see where they part.
    for (const auto* card : {&one, &many}) {
      std::printf("-- the %d-node card, node %s: %s\n", card->nodes_size(),
                  card->nodes(0).node().c_str(), card->nodes(0).verdict().c_str());
      for (const auto& reason : card->nodes(0).reasons()) {
        std::printf("   reason: %.200s\n", reason.c_str());
      }
      for (const auto& c : card->categories()) {
        std::printf("   %s: %s\n", c.name().c_str(), c.grade().c_str());
        for (const auto& r : c.rules()) {
          if (!r.node().empty() && r.node() != card->nodes(0).node()) continue;
          std::printf("     %s %s %s %s: %.160s\n", r.node().empty() ? "fleet" : "node ",
                      r.rule_id().c_str(), r.outcome().c_str(), r.subject().c_str(),
                      r.message().c_str());
        }
      }
    }
    return 1;
  }
  std::printf("agree on every node rule, verdict and reason\n");
  return 0;
}
