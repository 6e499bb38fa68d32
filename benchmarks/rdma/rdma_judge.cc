// Judge: perftest per rail between node pairs (benchmarks/rdma, issue 20
// item 2).
//
// Input: Measurements of suite "rdma" from each task's latest attempt:
// rdma_write_bw_gbps and rdma_read_bw_gbps (Gb/s) and rdma_write_lat_us
// (stat=p50), labelled src/dst (client and server node), hca/port and
// peer_hca/peer_port (the two ends), rail, size_bytes, port_rate_gbps,
// peer_port_rate_gbps and min_rate_fraction. A link is the pair of ends
// "node:hca/port <-> node:hca/port". Bandwidth is judged at the largest
// message size measured per metric.
//
// Rules, category Networking (rule ids rdma.*):
//  1. Port rate: a bandwidth below min_rate_fraction (default 0.9) of the
//     slower end's port rate fails the link. 0.9 x 400 Gb/s = 360 Gb/s:
//     shared REFERENCES.md gives "ib_write_bw on a 400 Gb/s NDR port: about
//     392 Gb/s (NVIDIA/nccl#2409); Azure's GPUDirect floors 375 Gb/s (H100),
//     360 Gb/s (H200, GB200)", so a healthy NDR port clears the floor with
//     about 8% to spare and the floor equals Azure's H200/GB200 one.
//  2. Fleet per rail: the same metric on the same rail across every pair
//     (stats.h FindOutliers, at least 4 links): a mild outlier warns, an
//     extreme one fails; for latency, higher is worse.
//  3. Blame, from the evidence across pairs (every slow link is named with
//     both ends):
//     - an end (NIC port) measured with two or more partners and slow with
//       every one of them, by its own node's records or by at least two
//       partners' (a record counts only from its sender, record_speaker.h):
//       that NIC is blamed alone (rdma.slow_nic, on its node) -- "slow with
//       every partner";
//     - a slow link whose ends are each fine with some other partner, or
//       whose ends were only ever measured with each other: the link
//       (cable, transceivers, switch ports) between them is named
//       (rdma.slow_link, one result on each end's node whose own records
//       found it slow, and one pair result on no node when an end's node
//       did not: one node's measurement never fails its peer), and the message
//       says which of the two it was ("slow with this partner only", or
//       "only measured with each other: NIC and cable cannot be told
//       apart").
//  4. rdma.bandwidth / rdma.latency: a fleet-wide pass per metric when no
//     link is slow or failed, with the median, the minimum and the floor.
// A run that failed on a link while its server listened (finding
// rdma.run_failed) counts as a failed observation of that link in rule 3.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "generated/suite_judges.h"
#include "reports/judge_util.h"
#include "reports/metric_table.h"
#include "reports/outcome_order.h"
#include "reports/record_speaker.h"
#include "reports/run_data.h"
#include "reports/stats.h"

