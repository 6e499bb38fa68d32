// Collective judge (RULES.md, "Collectives"): bus bandwidth of the
// collective suite's runs at their largest size, never the link speed.
//
// A run is one task's busbw_gbps measurements for one op, dtype and backend
// (labels op, dtype, backend, size_bytes, placement, nodes = comma list of
// the group's nodes, group_size = their number, ranks). Its figure is the
// out-of-place busbw at its largest size (nccl-tests practice: bandwidth is
// read at large sizes, where latency no longer counts).
//
//  1. Expectation: plan expect.metrics "busbw_gbps" applies to every run,
//     "busbw_gbps.<op>" applies to every
//     run of that op; "busbw_gbps.<op>.node" (one-node runs, NVLink) and
//     "busbw_gbps.<op>.multinode" (runs over several nodes) override it.
//     Below -> fail, naming the node of a one-node run, both nodes of a
//     pair, or the group. A floor with no run -> not_measured. (The generic
//     expectations judge leaves busbw_gbps keys to this judge: it would
//     compare every size, and small sizes are latency-bound.)
//  2. One-node runs across the fleet: low outliers (stats.h FindOutliers,
//     Tukey fences) per op, dtype, backend and rank count -> warn (mild) or
//     fail (extreme), naming the node.
//  3. Pairs (runs over exactly two nodes, the pairs scope): a pairing is
//     slow when it is below the expectation, a low outlier among the
//     pairings, or more than 20% below their upper quartile (the quartile
//     still describes healthy pairs when one bad node drags half of them
//     down, where Tukey fences lose their power). A node with at least two
//     pairings that are all slow is named (fail); a slow pairing whose two
//     nodes are fine with their other partners names the link (warn); a slow
//     pairing of a node seen only once names both nodes as suspects (warn).
#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "reports/judge_util.h"
#include "reports/run_data.h"
#include "reports/stats.h"

