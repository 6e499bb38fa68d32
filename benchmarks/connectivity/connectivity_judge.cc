// Judge: the full-mesh connectivity matrix (benchmarks/connectivity).
//
// Input: Measurements of suite "connectivity": `reachable` (1/0), `rtt_ms`
// and `transfer_mbps`, each labelled src, dst (node names), src_rank,
// dst_rank, dst_addr; written by the source rank. A record counts only when
// its sender is its src (record_speaker.h; under mpirun the launching node)
// and its dst is a node of its task: one node's records never speak for
// another's side of a pair. Several ranks per node
// collapse into one directed node pair: a pair is reachable when every
// measurement of it is 1; its RTT is the median of its ranks' values. Pairs
// within one node (src == dst) are ignored.
//
// Output, category Networking (rule ids connectivity.*):
//   matrix        fleet-wide: n nodes, pairs measured of n(n-1), unreachable
//                 pairs; pass when every pair was measured and reachable,
//                 warn when pairs are missing, fail when any is unreachable.
//   unreachable_node   fail on a node no measured peer could reach, when
//                 at least two peers tried ("unreachable from every peer"),
//                 with the peers and the addresses they tried.
//   unreachable_pair   fail for every other unreachable direction, naming
//                 both nodes, the addresses tried and who measured it: on
//                 the destination's node only when its own records say it
//                 cannot reach the source either, else a pair result that
//                 blames neither node.
//   asymmetric    warn on the source of a failing direction whose reverse
//                 works (A reaches B, B does not reach A), naming both.
//   rtt           RTT per pair against the fleet (stats.h FindOutliers,
//                 lower is better, at least 4 pairs): the outlying pairs
//                 are blamed on the node that appears in most of them
//                 and measured one of them itself (warn on that node); with
//                 no such node a fleet-wide warn
//                 lists the pairs. Otherwise a pass with the RTT spread.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/median.h"
#include "common/plural.h"
#include "generated/suite_judges.h"
#include "reports/judge_util.h"
#include "reports/metric_table.h"
#include "reports/record_speaker.h"
#include "reports/run_data.h"
#include "reports/stats.h"