namespace cmax::reports {
namespace {

// Its rules' category, from the suite's declaration.
std::string Category() { return JudgeCategory("rdma"); }
constexpr double kDefaultFraction = 0.9;

struct Item {
  std::string metric;
  int64_t size = 0;
  std::string rail;
  std::string a, b;  // ends: client, server
  std::string a_node, b_node;
  double value = 0;
  double rate = 0;  // the slower end's port rate, 0 unknown
  double fraction = kDefaultFraction;
};

std::string LinkName(const std::string& a, const std::string& b) {
  return a < b ? absl::StrCat(a, " <-> ", b) : absl::StrCat(b, " <-> ", a);
}

double Num(const v1::Measurement& m, const std::string& key, double fallback) {
  double v = 0;
  return absl::SimpleAtod(LabelValue(m, key), &v) ? v : fallback;
}

int Rank(const std::string& outcome) { return reports::OutcomeBadness(outcome); }

struct LinkState {
  std::string a, b, a_node, b_node;
  std::string outcome = "pass";  // worst seen
  std::vector<std::string> evidence;
  // The nodes whose own records (as the client) found it slow or failed.
  std::set<std::string> witnesses;
  bool slow() const { return outcome != "pass"; }
};

std::string Describe(const Item& it) {
  const bool lat = it.metric == "rdma_write_lat_us";
  return absl::StrCat(it.metric, " rail ", it.rail, " ", it.size,
                      " B: ", FormatNumber(it.value), lat ? " us" : " Gb/s");
}

}  // namespace

void RdmaJudge(const RunData& data, std::vector<v1::RuleResult>* out) {
  std::map<std::string, int> latest;
  ForEachRecord(data, {v1::Record::KIND_NOT_SET, "rdma"},
                [&](const v1::ExportedRecord& rec) {
                  if (rec.suite() != "rdma") return;
                  latest[rec.task_id()] = std::max(latest[rec.task_id()], rec.attempt());
                });
  const RecordSpeaker speaker(data);
  std::vector<Item> items;
  ForEachRecord(
      data, {v1::Record::kMeasurement, "rdma"}, [&](const v1::ExportedRecord& rec) {
        if (rec.suite() != "rdma" || !rec.record().has_measurement()) return;
        if (rec.attempt() != latest[rec.task_id()]) return;
        const v1::Measurement& m = rec.record().measurement();
        const bool bw =
            m.metric() == "rdma_write_bw_gbps" || m.metric() == "rdma_read_bw_gbps";
        const bool lat =
            m.metric() == "rdma_write_lat_us" && LabelValue(m, "stat") == "p50";
        if (!bw && !lat) return;
        Item it;
        it.metric = m.metric();
        // The client end is the record's sender (record_speaker.h); the
        // server end only names a peer of the task.
        it.a_node = LabelValue(m, "src").empty() ? RecordNode(rec) : LabelValue(m, "src");
        it.b_node = LabelValue(m, "dst");
        if (!speaker.SpeaksFor(rec, it.a_node) || !speaker.IsPeer(rec, it.b_node)) return;
        it.a = absl::StrCat(it.a_node, ":", LabelValue(m, "hca"), "/",
                            LabelValue(m, "port"));
        it.b = absl::StrCat(it.b_node, ":", LabelValue(m, "peer_hca"), "/",
                            LabelValue(m, "peer_port"));
        it.rail = LabelValue(m, "rail");
        it.size = static_cast<int64_t>(Num(m, "size_bytes", 0));
        it.value = m.value();
        const double r1 = Num(m, "port_rate_gbps", 0),
                     r2 = Num(m, "peer_port_rate_gbps", 0);
        it.rate = r1 > 0 && r2 > 0 ? std::min(r1, r2) : std::max(r1, r2);
        it.fraction = Num(m, "min_rate_fraction", kDefaultFraction);
        items.push_back(std::move(it));
      });
  if (items.empty()) return;

  // The largest size per metric.
  std::map<std::string, int64_t> largest;
  for (const Item& it : items) largest[it.metric] = std::max(largest[it.metric], it.size);
  std::vector<Item> judged;
  for (const Item& it : items) {
    if (it.size == largest[it.metric]) judged.push_back(it);
  }

  std::map<std::string, LinkState> links;  // by LinkName
  std::map<std::string, std::set<std::string>> links_of_end;
  std::map<std::string, std::string> node_of_end;
  auto link = [&](const Item& it) -> LinkState& {
    const std::string name = LinkName(it.a, it.b);
    LinkState& l = links[name];
    if (l.a.empty()) {
      l.a = it.a < it.b ? it.a : it.b;
      l.b = it.a < it.b ? it.b : it.a;
      l.a_node = it.a < it.b ? it.a_node : it.b_node;
      l.b_node = it.a < it.b ? it.b_node : it.a_node;
    }
    links_of_end[it.a].insert(name);
    links_of_end[it.b].insert(name);
    node_of_end[it.a] = it.a_node;
    node_of_end[it.b] = it.b_node;
    return l;
  };
  auto mark = [](LinkState& l, const std::string& outcome, const std::string& why,
                 const std::string& witness) {
    if (Rank(outcome) > Rank(l.outcome)) l.outcome = outcome;
    l.evidence.push_back(why);
    l.witnesses.insert(witness);
  };
  std::map<std::string, int> slow_per_metric;

  // Rule 1: the port rate.
  for (const Item& it : judged) {
    LinkState& l = link(it);
    if (it.metric == "rdma_write_lat_us" || it.rate <= 0) continue;
    const double floor = it.fraction * it.rate;
    if (it.value < floor) {
      ++slow_per_metric[it.metric];
      mark(l, "fail",
           absl::StrCat(Describe(it), " < floor ", FormatNumber(floor), " Gb/s (",
                        FormatNumber(it.fraction), " x the ", FormatNumber(it.rate),
                        " Gb/s port rate; a healthy 400 Gb/s NDR port gives about 392)"),
           it.a_node);
    }
  }

  // A run that failed while its server listened (finding rdma.run_failed,
  // written by the client) fails its link like a slow one, so the blame
  // below weighs it with the same evidence.
  ForEachRecord(data, {v1::Record::kFinding, "rdma"}, [&](const v1::ExportedRecord& rec) {
    if (rec.suite() != "rdma" || !rec.record().has_finding()) return;
    if (rec.attempt() != latest[rec.task_id()]) return;
    const v1::Finding& f = rec.record().finding();
    if (f.check_id() != "rdma.run_failed" || f.not_measured()) return;
    Item it;
    it.a_node = LabelValue(f.labels(), "src");
    it.b_node = LabelValue(f.labels(), "dst");
    if (!speaker.SpeaksFor(rec, it.a_node) || !speaker.IsPeer(rec, it.b_node)) return;
    it.a = absl::StrCat(it.a_node, ":", LabelValue(f.labels(), "hca"), "/",
                        LabelValue(f.labels(), "port"));
    it.b = absl::StrCat(it.b_node, ":", LabelValue(f.labels(), "peer_hca"), "/",
                        LabelValue(f.labels(), "peer_port"));
    ++slow_per_metric["rdma_" + LabelValue(f.labels(), "test") +
                      (LabelValue(f.labels(), "test") == "write_lat" ? "_us" : "_gbps")];
    mark(link(it), "fail", absl::StrCat("failed: ", f.title(), " (", f.detail(), ")"),
         it.a_node);
  });

  // Rule 2: the fleet, per metric and rail.
  std::map<std::pair<std::string, std::string>, std::vector<const Item*>> groups;
  for (const Item& it : judged) groups[{it.metric, it.rail}].push_back(&it);
  for (const auto& [key, group] : groups) {
    std::vector<Keyed> keyed;
    std::vector<double> values;
    std::map<std::string, const Item*> by_subject;
    for (const Item* it : group) {
      Keyed k;
      k.subject = LinkName(it->a, it->b);
      k.value = it->value;
      keyed.push_back(k);
      values.push_back(it->value);
      by_subject[k.subject] = it;
    }
    const bool lat = key.first == "rdma_write_lat_us";
    const FleetStats s = ComputeFleetStats(values);
    for (const Outlier& o : FindOutliers(keyed, lat ? Better::kLower : Better::kHigher, 4,
                                         OutlierMargin(key.first))) {
      const Item* it = by_subject[o.item.subject];
      ++slow_per_metric[key.first];
      mark(link(*it), o.extreme ? "fail" : "warn",
           absl::StrCat(Describe(*it), " is ", o.extreme ? "an extreme" : "a",
                        " fleet outlier (", FormatNumber(o.relative_to_median),
                        "x the rail's median ", FormatNumber(s.median), " over ", s.n,
                        " links)"),
           it->a_node);
    }
  }

  // Rule 3: blame.
  std::set<std::string> blamed_nics;
  for (const auto& [end, names] : links_of_end) {
    if (names.size() < 2) continue;
    size_t slow = 0;
    std::set<std::string> witnesses;
    for (const auto& n : names) {
      slow += links[n].slow() ? 1 : 0;
      witnesses.insert(links[n].witnesses.begin(), links[n].witnesses.end());
    }
    if (slow != names.size()) continue;
    // The NIC's node is blamed on its own measurements, or on those of at
    // least two partners: never on one other node's word.
    if (!witnesses.count(node_of_end[end]) && witnesses.size() < 2) continue;
    blamed_nics.insert(end);
    std::string outcome = "warn";
    v1::RuleResult r;
    std::vector<std::string> evidence;
    for (const auto& n : names) {
      const LinkState& l = links[n];
      if (Rank(l.outcome) > Rank(outcome)) outcome = l.outcome;
      for (const auto& e : l.evidence) evidence.push_back(absl::StrCat(n, ": ", e));
    }
    r = MakeRule("rdma.slow_nic", Category(), outcome, node_of_end[end],
                 absl::StrCat("port:", end));
    r.set_value(static_cast<double>(slow));
    r.set_unit("slow links");
    r.set_message(absl::StrCat("NIC ", end, " is slow with every partner (", slow, " of ",
                               names.size(),
                               " links); blame rule: slow with every partner -> "
                               "the NIC, not its cables"));
    for (const auto& e : evidence) r.add_evidence(e);
    r.set_action(absl::StrCat("check ", end,
                              ": ibstat (rate, width), its PCIe link (lspci -vv), "
                              "firmware and NUMA placement; reseat or replace the NIC"));
    out->push_back(std::move(r));
  }
  for (const auto& [name, l] : links) {
    if (!l.slow() || blamed_nics.count(l.a) || blamed_nics.count(l.b)) continue;
    const bool a_alone = links_of_end[l.a].size() < 2;
    const bool b_alone = links_of_end[l.b].size() < 2;
    const std::string rule =
        a_alone && b_alone
            ? "blame rule: the two ends were only measured with each other, so the NIC "
              "and the "
              "cable cannot be told apart; both ends are named"
            : "blame rule: slow with this partner only -> the link between them (cable, "
              "transceivers or switch ports)";
    // Each end's node carries the result when its own records found the
    // link slow; an end only the other node measured is named in one pair
    // result that blames neither node.
    std::vector<std::string> targets;
    bool unwitnessed_end = false;
    for (const std::string& node : {l.a_node, l.b_node}) {
      if (l.witnesses.count(node)) {
        if (std::find(targets.begin(), targets.end(), node) == targets.end()) {
          targets.push_back(node);
        }
      } else {
        unwitnessed_end = true;
      }
    }
    if (unwitnessed_end) targets.push_back("");
    const std::string by = absl::StrJoin(l.witnesses, ", ");
    for (const std::string& node : targets) {
      v1::RuleResult r = MakeRule("rdma.slow_link", Category(), l.outcome, node,
                                  absl::StrCat("link:", name));
      r.set_message(absl::StrCat("slow RDMA link ", name, ", as measured by ", by, "; ", rule));
      for (const auto& e : l.evidence) r.add_evidence(e);
      r.set_action(
          absl::StrCat("check the cable and switch ports between ", l.a, " and ", l.b,
                       " (ibstat on both ends, ibdiagnet / switch port counters)"));
      out->push_back(std::move(r));
    }
  }

  // Rule 4: fleet-wide passes.
  std::map<std::string, std::vector<const Item*>> per_metric;
  for (const Item& it : judged) per_metric[it.metric].push_back(&it);
  for (const auto& [metric, list] : per_metric) {
    if (slow_per_metric[metric] > 0) continue;
    const bool lat = metric == "rdma_write_lat_us";
    std::vector<double> values;
    for (const Item* it : list) values.push_back(it->value);
    const FleetStats s = ComputeFleetStats(values);
    v1::RuleResult r =
        MakeRule(lat ? "rdma.latency" : "rdma.bandwidth", Category(), "pass", "", "fleet");
    r.set_value(s.median);
    r.set_unit(lat ? "us" : "Gb/s");
    r.set_message(absl::StrCat(
        metric, " at ", list.front()->size, " B over ", s.n, " links: median ",
        FormatNumber(s.median), ", ", lat ? "max " : "min ",
        FormatNumber(lat ? s.max : s.min), lat ? " us" : " Gb/s",
        lat ? ""
            : absl::StrCat("; every link at or above its floor (",
                           FormatNumber(list.front()->fraction), " x the port rate)")));
    out->push_back(std::move(r));
  }
}

}  // namespace cmax::reports