namespace cmax::reports {
namespace {

constexpr char kCategory[] = "Networking";
constexpr double kBelowUpperQuartile = 0.8;

struct RunFigure {
  std::string task, op, dtype, backend, ranks;
  std::vector<std::string> nodes;  // sorted
  int64_t size = -1;
  double busbw = 0;
  bool out_of_place = false;
};

std::string GroupText(const RunFigure& r) { return absl::StrJoin(r.nodes, ","); }

std::string RunText(const RunFigure& r) {
  return absl::StrCat(r.op, " ", r.dtype, " (", r.backend, ", ", r.ranks, " ranks on ",
                      GroupText(r), ", ", r.size, " B)");
}

// Figures per (task, op, dtype, backend): the out-of-place busbw at the
// largest size (in-place only when a run has no out-of-place result).
std::vector<RunFigure> CollectRuns(const RunData& data) {
  std::map<std::string, RunFigure> runs;
  for (const auto& rec : data.records) {
    if (!rec.record().has_measurement()) continue;
    const v1::Measurement& m = rec.record().measurement();
    if (m.metric() != "busbw_gbps") continue;
    const std::string suite = m.suite().empty() ? rec.suite() : m.suite();
    if (suite != "collective") continue;
    int64_t size = 0;
    if (!absl::SimpleAtoi(LabelValue(m, "size_bytes"), &size)) continue;
    RunFigure f;
    f.task = rec.task_id();
    f.op = LabelValue(m, "op");
    f.dtype = LabelValue(m, "dtype");
    f.backend = LabelValue(m, "backend");
    f.ranks = LabelValue(m, "ranks");
    f.nodes = SplitNodes(LabelValue(m, "nodes"));
    if (f.nodes.empty()) f.nodes.push_back(RecordNode(rec));
    std::sort(f.nodes.begin(), f.nodes.end());
    f.size = size;
    f.busbw = m.value();
    f.out_of_place = LabelValue(m, "placement") != "in";
    const std::string key = absl::StrCat(f.task, "|", f.op, "|", f.dtype, "|", f.backend, "|",
                                         GroupText(f));
    auto it = runs.find(key);
    if (it == runs.end()) {
      runs[key] = f;
      continue;
    }
    RunFigure& cur = it->second;
    const bool better = f.size > cur.size || (f.size == cur.size && f.out_of_place &&
                                              !cur.out_of_place);
    if (better) cur = f;
  }
  std::vector<RunFigure> out;
  for (auto& [k, v] : runs) out.push_back(v);
  return out;
}

v1::RuleResult Rule(const std::string& id, const std::string& outcome, const std::string& node,
                    const std::string& subject, const std::string& message) {
  v1::RuleResult r = MakeRule(id, kCategory, outcome, node, subject, message);
  r.set_unit("GB/s");
  return r;
}

// Achievable one-node figures per platform, used when the plan sets none:
// NCCL all_reduce bus bandwidth of an 8-GPU node at 16 GB (the size Azure's
// HPC health checks test), never the NVLink spec speed. Source: Azure HPC
// health checks (github.com/Azure/azurehpc-health-checks), see shared
// (github.com/Azure/azurehpc-health-checks, its NCCL all_reduce check).
struct PlatformFloor {
  const char* model;  // substring of the inventory's GPU model
  double busbw_gbps;
};
constexpr PlatformFloor kAllReduce8Gpu[] = {{"H200", 480}, {"H100", 460}};
constexpr int64_t kPlatformMinSize = int64_t{8} << 30;  // read at >= 8 GiB

// The plan's floor for a run; else the platform's for a one-node 8-GPU NCCL
// all_reduce read at a large size; else < 0.
double FloorFor(const RunData& data, const RunFigure& r, std::string* key_used) {
  const auto& metrics = data.plan.expect().metrics();
  const std::string base = absl::StrCat("busbw_gbps.", r.op);
  const std::string specific = base + (r.nodes.size() == 1 ? ".node" : ".multinode");
  // Most specific first; a bare "busbw_gbps" is every op's floor.
  for (const std::string& k : {specific, base, std::string("busbw_gbps")}) {
    auto it = metrics.find(k);
    if (it != metrics.end()) {
      *key_used = k;
      return it->second;
    }
  }
  if (r.op == "all_reduce" && r.backend == "nccl" && r.nodes.size() == 1 && r.ranks == "8" &&
      r.size >= kPlatformMinSize) {
    auto inv = data.inventories.find(r.nodes[0]);
    if (inv != data.inventories.end()) {
      for (const auto& p : kAllReduce8Gpu) {
        if (absl::StrContains(inv->second.gpu_model(), p.model)) {
          *key_used = absl::StrCat("platform default for 8x", p.model,
                                   " (Azure HPC health checks, all_reduce at 16 GB)");
          return p.busbw_gbps;
        }
      }
    }
  }
  return -1;
}

void JudgeExpectations(const RunData& data, const std::vector<RunFigure>& runs,
                       std::vector<v1::RuleResult>* out) {
  std::set<std::string> keys_seen;
  for (const RunFigure& r : runs) {
    std::string key;
    const double floor = FloorFor(data, r, &key);
    if (floor < 0) continue;
    keys_seen.insert(key);
    const bool one_node = r.nodes.size() == 1;
    const std::string subject = one_node ? r.nodes[0] : absl::StrCat("nodes ", GroupText(r));
    v1::RuleResult res = Rule(absl::StrCat("collective.busbw.", r.op),
                              r.busbw >= floor ? "pass" : "fail", one_node ? r.nodes[0] : "",
                              subject, "");
    res.set_value(r.busbw);
    res.set_expected(floor);
    res.set_message(absl::StrCat(RunText(r), ": busbw ", FormatValue(r.busbw, "GB/s"),
                                 r.busbw >= floor ? " meets " : " is below ",
                                 absl::StartsWith(key, "platform") ? "the " : "the plan's ",
                                 FormatValue(floor, "GB/s"), " (", key, ")"));
    res.add_evidence(absl::StrCat("task ", r.task, ", largest size ", r.size, " B, ",
                                  r.out_of_place ? "out-of-place" : "in-place"));
    res.add_evidence(absl::StartsWith(key, "platform")
                         ? absl::StrCat(key, ": >= ", FormatNumber(floor), " GB/s")
                         : absl::StrCat("plan ", data.plan.name(), " expects ", key, " >= ",
                                        FormatNumber(floor)));
    if (r.busbw < floor) {
      res.set_action(one_node ? "check NVLink/NVSwitch health and GPU clocks on this node "
                                "(nvidia-smi nvlink -s, the health suite), then rerun"
                              : "run the pairs sweep to find the slow node or link; check the "
                                "transport NCCL used (collective.nccl_transport)");
      if (r.nodes.size() == 2) {
        // Both nodes of a pair carry the result so their verdicts show it.
        for (const auto& n : r.nodes) {
          v1::RuleResult per = res;
          per.set_node(n);
          out->push_back(std::move(per));
        }
        continue;
      }
    }
    out->push_back(std::move(res));
  }
  for (const auto& [key, floor] : data.plan.expect().metrics()) {
    if ((!absl::StartsWith(key, "busbw_gbps.") && key != "busbw_gbps") || keys_seen.count(key)) {
      continue;
    }
    v1::RuleResult r = Rule("collective.busbw.not_measured", "not_measured", "", key,
                            absl::StrCat("the plan expects ", key, " >= ", FormatNumber(floor),
                                         " GB/s but no collective run measured it"));
    r.set_expected(floor);
    out->push_back(std::move(r));
  }
}

std::string Bucket(const RunFigure& r) {
  return absl::StrCat(r.op, " ", r.dtype, " ", r.backend, " ranks=", r.ranks);
}

void JudgeOneNodeFleet(const std::vector<RunFigure>& runs, std::vector<v1::RuleResult>* out) {
  std::map<std::string, std::vector<Keyed>> buckets;
  for (const RunFigure& r : runs) {
    if (r.nodes.size() != 1) continue;
    buckets[Bucket(r)].push_back({r.nodes[0], r.nodes[0], r.busbw});
  }
  for (const auto& [bucket, items] : buckets) {
    const FleetStats s = [&] {
      std::vector<double> v;
      for (const auto& k : items) v.push_back(k.value);
      return ComputeFleetStats(v);
    }();
    for (const Outlier& o : FindOutliers(items, Better::kHigher)) {
      v1::RuleResult r = Rule("collective.busbw.node_outlier", o.extreme ? "fail" : "warn",
                              o.item.node, o.item.subject,
                              absl::StrCat(o.item.node, ": one-node ", bucket, " busbw ",
                                           FormatValue(o.item.value, "GB/s"), " is ",
                                           FormatNumber(o.relative_to_median * 100),
                                           "% of the fleet median ",
                                           FormatValue(s.median, "GB/s")));
      r.set_value(o.item.value);
      r.set_expected(s.median);
      r.add_evidence(absl::StrCat("fleet of ", s.n, " nodes: median ", FormatNumber(s.median),
                                  ", q1 ", FormatNumber(s.q1), ", q3 ", FormatNumber(s.q3),
                                  ", low fence ", FormatNumber(s.low_mild)));
      r.set_action("check NVLink/NVSwitch and GPU health on this node, then rerun");
      out->push_back(std::move(r));
    }
  }
}

void JudgePairs(const RunData& data, const std::vector<RunFigure>& runs,
                std::vector<v1::RuleResult>* out) {
  std::map<std::string, std::vector<const RunFigure*>> buckets;
  for (const RunFigure& r : runs) {
    if (r.nodes.size() == 2 && r.nodes[0] != r.nodes[1]) buckets[Bucket(r)].push_back(&r);
  }
  for (const auto& [bucket, pairs] : buckets) {
    if (pairs.size() < 2) continue;  // one pairing is not a sweep
    std::vector<Keyed> items;
    std::vector<double> values;
    for (const RunFigure* p : pairs) {
      items.push_back({absl::StrCat(p->nodes[0], "<->", p->nodes[1]), "", p->busbw});
      values.push_back(p->busbw);
    }
    const FleetStats s = ComputeFleetStats(values);
    std::set<std::string> outliers;
    for (const Outlier& o : FindOutliers(items, Better::kHigher)) outliers.insert(o.item.subject);
    std::map<std::string, std::vector<const RunFigure*>> by_node;
    std::map<const RunFigure*, std::string> why_slow;
    for (size_t i = 0; i < pairs.size(); ++i) {
      const RunFigure* p = pairs[i];
      for (const auto& n : p->nodes) by_node[n].push_back(p);
      std::string key;
      const double floor = FloorFor(data, *p, &key);
      if (floor >= 0 && p->busbw < floor) {
        why_slow[p] = absl::StrCat("below the plan's ", FormatNumber(floor), " (", key, ")");
      } else if (outliers.count(items[i].subject)) {
        why_slow[p] = absl::StrCat("a low outlier (fleet of pairings: median ",
                                   FormatNumber(s.median), ", low fence ",
                                   FormatNumber(s.low_mild), ")");
      } else if (p->busbw < kBelowUpperQuartile * s.q3) {
        why_slow[p] = absl::StrCat("more than 20% below the pairings' upper quartile ",
                                   FormatNumber(s.q3));
      }
    }
    auto pair_text = [](const RunFigure* p) {
      return absl::StrCat(p->nodes[0], "<->", p->nodes[1], " ", FormatValue(p->busbw, "GB/s"));
    };
    std::set<std::string> slow_nodes;
    for (const auto& [node, list] : by_node) {
      size_t slow = 0;
      for (const RunFigure* p : list) slow += why_slow.count(p);
      if (list.size() >= 2 && slow == list.size()) slow_nodes.insert(node);
    }
    for (const std::string& node : slow_nodes) {
      std::vector<std::string> ev;
      double worst = 0;
      for (const RunFigure* p : by_node[node]) {
        ev.push_back(absl::StrCat(pair_text(p), ": ", why_slow[p]));
        worst = std::max(worst, p->busbw);
      }
      v1::RuleResult r = Rule("collective.pairs.slow_node", "fail", node, node,
                              absl::StrCat(node, ": all ", by_node[node].size(), " pairings of ",
                                           bucket, " are slow (best ",
                                           FormatValue(worst, "GB/s"), ", pairings' median ",
                                           FormatValue(s.median, "GB/s"), ")"));
      r.set_value(worst);
      r.set_expected(s.median);
      for (auto& e : ev) r.add_evidence(e);
      r.set_action("check this node's NICs (link rate, errors, PCIe), cables and switch port; "
                   "drain it until fixed");
      out->push_back(std::move(r));
    }
    for (const RunFigure* p : pairs) {
      if (!why_slow.count(p)) continue;
      if (slow_nodes.count(p->nodes[0]) || slow_nodes.count(p->nodes[1])) continue;
      const bool seen_once = by_node[p->nodes[0]].size() < 2 || by_node[p->nodes[1]].size() < 2;
      const std::string link = absl::StrCat(p->nodes[0], "<->", p->nodes[1]);
      v1::RuleResult r = Rule(seen_once ? "collective.pairs.slow_pair" : "collective.pairs.slow_link",
                              "warn", "", link,
                              absl::StrCat(
                                  "link ", link, ": ", bucket, " busbw ",
                                  FormatValue(p->busbw, "GB/s"), " is ", why_slow[p],
                                  seen_once ? "; a node of this pair has no other pairing, so "
                                              "either may be at fault"
                                            : "; both nodes are fine with other partners"));
      r.set_value(p->busbw);
      r.set_expected(s.median);
      r.add_evidence(pair_text(p));
      for (const auto& n : p->nodes) {
        for (const RunFigure* q : by_node[n]) {
          if (q != p) r.add_evidence(absl::StrCat("other pairing: ", pair_text(q)));
        }
      }
      r.set_action("check the path between these two nodes (cables, switch ports, routing, "
                   "adaptive routing or ECMP hashing)");
      if (!seen_once) {
        out->push_back(std::move(r));
        continue;
      }
      for (const auto& n : p->nodes) {  // both are suspects: both verdicts show it
        v1::RuleResult per = r;
        per.set_node(n);
        out->push_back(std::move(per));
      }
    }
    v1::RuleResult summary = Rule("collective.pairs.spread", "pass", "", bucket,
                                  absl::StrCat("pairs sweep ", bucket, ": ", pairs.size(),
                                               " pairings, median ",
                                               FormatValue(s.median, "GB/s"), ", min ",
                                               FormatNumber(s.min), ", max ", FormatNumber(s.max)));
    summary.set_value(s.median);
    out->push_back(std::move(summary));
  }
}

}  // namespace

void CollectiveJudge(const RunData& data, std::vector<v1::RuleResult>* out) {
  const std::vector<RunFigure> runs = CollectRuns(data);
  JudgeExpectations(data, runs, out);
  JudgeOneNodeFleet(runs, out);
  JudgePairs(data, runs, out);
}

}  // namespace cmax::reports
