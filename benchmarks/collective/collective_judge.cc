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
//  4. Soaks (measurements labelled soak=true, one per interval; they never
//     feed 1-3): each interval's busbw against the run's median interval;
//     below kSoakDropFraction (or the plan's busbw_gbps.soak_min_fraction)
//     of it -> fail naming the intervals and their start times; none ->
//     pass with median, min and max. Fewer intervals than planned and no
//     stall finding -> warn "ended early". collective.soak_stall findings
//     (written by ranks that were alive and waiting) -> fail on the rank(s)
//     that stopped first: the ranks of the group that wrote none, else the
//     ranks with the fewest completed iterations.
#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "benchmarks/collective/busbw_floor_keys.h"
#include "generated/suite_judges.h"
#include "reports/judge_util.h"
#include "reports/metric_table.h"
#include "reports/record_speaker.h"
#include "reports/run_data.h"
#include "reports/stats.h"

namespace cmax::reports {
namespace {

// Its rules' category, from the suite's declaration.
std::string Category() { return JudgeCategory("collective"); }
constexpr double kBelowUpperQuartile = 0.8;
// A soak interval more than 20% below the run's median interval is a drop.
// nccl-tests reports one busbw per size and has no soak; SuperBench calls a
// metric 5% below its baseline a defect (REFERENCES.md, "Thresholds used by
// peers"), but that compares whole runs against a baseline, while a soak
// interval lasts seconds on a host shared with the agent: the 20% margin is
// the one this judge already uses for pairings (kBelowUpperQuartile) and
// still catches a rail or link falling back (half or less of the bandwidth)
// and heavy throttling. Plan override: expect.metrics busbw_gbps.soak_min_fraction.
constexpr double kSoakDropFraction = 0.8;
constexpr char kSoakFractionKey[] = "busbw_gbps.soak_min_fraction";

struct RunFigure {
  std::string task, op, dtype, backend, ranks;
  std::vector<std::string> nodes;  // sorted
  std::string by;                  // the node that sent the figure (its rank 0's)
  int64_t size = -1;
  double busbw = 0;
  bool out_of_place = false;
};

std::string GroupText(const RunFigure& r) { return absl::StrJoin(r.nodes, ","); }

std::string RunText(const RunFigure& r) {
  return absl::StrCat(r.op, " ", r.dtype, " (", r.backend, ", ", r.ranks, " ranks on ",
                      GroupText(r), ", ", r.size, " B)");
}

// The group a record's `nodes` label names, sorted; its sender alone when
// the label is empty, leaves out the sender or names a node that is not the
// task's (record_speaker.h: a figure is never another group's on the
// sender's word; a suite run by hand labels its host name).
std::vector<std::string> GroupOf(const RecordSpeaker& speaker, const v1::ExportedRecord& rec,
                                 const std::string& label) {
  const std::string sender = RecordNode(rec);
  std::vector<std::string> nodes = SplitNodes(label);
  bool own = std::find(nodes.begin(), nodes.end(), sender) != nodes.end();
  for (const auto& n : nodes) own = own && (n == sender || speaker.IsPeer(rec, n));
  if (!own) return {sender};
  std::sort(nodes.begin(), nodes.end());
  return nodes;
}

// Figures per (task, op, dtype, backend): the out-of-place busbw at the
// largest size (in-place only when a run has no out-of-place result).
std::vector<RunFigure> CollectRuns(const RunData& data) {
  std::map<std::string, RunFigure> runs;
  const RecordSpeaker speaker(data);
  ForEachRecord(data, {v1::Record::kMeasurement, {}, "busbw_gbps"},
                [&](const v1::ExportedRecord& rec) {
                  if (!rec.record().has_measurement()) return;
                  const v1::Measurement& m = rec.record().measurement();
                  if (m.metric() != "busbw_gbps") return;
                  const std::string suite = m.suite().empty() ? rec.suite() : m.suite();
                  if (suite != "collective") return;
                  if (LabelValue(m, "soak") == "true")
                    return;  // judged by JudgeSoaks only
                  int64_t size = 0;
                  if (!absl::SimpleAtoi(LabelValue(m, "size_bytes"), &size)) return;
                  RunFigure f;
                  f.task = rec.task_id();
                  f.op = LabelValue(m, "op");
                  f.dtype = LabelValue(m, "dtype");
                  f.backend = LabelValue(m, "backend");
                  f.ranks = LabelValue(m, "ranks");
                  f.by = RecordNode(rec);
                  f.nodes = GroupOf(speaker, rec, LabelValue(m, "nodes"));
                  f.size = size;
                  f.busbw = m.value();
                  f.out_of_place = LabelValue(m, "placement") != "in";
                  const std::string key = absl::StrCat(f.task, "|", f.op, "|", f.dtype,
                                                       "|", f.backend, "|", GroupText(f));
                  auto it = runs.find(key);
                  if (it == runs.end()) {
                    runs[key] = f;
                    return;
                  }
                  RunFigure& cur = it->second;
                  const bool better =
                      f.size > cur.size ||
                      (f.size == cur.size && f.out_of_place && !cur.out_of_place);
                  if (better) cur = f;
                });
  std::vector<RunFigure> out;
  for (auto& [k, v] : runs) out.push_back(v);
  return out;
}

v1::RuleResult Rule(const std::string& id, const std::string& outcome, const std::string& node,
                    const std::string& subject, const std::string& message) {
  v1::RuleResult r = MakeRule(id, Category(), outcome, node, subject, message);
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
  // Most specific first; a bare "busbw_gbps" is every op's floor.
  for (const std::string& k : suites::collective::BusbwFloorKeys(r.op, r.nodes.size() == 1)) {
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
        // The node that measured the pair carries the result so its verdict
        // shows it; the other is named, not failed, on one node's word.
        bool other = false;
        for (const auto& n : r.nodes) {
          if (n != r.by) {
            other = true;
            continue;
          }
          v1::RuleResult per = res;
          per.set_node(n);
          out->push_back(std::move(per));
        }
        if (!other) continue;
        res.set_message(absl::StrCat(res.message(), ", as measured by ", r.by));
      }
    }
    out->push_back(std::move(res));
  }
  for (const auto& [key, floor] : data.plan.expect().metrics()) {
    if ((!absl::StartsWith(key, "busbw_gbps.") && key != "busbw_gbps") || keys_seen.count(key) ||
        key == kSoakFractionKey) {
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
    std::vector<double> values;
    for (const auto& k : items) values.push_back(k.value);
    const FleetStats s = ComputeFleetStats(values);
    for (const Outlier& o : FindOutliers(items, Better::kHigher, 4, OutlierMargin("busbw_gbps"))) {
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
    for (const Outlier& o : FindOutliers(items, Better::kHigher, 4, OutlierMargin("busbw_gbps"))) outliers.insert(o.item.subject);
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
      std::set<std::string> measured_by;
      for (const RunFigure* p : list) {
        slow += why_slow.count(p);
        measured_by.insert(p->by);
      }
      // On its own figures or on at least two partners': never on one other
      // node's word.
      const bool own_word = measured_by.count(node) > 0 || measured_by.size() >= 2;
      if (list.size() >= 2 && slow == list.size() && own_word) slow_nodes.insert(node);
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
      // Both are suspects: the verdict of the node that measured it shows
      // it; the other is named in the pair result, not failed on its word.
      bool other = false;
      for (const auto& n : p->nodes) {
        if (n != p->by) {
          other = true;
          continue;
        }
        v1::RuleResult per = r;
        per.set_node(n);
        out->push_back(std::move(per));
      }
      if (other) {
        r.set_message(absl::StrCat(r.message(), " (as measured by ", p->by, ")"));
        out->push_back(std::move(r));
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


// ---- soaks ----

struct SoakInterval {
  int index = 0;
  double t_start_s = 0;
  double busbw = 0;
  double algbw = 0;
  int64_t iterations = 0;
};

struct SoakRun {
  std::string task, op, dtype, backend, ranks, size;
  std::vector<std::string> nodes;
  int planned = 0;
  double interval_s = 0;
  std::map<int, SoakInterval> intervals;
};

struct StalledRank {
  int rank = -1;
  std::string node;
  int interval = 0;
  int64_t last_iteration = 0;
  double last_progress_s = 0;
  double waited_s = 0;
};

struct SoakStalls {
  std::string op, size;
  int ranks = 0;
  std::vector<std::string> rank_nodes;  // by rank
  std::map<int, StalledRank> waiting;   // ranks that wrote a stall finding
};

std::string SoakKey(const std::string& task, const std::string& op) {
  return absl::StrCat(task, "|", op);
}

void JudgeSoaks(const RunData& data, std::vector<v1::RuleResult>* out) {
  std::map<std::string, SoakRun> runs;
  std::map<std::string, SoakStalls> stalls;  // by task
  // Labels are read only of busbw/algbw measurements and of findings: the
  // rest is not parsed (reports/record_set.h).
  RecordFilter every;
  every.labels_if = [](const v1::ExportedRecord& rec) {
    const v1::Record& r = rec.record();
    return !r.has_measurement() || r.measurement().metric() == "busbw_gbps" ||
           r.measurement().metric() == "algbw_gbps";
  };
  const RecordSpeaker speaker(data);
  ForEachRecord(data, every, [&](const v1::ExportedRecord& rec) {
    if (rec.record().has_measurement()) {
      const v1::Measurement& m = rec.record().measurement();
      const std::string suite = m.suite().empty() ? rec.suite() : m.suite();
      const bool bus = m.metric() == "busbw_gbps";
      if ((!bus && m.metric() != "algbw_gbps") || suite != "collective" ||
          LabelValue(m, "soak") != "true") {
        return;
      }
      int index = 0;
      if (!absl::SimpleAtoi(LabelValue(m, "interval"), &index)) return;
      SoakRun& r = runs[SoakKey(rec.task_id(), LabelValue(m, "op"))];
      r.task = rec.task_id();
      r.op = LabelValue(m, "op");
      r.dtype = LabelValue(m, "dtype");
      r.backend = LabelValue(m, "backend");
      r.ranks = LabelValue(m, "ranks");
      r.size = LabelValue(m, "size_bytes");
      r.nodes = GroupOf(speaker, rec, LabelValue(m, "nodes"));
      (void)absl::SimpleAtoi(LabelValue(m, "intervals_planned"), &r.planned);
      (void)absl::SimpleAtod(LabelValue(m, "interval_s"), &r.interval_s);
      SoakInterval& iv = r.intervals[index];
      iv.index = index;
      (bus ? iv.busbw : iv.algbw) = m.value();
      (void)absl::SimpleAtod(LabelValue(m, "t_start_s"), &iv.t_start_s);
      (void)absl::SimpleAtoi(LabelValue(m, "iterations"), &iv.iterations);
      return;
    }
    if (!rec.record().has_finding()) return;
    const v1::Finding& f = rec.record().finding();
    if (f.check_id() != "collective.soak_stall") return;
    const auto& l = f.labels();
    SoakStalls& st = stalls[rec.task_id()];
    st.op = LabelValue(l, "op");
    st.size = LabelValue(l, "size_bytes");
    // A stall finding speaks for its own rank on its sender's node only
    // (record_speaker.h); the rank_nodes it lists are kept when every node
    // in them is the task's.
    const std::optional<int> own = speaker.OwnRank(rec, l);
    if (!own) return;
    StalledRank w;
    w.rank = *own;
    w.node = LabelValue(l, "node");
    if (w.node.empty() || !speaker.SpeaksFor(rec, w.node)) w.node = RecordNode(rec);
    (void)absl::SimpleAtoi(LabelValue(l, "ranks"), &st.ranks);
    const std::string rn = LabelValue(l, "rank_nodes");
    if (!rn.empty()) {
      std::vector<std::string> listed = absl::StrSplit(rn, ',');
      bool peers = true;
      for (const auto& n : listed) peers = peers && speaker.IsPeer(rec, n);
      if (peers) st.rank_nodes = std::move(listed);
    }
    (void)absl::SimpleAtoi(LabelValue(l, "interval"), &w.interval);
    (void)absl::SimpleAtoi(LabelValue(l, "last_iteration"), &w.last_iteration);
    (void)absl::SimpleAtod(LabelValue(l, "last_progress_s"), &w.last_progress_s);
    (void)absl::SimpleAtod(LabelValue(l, "waited_s"), &w.waited_s);
    st.waiting[w.rank] = w;
  });

  double fraction = kSoakDropFraction;
  if (auto it = data.plan.expect().metrics().find(kSoakFractionKey);
      it != data.plan.expect().metrics().end() && it->second > 0 && it->second <= 1) {
    fraction = it->second;
  }

  for (const auto& [key, r] : runs) {
    const bool one_node = r.nodes.size() == 1;
    const std::string group = absl::StrJoin(r.nodes, ",");
    const std::string what = absl::StrCat(r.op, " soak (", r.backend, ", ", r.ranks, " ranks on ",
                                          group, ", ", r.size, " B)");
    // The node(s) a result is about: the node of a one-node soak, both of a
    // pair, fleet-wide ("") for larger groups, as for sweeps.
    std::vector<std::string> targets;
    if (one_node || r.nodes.size() == 2) {
      targets = r.nodes;
    } else {
      targets.push_back("");
    }
    auto emit = [&](const v1::RuleResult& res) {
      for (const auto& n : targets) {
        v1::RuleResult per = res;
        per.set_node(n);
        out->push_back(std::move(per));
      }
    };
    // One rank: busbw is no figure (factor (n-1)/n is 0; the runner does not
    // record it), so the soak is judged on algbw.
    const bool one_rank = r.ranks == "1";
    const std::string bw_name = one_rank ? "algbw" : "busbw";
    auto figure = [&](const SoakInterval& iv) { return one_rank ? iv.algbw : iv.busbw; };
    std::vector<double> values;
    for (const auto& [i, iv] : r.intervals) values.push_back(figure(iv));
    const FleetStats s = ComputeFleetStats(values);
    if (r.intervals.size() >= 2) {
      std::vector<std::string> drops;
      double worst = s.median;
      for (const auto& [i, iv] : r.intervals) {
        if (figure(iv) < fraction * s.median) {
          drops.push_back(absl::StrCat("interval ", i, " at ", FormatNumber(iv.t_start_s),
                                       " s: ", FormatValue(figure(iv), "GB/s")));
          worst = std::min(worst, figure(iv));
        }
      }
      const bool dropped = !drops.empty();
      v1::RuleResult res = Rule(dropped ? "collective.soak.drop" : "collective.soak.steady",
                                dropped ? "fail" : "pass", "",
                                one_node ? r.nodes[0] : absl::StrCat("nodes ", group), "");
      res.set_value(dropped ? worst : s.median);
      res.set_expected(fraction * s.median);
      if (dropped) {
        res.set_message(absl::StrCat(what, ": ", bw_name, " fell below ",
                                     FormatNumber(fraction * 100),
                                     "% of the median interval (", FormatValue(s.median, "GB/s"),
                                     ") in ", drops.size(), " of ", r.intervals.size(),
                                     " intervals: ", absl::StrJoin(drops, "; ")));
        res.set_action(one_node ? "check GPU clocks and throttling (nvidia-smi -q -d "
                                  "PERFORMANCE) and NVLink errors on this node at those times"
                                : "check the NICs, links and switch ports of these nodes at "
                                  "those times (link flaps, congestion, adaptive routing), and "
                                  "GPU throttling");
      } else {
        res.set_message(absl::StrCat(what, ": ", r.intervals.size(), " intervals, ", bw_name,
                                     " median ",
                                     FormatValue(s.median, "GB/s"), ", min ",
                                     FormatNumber(s.min), ", max ", FormatNumber(s.max),
                                     ", none below ", FormatNumber(fraction * 100),
                                     "% of the median"));
      }
      res.add_evidence(absl::StrCat("task ", r.task, ": ", r.intervals.size(), " intervals of ",
                                    FormatNumber(r.interval_s), " s, ", bw_name, " median ",
                                    FormatNumber(s.median), ", min ", FormatNumber(s.min),
                                    ", max ", FormatNumber(s.max), " GB/s"));
      emit(res);
    }
    const int recorded = static_cast<int>(r.intervals.size());
    if (r.planned > 0 && recorded < r.planned && !stalls.count(r.task)) {
      const double last = r.intervals.empty() ? 0 : r.intervals.rbegin()->second.t_start_s;
      v1::RuleResult res = Rule("collective.soak.ended_early", "warn", "",
                                one_node ? r.nodes[0] : absl::StrCat("nodes ", group),
                                absl::StrCat(what, " ended early: ", recorded, " of ", r.planned,
                                             " intervals recorded (the last began at ",
                                             FormatNumber(last), " s), and no rank reported a "
                                             "stall: see the task's outcome and findings (wrong "
                                             "elements, a failed collective, a crash or a "
                                             "timeout)"));
      res.set_value(recorded);
      res.set_expected(r.planned);
      res.set_unit("");
      res.add_evidence(absl::StrCat("task ", r.task));
      res.set_action("read the task's stderr tail and findings; rerun the soak");
      emit(res);
    }
  }

  for (const auto& entry : stalls) {
    // Named, not a structured binding: the lambda below captures it.
    const auto& st = entry.second;
    int world = st.ranks;
    if (world <= 0) world = static_cast<int>(st.rank_nodes.size());
    auto node_of = [&](int rank) {
      // A rank that wrote a finding: the node that sent it.
      if (auto it = st.waiting.find(rank); it != st.waiting.end()) return it->second.node;
      if (rank >= 0 && rank < static_cast<int>(st.rank_nodes.size())) {
        return st.rank_nodes[static_cast<size_t>(rank)];
      }
      return std::string();
    };
    std::vector<std::string> waited;
    int64_t least = -1;
    for (const auto& [rank, w] : st.waiting) {
      waited.push_back(absl::StrFormat("rank %d (%s) waited %.1f s from iteration %d (%.1f s, "
                                       "interval %d)",
                                       rank, w.node, w.waited_s, w.last_iteration,
                                       w.last_progress_s, w.interval));
      least = least < 0 ? w.last_iteration : std::min(least, w.last_iteration);
    }
    std::vector<int> blamed;
    std::string why;
    for (int rank = 0; rank < world; ++rank) {
      if (!st.waiting.count(rank)) blamed.push_back(rank);
    }
    if (!blamed.empty()) {
      why = absl::StrCat("it reported no progress while the other ranks waited, so it stopped "
                         "first (its last completed iteration is at most ",
                         least, ")");
    } else {
      for (const auto& [rank, w] : st.waiting) {
        if (w.last_iteration == least) blamed.push_back(rank);
      }
      why = static_cast<int>(blamed.size()) == world
                ? absl::StrCat("every rank stalled at iteration ", least,
                               ": the group hung together (fabric, switch, or a collective "
                               "that never completed)")
                : absl::StrCat("it completed the fewest iterations (", least, ") of the group");
    }
    for (int rank : blamed) {
      const std::string node = node_of(rank);
      v1::RuleResult res =
          Rule("collective.soak.stall", "fail", node, absl::StrCat("node:", node, " rank:", rank),
               absl::StrCat(st.op, " soak (", st.size, " B) stalled: rank ", rank, " (", node,
                            ") is to blame: ", why));
      res.set_unit("");
      res.add_evidence(absl::StrCat("task ", entry.first, ", ", world, " ranks: ",
                                    absl::StrJoin(st.rank_nodes, ",")));
      for (const auto& w : waited) res.add_evidence(w);
      res.set_action("check this node: the suite process (stopped or hung?), its kernel log "
                     "(Xid), GPU and NIC; then rerun the soak");
      out->push_back(std::move(res));
    }
  }
}

}  // namespace

void CollectiveJudge(const RunData& data, std::vector<v1::RuleResult>* out) {
  const std::vector<RunFigure> runs = CollectRuns(data);
  JudgeExpectations(data, runs, out);
  JudgeOneNodeFleet(runs, out);
  JudgePairs(data, runs, out);
  JudgeSoaks(data, out);
}

}  // namespace cmax::reports