namespace cmax::reports {
namespace {

// What makes an outlying RTT practically slow, beyond the fleet's Tukey
// fence: rtt_ms's declared margin (connectivity_declaration.cc: at least 2x
// the fleet's median) and at least 0.1 ms above it. A pair that adds 0.1 ms
// to a rack's 20-60 us round trip is on a longer path, a congested link or a
// starved host.
constexpr double kRttMinExcessMs = 0.1;

// A node is unreachable_node only when at least this many peers, each from
// its own side, could not reach it (and none could).
constexpr size_t kMinPeersForIsolated = 2;

// The first kPairsNamed pairs, then how many more there are.
constexpr size_t kPairsNamed = 64;

std::string JoinCapped(const std::vector<std::string>& pairs) {
  if (pairs.size() <= kPairsNamed) return absl::StrJoin(pairs, "; ");
  return absl::StrCat(absl::StrJoin(pairs.begin(), pairs.begin() + kPairsNamed, "; "), "; and ",
                      pairs.size() - kPairsNamed, " more");
}

// Its rules' category, from the suite's declaration.
std::string Category() { return JudgeCategory("connectivity"); }

struct PairData {
  int measured = 0;
  int unreachable = 0;
  std::vector<double> rtt;
  std::vector<double> mbps;
  std::set<std::string> addresses;  // dst_addr labels
};

std::string PairName(const std::string& a, const std::string& b) {
  return absl::StrCat(a, " -> ", b);
}

v1::RuleResult Rule(const std::string& id, const std::string& outcome, const std::string& node,
                    const std::string& subject) {
  return MakeRule(absl::StrCat("connectivity.", id), Category(), outcome, node, subject);
}

}  // namespace

void JudgeConnectivity(const RunData& data, std::vector<v1::RuleResult>* out) {
  std::map<std::pair<std::string, std::string>, PairData> pairs;  // (src, dst)
  std::set<std::string> nodes;
  const RecordSpeaker speaker(data);
  ForEachRecord(data, {v1::Record::kMeasurement, "connectivity"},
                [&](const v1::ExportedRecord& rec) {
                  if (rec.suite() != "connectivity" || !rec.record().has_measurement())
                    return;
                  const v1::Measurement& m = rec.record().measurement();
                  // The source is the node that sent the record: a src label
                  // naming another node is another node's word, and ignored
                  // (mpirun's launching node speaks for its group); dst only
                  // names a peer of the task.
                  std::string src = LabelValue(m, "src");
                  std::string dst = LabelValue(m, "dst");
                  if (src.empty()) src = RecordNode(rec);
                  if (!speaker.SpeaksFor(rec, src) || !speaker.IsPeer(rec, dst) || src == dst) {
                    return;
                  }
                  nodes.insert(src);
                  nodes.insert(dst);
                  PairData& p = pairs[{src, dst}];
                  if (m.metric() == "reachable") {
                    ++p.measured;
                    if (m.value() < 0.5) ++p.unreachable;
                    std::string addr = LabelValue(m, "dst_addr");
                    if (!addr.empty()) p.addresses.insert(addr);
                  } else if (m.metric() == "rtt_ms") {
                    p.rtt.push_back(m.value());
                  } else if (m.metric() == "transfer_mbps") {
                    p.mbps.push_back(m.value());
                  }
                });
  if (nodes.empty()) return;

  auto reachable = [&](const std::string& a, const std::string& b) {
    auto it = pairs.find({a, b});
    return it != pairs.end() && it->second.measured > 0 && it->second.unreachable == 0;
  };
  auto unreachable = [&](const std::string& a, const std::string& b) {
    auto it = pairs.find({a, b});
    return it != pairs.end() && it->second.unreachable > 0;
  };
  auto tried = [&](const std::string& a, const std::string& b) {
    auto it = pairs.find({a, b});
    if (it == pairs.end() || it->second.addresses.empty()) return std::string("(no address)");
    return absl::StrJoin(it->second.addresses, ", ");
  };

  // The matrix summary.
  const size_t n = nodes.size();
  const size_t expected = n * (n - 1);
  size_t measured = 0, bad = 0;
  std::vector<std::string> bad_pairs, missing;
  for (const auto& a : nodes) {
    for (const auto& b : nodes) {
      if (a == b) continue;
      auto it = pairs.find({a, b});
      if (it == pairs.end() || it->second.measured == 0) {
        missing.push_back(PairName(a, b));
        continue;
      }
      ++measured;
      if (it->second.unreachable > 0) {
        ++bad;
        bad_pairs.push_back(PairName(a, b));
      }
    }
  }
  {
    v1::RuleResult r = Rule("matrix", bad > 0 ? "fail" : (missing.empty() ? "pass" : "warn"), "",
                            "fleet");
    r.set_value(static_cast<double>(bad));
    r.set_expected(0);
    r.set_unit("unreachable pairs");
    r.set_message(absl::StrCat("connectivity: ", n, " nodes, ", measured, " of ", expected,
                               " directed pairs measured, ", bad, " unreachable"));
    // Pairs are named up to a bound: at 1,000 nodes the unmeasured pairs
    // alone were 32 MB of one evidence string. The per-node rules below name
    // every node that is cut off.
    if (!bad_pairs.empty()) r.add_evidence(absl::StrCat("unreachable: ", JoinCapped(bad_pairs)));
    if (!missing.empty()) r.add_evidence(absl::StrCat("not measured: ", JoinCapped(missing)));
    std::vector<double> all_mbps;
    for (const auto& [k, p] : pairs) all_mbps.insert(all_mbps.end(), p.mbps.begin(), p.mbps.end());
    if (!all_mbps.empty()) {
      r.add_evidence(absl::StrCat("median transfer rate ", FormatNumber(Median(all_mbps)),
                                  " Mbit/s over ", all_mbps.size(), " measurements"));
    }
    if (bad > 0) r.set_action("check routes, firewalls and security groups between the nodes named");
    out->push_back(std::move(r));
  }

  // Nodes no measured peer can reach.
  std::set<std::string> isolated;
  for (const auto& x : nodes) {
    std::vector<std::string> peers;
    bool any_ok = false;
    for (const auto& a : nodes) {
      if (a == x) continue;
      if (reachable(a, x)) any_ok = true;
      if (unreachable(a, x)) peers.push_back(a);
    }
    // Each peer speaks for its own side only: one peer's word cannot cut a
    // node off (in a two-node run that would be the other node's say).
    if (any_ok || peers.size() < kMinPeersForIsolated) continue;
    isolated.insert(x);
    v1::RuleResult r = Rule("unreachable_node", "fail", x, "node");
    r.set_value(static_cast<double>(peers.size()));
    r.set_unit("peers that cannot reach it");
    r.set_message(absl::StrCat(x, " is unreachable from every peer (", absl::StrJoin(peers, ", "),
                               ")"));
    for (const auto& a : peers) {
      r.add_evidence(absl::StrCat(PairName(a, x), ": unreachable; tried ", tried(a, x)));
    }
    r.set_action(absl::StrCat("check ", x, "'s network interfaces, routes and firewall"));
    out->push_back(std::move(r));
  }

  // Every other unreachable direction, and asymmetric pairs.
  for (const auto& [key, p] : pairs) {
    const auto& [src, dst] = key;
    if (p.unreachable == 0) continue;
    const bool reverse_ok = reachable(dst, src);
    if (!isolated.count(dst)) {
      // Measured by src alone: the pair fails, not dst, unless dst's own
      // records say it cannot reach src either.
      const bool corroborated = unreachable(dst, src);
      v1::RuleResult r = Rule("unreachable_pair", "fail", corroborated ? dst : "",
                              absl::StrCat("pair ", src, " -> ", dst));
      r.set_message(absl::StrCat(src, " -> ", dst, " unreachable, as measured by ", src, " (tried ",
                                 tried(src, dst), ")",
                                 reverse_ok ? "; the reverse direction works"
                                 : corroborated
                                     ? absl::StrCat("; ", dst, " cannot reach ", src, " either")
                                     : ""));
      r.add_evidence(absl::StrCat(PairName(src, dst), ": ", p.unreachable, " of ", p.measured,
                                  " measurements unreachable"));
      r.set_action(absl::StrCat("check routes and firewalls between ", src, " and ", dst));
      out->push_back(std::move(r));
    }
    if (reverse_ok) {
      v1::RuleResult r = Rule("asymmetric", "warn", src, absl::StrCat("pair ", src, " <-> ", dst));
      r.set_message(absl::StrCat("asymmetric reachability: ", dst, " reaches ", src, " but ", src,
                                 " does not reach ", dst));
      r.add_evidence(absl::StrCat(PairName(dst, src), ": reachable"));
      r.add_evidence(absl::StrCat(PairName(src, dst), ": unreachable; tried ", tried(src, dst)));
      r.set_action(absl::StrCat("look for a one-way firewall rule or route between ", src, " and ",
                                dst));
      out->push_back(std::move(r));
    }
  }

  // RTT per pair against the fleet.
  std::vector<Keyed> items;
  std::map<std::string, std::pair<std::string, std::string>> by_subject;
  for (const auto& [key, p] : pairs) {
    if (p.rtt.empty()) continue;
    Keyed k;
    k.subject = PairName(key.first, key.second);
    k.value = Median(p.rtt);
    items.push_back(k);
    by_subject[k.subject] = key;
  }
  if (items.empty()) return;
  std::vector<double> values;
  for (const auto& k : items) values.push_back(k.value);
  const FleetStats s = ComputeFleetStats(values);
  // Statistically off is not enough: in a fleet whose RTTs are tens of
  // microseconds (loopback, one rack) the fence sits a few tens of
  // microseconds above the median, and scheduling noise on a busy host
  // crosses it. A pair is slow only when it is also practically off: at
  // least twice the median and kRttMinExcessMs above it.
  std::vector<Outlier> outliers;
  for (Outlier& o : FindOutliers(items, Better::kLower, 4, OutlierMargin("rtt_ms"))) {
    if (o.item.value - s.median >= kRttMinExcessMs) outliers.push_back(std::move(o));
  }
  if (outliers.empty()) {
    v1::RuleResult r = Rule("rtt", "pass", "", "fleet");
    r.set_value(s.median);
    r.set_unit("ms");
    r.set_message(absl::StrCat("RTT median ", FormatNumber(s.median), " ms over ", s.n,
                               " pairs (min ", FormatNumber(s.min), ", max ", FormatNumber(s.max),
                               ")"));
    out->push_back(std::move(r));
    return;
  }
  std::map<std::string, int> blame;
  std::set<std::string> measured_slow;  // sources of outlying pairs: their own word
  for (const auto& o : outliers) {
    const auto& [a, b] = by_subject[o.item.subject];
    ++blame[a];
    ++blame[b];
    measured_slow.insert(a);
  }
  int top = 0;
  for (const auto& [node, count] : blame) top = std::max(top, count);
  std::vector<std::string> culprits;
  for (const auto& [node, count] : blame) {
    if (count == top) culprits.push_back(node);
  }
  // A node is warned only when one of its own measurements is slow too.
  if (culprits.size() == 1 && !measured_slow.count(culprits[0])) culprits.clear();
  std::vector<std::string> evidence;
  for (const auto& o : outliers) {
    evidence.push_back(absl::StrCat(o.item.subject, ": ", FormatNumber(o.item.value), " ms (",
                                    FormatNumber(o.relative_to_median), "x the median",
                                    o.extreme ? ", extreme" : "", ")"));
  }
  const std::string fleet_text =
      absl::StrCat("fleet median ", FormatNumber(s.median), " ms over ", s.n,
                   " pairs, mild fence above ", FormatNumber(s.high_mild), " ms");
  // One node in more outlying pairs than any other (and in more than one):
  // the slow link ends there.
  if (culprits.size() == 1 && top >= 2) {
    const std::string& node = culprits[0];
    v1::RuleResult r = Rule("rtt", "warn", node, "node");
    r.set_value(static_cast<double>(top));
    r.set_unit("slow pairs");
    r.set_message(absl::StrCat(node, " is in ", top, " of ", outliers.size(),
                               " pairs with an outlying RTT (", fleet_text, ")"));
    for (const auto& e : evidence) r.add_evidence(e);
    r.set_action(absl::StrCat("check ", node, "'s NIC, link speed, MTU and CPU load"));
    out->push_back(std::move(r));
  } else {
    v1::RuleResult r = Rule("rtt", "warn", "", "fleet");
    r.set_value(static_cast<double>(outliers.size()));
    r.set_unit("slow pairs");
    r.set_message(absl::StrCat(Counted(static_cast<int64_t>(outliers.size()), "pair has",
                                       "pairs have"),
                               " an outlying RTT and no single node explains them (", fleet_text,
                               ")"));
    for (const auto& e : evidence) r.add_evidence(e);
    out->push_back(std::move(r));
  }
}

}  // namespace cmax::reports
