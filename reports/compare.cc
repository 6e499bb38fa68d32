// Run comparison: the metric summary and the differences between two
// scorecards (compare.h).
#include "reports/compare.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "common/record_io.h"
#include "common/severity.h"
#include "common/suite_declaration.h"
#include "common/time_util.h"
#include "google/protobuf/util/json_util.h"
#include "reports/judge_util.h"
#include "reports/metric_table.h"
#include "reports/outcome_order.h"
#include "reports/stats.h"
#include "reports/svg.h"

namespace cmax::reports {
namespace {

constexpr size_t kMaxMissingListed = 50;

std::string LabelsText(const google::protobuf::Map<std::string, std::string>& labels) {
  std::map<std::string, std::string> sorted(labels.begin(), labels.end());
  return absl::StrJoin(sorted, ", ", absl::PairFormatter("="));
}

std::string FindingNode(const v1::Finding& f) {
  auto it = f.labels().find("node");
  return it == f.labels().end() ? "" : it->second;
}

std::string Pct(double pct) { return absl::StrFormat("%+.1f%%", pct); }

std::string ChangeLabel(const v1::CompareChange& ch) {
  v1::CompareMetric m;
  m.set_entry(ch.entry());
  m.set_node(ch.node());
  m.set_gpu(ch.gpu());
  m.set_metric(ch.metric());
  *m.mutable_labels() = ch.labels();
  return MetricLabel(m);
}

// Whether label `k` is part of a metric's key: whether it says *what* was
// measured (op, size, pattern, peer, ...) rather than *how or when* this run
// measured it. For the fleet table's metrics its group keys (the labels
// that make figures comparable); for the others every label except:
//  - instants and series of this run: a name ending in _unix_ns, _unix_ms
//    or _unix_s, or holding "_series" (storage's bw_series_mbps and
//    target_unix_ns made every storage total a key of its own run: "72 only
//    in A, 72 only in B", issue 46);
//  - by-products of the measurement: bytes moved in a timed run, a slowest
//    rank's time, waits and stalls, the per-run start offset;
//  - the run's assignments: ranks (the node and peer names identify the
//    subject; the rank a node gets differs from run to run), the address a
//    peer answered on;
//  - the GEMM autotuner's choices, the index of a first wrong element, and a
//    GPU's uuid and bus id (the gpu label identifies it).
bool KeyLabel(const FleetMetric* fleet, const std::string& k) {
  if (fleet) {
    return std::find(fleet->group_keys.begin(), fleet->group_keys.end(), k) !=
           fleet->group_keys.end();
  }
  static const std::set<std::string> per_run = {
      "verified", "algos_timed", "algos_failed", "split_k", "reduction_scheme",
      "dst_addr", "first_wrong_index", "uuid", "pci_bus_id",
      "io_bytes", "bytes_counted", "time_us_max", "waited_s", "stall_s", "last_progress_s",
      "t_start_s", "rank", "src_rank", "dst_rank", "shard_from_rank"};
  if (per_run.count(k)) return false;
  if (absl::EndsWith(k, "_unix_ns") || absl::EndsWith(k, "_unix_ms") ||
      absl::EndsWith(k, "_unix_s") || absl::StrContains(k, "_series")) {
    return false;
  }
  return true;
}

}  // namespace

std::string MetricBetter(const std::string& metric) {
  // The direction its suite declares (MetricSpec::better). A name two suites
  // declare has one direction (suite_declarations_test), so the name alone
  // decides. Undeclared, or declared with no better side: "" (a change is
  // "changed", never a regression or an improvement).
  static const auto* const by_name = [] {
    auto* m = new std::map<std::string, std::string>;
    for (const SuiteInfo& suite : SuiteCatalog()) {
      for (const MetricSpec& spec : suite.metrics) m->emplace(spec.name, BetterName(spec.better));
    }
    return m;
  }();
  auto it = by_name->find(metric);
  return it == by_name->end() ? "" : it->second;
}

std::string MetricKey(const v1::CompareMetric& m) {
  return absl::StrCat(m.entry(), "\x1f", m.node(), "\x1f", m.gpu(), "\x1f", m.metric(), "\x1f",
                      LabelsText(m.labels()));
}

std::string MetricLabel(const v1::CompareMetric& m) {
  std::string s = m.entry();
  if (!m.node().empty()) absl::StrAppend(&s, " ", m.node());
  if (!m.gpu().empty()) absl::StrAppend(&s, " gpu ", m.gpu());
  absl::StrAppend(&s, " ", m.metric());
  if (!m.labels().empty()) absl::StrAppend(&s, " (", LabelsText(m.labels()), ")");
  return s;
}

std::vector<v1::CompareMetric> BuildMetricSummary(const RunData& data, size_t* dropped) {
  // Each task id's plan entry name (the last task of that id, as a map
  // assignment would keep), found once instead of per record: 50,000 nodes
  // have 100,000 tasks and 2 M records (issue 18).
  absl::flat_hash_map<std::string, std::string> entry_of_task;
  for (const auto& t : data.tasks) {
    if (const v1::SuiteSpec* spec = PlanEntryOf(data, t)) {
      entry_of_task[t.task_id()] = spec->name().empty() ? spec->suite() : spec->name();
    } else {
      entry_of_task.erase(t.task_id());
    }
  }
  struct Acc {
    v1::CompareMetric m;
    std::vector<double> values;
  };
  // Keys in a hash map and the accumulators in first-seen order; sorted by
  // key once at the end (a std::map compared long keys per record).
  absl::flat_hash_map<std::string, size_t> index_of;
  std::vector<std::pair<std::string, Acc>> accs;
  size_t left_out = 0;
  std::vector<std::pair<const std::string*, const std::string*>> key_labels;
  std::string key;
  ForEachRecord(data, {v1::Record::kMeasurement}, [&](const v1::ExportedRecord& rec) {
    if (!rec.record().has_measurement()) return;
    const v1::Measurement& meas = rec.record().measurement();
    const std::string* entry = meas.suite().empty() ? &rec.suite() : &meas.suite();
    if (auto it = entry_of_task.find(rec.task_id()); it != entry_of_task.end()) {
      entry = &it->second;
    }
    const std::string node = RecordNode(rec);
    const std::string* gpu = nullptr;
    const FleetMetric* fleet = FindFleetMetric(meas.metric());
    key_labels.clear();
    for (const auto& [k, v] : meas.labels()) {
      if (k == "node") continue;
      if (k == "gpu") {
        gpu = &v;
        continue;
      }
      if (!KeyLabel(fleet, k)) continue;
      key_labels.emplace_back(&k, &v);
    }
    std::sort(key_labels.begin(), key_labels.end(),
              [](const auto& a, const auto& b) { return *a.first < *b.first; });
    // The same text as MetricKey of the CompareMetric made below.
    key.clear();
    absl::StrAppend(&key, *entry, "\x1f", node, "\x1f", gpu ? *gpu : std::string(), "\x1f",
                    meas.metric(), "\x1f");
    for (size_t i = 0; i < key_labels.size(); ++i) {
      absl::StrAppend(&key, i == 0 ? "" : ", ", *key_labels[i].first, "=",
                      *key_labels[i].second);
    }
    auto it = index_of.find(key);
    if (it == index_of.end()) {
      if (index_of.size() >= kMaxSummaryKeys) {
        ++left_out;
        return;
      }
      v1::CompareMetric m;
      m.set_entry(*entry);
      m.set_node(node);
      if (gpu) m.set_gpu(*gpu);
      m.set_metric(meas.metric());
      m.set_unit(meas.unit());
      for (const auto& [k, v] : key_labels) (*m.mutable_labels())[*k] = *v;
      m.set_better(MetricBetter(meas.metric()));
      it = index_of.emplace(key, accs.size()).first;
      accs.emplace_back(key, Acc{std::move(m), {}});
    }
    Acc& acc = accs[it->second].second;
    acc.values.push_back(meas.value());
    if (meas.simulated()) acc.m.set_simulated(true);
  });
  std::sort(accs.begin(), accs.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<v1::CompareMetric> out;
  out.reserve(accs.size());
  for (auto& [k, acc] : accs) {
    acc.m.set_count(static_cast<int>(acc.values.size()));
    const FleetStats stats = ComputeFleetStats(std::move(acc.values));
    acc.m.set_value(stats.median);
    acc.m.set_spread(stats.iqr);
    out.push_back(std::move(acc.m));
  }
  if (dropped) *dropped = left_out;
  return out;
}

std::vector<v1::CompareMetric> SummaryOf(const v1::Scorecard& card) {
  if (!card.metric_summary().empty()) {
    return {card.metric_summary().begin(), card.metric_summary().end()};
  }
  // An older scorecard: group its key measurements the same way.
  RunData data;
  for (const auto& m : card.measurements()) {
    v1::ExportedRecord rec;
    auto it = m.labels().find("node");
    if (it != m.labels().end()) rec.set_node(it->second);
    rec.set_suite(m.suite());
    *rec.mutable_record()->mutable_measurement() = m;
    data.records.push_back(std::move(rec));
  }
  return BuildMetricSummary(data);
}

namespace {

// Relative change below which a figure of this unit is noise when the runs
// give no spread to judge by (one value per key, fewer than kMinPeers
// peers). Latencies and durations (ns, us, ms, s) 10%: a host-path time
// carries scheduler wake-ups and interrupt coalescing, and repeats of a
// latency test on an idle machine differ by several percent. Rates and
// throughput (anything per second, IOPS, TFLOP/s) 5%: GPU compute and
// memory bandwidth repeat within the 3% the suites declare as their noise
// (MetricSpec::fleet_min_margin), so 5% is beyond it. Other units (counts,
// sizes, temperatures): no floor beyond the threshold.
double UnitFloorPct(const std::string& unit) {
  static const std::set<std::string> times = {"ns", "us", "ms", "s"};
  if (times.count(unit)) return 10;
  if (absl::StrContains(unit, "/s") || unit == "IOPS") return 5;
  return 0;
}

// Peers (the same entry, metric and labels on other nodes) needed for their
// spread to stand for the metric's noise.
constexpr size_t kMinPeers = 3;
// A change must exceed 3 IQR of the values it is judged against (the
// distance of the fleet judge's extreme fence). The difference of two noisy
// figures spreads sqrt(2) times as wide as either; for normal noise 3 IQR is
// 2.9 standard deviations of that difference, so pure jitter crosses it for
// fewer than 1 key in 200 (1.5 IQR, the mild fence, let 1 in 7 through).
constexpr double kSpreadFactor = 3;

// A run's summary, indexed for the comparison.
struct RunIndex {
  std::map<std::string, v1::CompareMetric> metrics;  // by MetricKey
  // Relative spread (kSpreadFactor IQR / |median|) of each peer group.
  std::map<std::string, double> peer_spread;
  std::map<std::string, std::string> peer_group_of;  // MetricKey -> group
};

// The key of a metric without its subject: node, gpu, and every label whose
// value names one of the runs' nodes (src, dst, host, shard_from, ...).
std::string PeerGroup(const v1::CompareMetric& m, const std::set<std::string>& nodes) {
  std::map<std::string, std::string> rest;
  for (const auto& [k, v] : m.labels()) {
    if (!nodes.count(v)) rest.emplace(k, v);
  }
  return absl::StrCat(m.entry(), "\x1f", m.metric(), "\x1f", m.unit(), "\x1f",
                      absl::StrJoin(rest, ", ", absl::PairFormatter("=")));
}

RunIndex IndexRun(const v1::Scorecard& card, const std::set<std::string>& nodes) {
  RunIndex r;
  std::map<std::string, std::vector<double>> groups;
  for (auto& m : SummaryOf(card)) {
    std::string key = MetricKey(m);
    std::string group = PeerGroup(m, nodes);
    groups[group].push_back(m.value());
    r.peer_group_of.emplace(key, std::move(group));
    r.metrics.emplace(std::move(key), std::move(m));
  }
  for (auto& [group, values] : groups) {
    if (values.size() < kMinPeers) continue;
    const FleetStats st = ComputeFleetStats(std::move(values));
    if (st.median != 0) r.peer_spread[group] = kSpreadFactor * st.iqr / std::fabs(st.median);
  }
  return r;
}

struct Noise {
  double pct = 0;
  std::string basis;
};

// The change (percent of before) a metric must exceed to be a move: the
// largest of the threshold, the metric's declared noise (its
// fleet_min_margin) and its spread in run A, the reference: of its own
// values where it has several, else of its peers'. Run A's alone, so that a
// regression that widens run B's spread cannot hide itself. With neither,
// the unit's floor stands in for the spread.
Noise NoiseOf(const v1::CompareMetric& ma, const RunIndex& a, const std::string& key,
              double threshold_pct) {
  Noise n{threshold_pct, "threshold"};
  auto raise = [&n](double pct, const char* basis) {
    if (pct > n.pct) n = {pct, basis};
  };
  raise(OutlierMargin(ma.metric()) * 100, "declared noise");
  if (ma.count() > 1 && ma.value() != 0) {
    raise(kSpreadFactor * ma.spread() / std::fabs(ma.value()) * 100, "spread in run A");
    return n;
  }
  if (auto it = a.peer_spread.find(a.peer_group_of.at(key)); it != a.peer_spread.end()) {
    raise(it->second * 100, "spread across peers in run A");
    return n;
  }
  raise(UnitFloorPct(ma.unit()), "unit floor");
  return n;
}

int CompareMetrics(const v1::Scorecard& a, const v1::Scorecard& b, double threshold_pct,
                   Comparison* c) {
  std::set<std::string> nodes;
  for (const auto* card : {&a, &b}) {
    for (const auto& n : card->nodes()) nodes.insert(n.node());
  }
  const RunIndex ia = IndexRun(a, nodes), ib = IndexRun(b, nodes);
  int regressions = 0, compared = 0, only_a = 0, only_b = 0, within_noise = 0;
  for (const auto& [key, ma] : ia.metrics) {
    auto it = ib.metrics.find(key);
    if (it == ib.metrics.end()) {
      ++only_a;
      if (static_cast<size_t>(c->missing_in_b_size()) < kMaxMissingListed) {
        c->add_missing_in_b(MetricLabel(ma));
      }
      continue;
    }
    ++compared;
    const v1::CompareMetric& mb = it->second;
    const double x = ma.value(), y = mb.value();
    double pct;
    if (x == 0) {
      if (y == 0) continue;
      pct = y > 0 ? 100 : -100;
    } else {
      pct = (y - x) / std::fabs(x) * 100;
    }
    if (!(std::fabs(pct) > threshold_pct)) continue;
    const Noise noise = NoiseOf(ma, ia, key, threshold_pct);
    // Noise is relative, so a fall is held to it as the rise that undoes it
    // (-50% as +100%): a noise above 100% still lets a collapse through.
    const double size = x > 0 && y >= 0 && y < x
                            ? (y == 0 ? HUGE_VAL : (x / y - 1) * 100)
                            : std::fabs(pct);
    if (!(size > noise.pct)) {
      ++within_noise;
      continue;
    }
    v1::CompareChange* ch = c->add_moved();
    ch->set_entry(ma.entry());
    ch->set_node(ma.node());
    ch->set_gpu(ma.gpu());
    ch->set_metric(ma.metric());
    ch->set_unit(ma.unit());
    *ch->mutable_labels() = ma.labels();
    ch->set_before(x);
    ch->set_after(y);
    ch->set_change_pct(pct);
    ch->set_noise_pct(noise.pct);
    ch->set_noise_basis(noise.basis);
    const std::string better = MetricBetter(ma.metric());
    ch->set_better(better);
    if (better.empty()) {
      ch->set_direction("changed");
    } else if ((better == "higher") == (y > x)) {
      ch->set_direction("improved");
    } else {
      ch->set_direction("regressed");
      ++regressions;
    }
  }
  for (const auto& [key, mb] : ib.metrics) {
    if (!ia.metrics.count(key)) ++only_b;
  }
  c->set_metrics_compared(compared);
  c->set_only_in_a(only_a);
  c->set_only_in_b(only_b);
  c->set_within_noise(within_noise);
  // Regressions first, then by size of the change.
  std::stable_sort(c->mutable_moved()->begin(), c->mutable_moved()->end(),
                   [](const v1::CompareChange& l, const v1::CompareChange& r) {
                     const bool lr = l.direction() == "regressed", rr = r.direction() == "regressed";
                     if (lr != rr) return lr;
                     return std::fabs(l.change_pct()) > std::fabs(r.change_pct());
                   });
  return regressions;
}

// What each run ran: the suites of each node's tasks. `completed` counts a
// suite only where a task of it completed (exit 0 or 1: its records are
// complete), which is what makes a check's absence mean "cleared";
// `attempted` counts every task, which is what a node's verdict judged.
struct RunSuites {
  std::map<std::string, std::set<std::string>> completed, attempted;  // node -> suites
  std::set<std::string> completed_anywhere;
};

RunSuites SuitesOf(const v1::Scorecard& card) {
  RunSuites r;
  for (const auto& n : card.nodes()) {
    auto& done = r.completed[n.node()];
    auto& tried = r.attempted[n.node()];
    for (const auto& t : n.tasks()) {
      tried.insert(t.suite());
      if (t.state() == "completed") {
        done.insert(t.suite());
        r.completed_anywhere.insert(t.suite());
      }
    }
  }
  return r;
}

// The suite behind a finding: its own field, else its check id's prefix
// ("hostcheck" of "hostcheck.ntp").
std::string FindingSuite(const v1::Finding& f) {
  if (!f.suite().empty()) return f.suite();
  return f.check_id().substr(0, f.check_id().find('.'));
}

// Whether the run measured the check behind `f` where `f` was found: a task
// of its suite completed on its node (anywhere, for a finding of no node).
bool Measured(const RunSuites& run, const v1::Finding& f) {
  const std::string suite = FindingSuite(f);
  const std::string node = FindingNode(f);
  if (node.empty()) return run.completed_anywhere.count(suite) > 0;
  auto it = run.completed.find(node);
  return it != run.completed.end() && it->second.count(suite) > 0;
}

int CompareFindings(const v1::Scorecard& a, const v1::Scorecard& b, const RunSuites& sa,
                    const RunSuites& sb, Comparison* c) {
  auto finding_key = [](const v1::Finding& f) {
    return absl::StrCat(FindingNode(f), "\x1f", f.check_id(), "\x1f", f.subject(), "\x1f",
                        static_cast<int>(f.severity()));
  };
  // A could-not-run finding evaluated nothing (DESIGN.md, "Judgement"): it
  // neither appears nor clears.
  auto index = [&](const v1::Scorecard& card) {
    std::map<std::string, const v1::Finding*> out;
    for (const auto& f : card.findings()) {
      if (f.severity() >= v1::SEVERITY_WARN && !f.not_measured()) out.emplace(finding_key(f), &f);
    }
    return out;
  };
  const auto fa = index(a), fb = index(b);
  auto add_finding = [c](const std::string& change, const v1::Finding& f) {
    v1::CompareFinding* out = c->add_findings();
    out->set_change(change);
    out->set_node(FindingNode(f));
    out->set_check_id(f.check_id());
    out->set_severity(SeverityName(f.severity()));
    out->set_category(f.category());
    out->set_subject(f.subject());
    out->set_title(f.title());
  };
  int regressions = 0;
  for (const auto& [key, f] : fb) {
    if (fa.count(key)) continue;
    if (Measured(sa, *f)) {
      add_finding("appeared", *f);
      ++regressions;
    } else {
      add_finding("not measured in A", *f);
    }
  }
  for (const auto& [key, f] : fa) {
    if (!fb.count(key)) add_finding(Measured(sb, *f) ? "cleared" : "not measured in B", *f);
  }
  return regressions;
}

// "orchestration, storage" of the suites in `x` that `y` lacks.
std::string Missing(const std::set<std::string>& x, const std::set<std::string>& y) {
  std::vector<std::string> out;
  std::set_difference(x.begin(), x.end(), y.begin(), y.end(), std::back_inserter(out));
  return absl::StrJoin(out, ", ");
}

int CompareVerdicts(const v1::Scorecard& a, const v1::Scorecard& b, const RunSuites& sa,
                    const RunSuites& sb, Comparison* c) {
  std::map<std::string, const v1::NodeVerdict*> va, vb;
  for (const auto& n : a.nodes()) va[n.node()] = &n;
  for (const auto& n : b.nodes()) vb[n.node()] = &n;
  std::set<std::string> all_nodes;
  for (const auto& [n, v] : va) all_nodes.insert(n);
  for (const auto& [n, v] : vb) all_nodes.insert(n);
  int regressions = 0;
  for (const auto& node : all_nodes) {
    auto ia = va.find(node);
    auto ib = vb.find(node);
    const std::string before_v = ia == va.end() ? "absent" : ia->second->verdict();
    const std::string after_v = ib == vb.end() ? "absent" : ib->second->verdict();
    if (before_v == after_v) continue;
    v1::CompareVerdict* v = c->add_verdicts();
    v->set_node(node);
    v->set_before(before_v);
    v->set_after(after_v);
    // A verdict judges the suites that ran on the node: where the runs ran
    // different ones (a quick plan against a full one, a node one run did
    // not select) the two verdicts answer different questions.
    std::string note;
    if (ia == va.end()) {
      note = "not in run A";
    } else if (ib == vb.end()) {
      note = "not in run B";
    } else {
      const auto& ra = sa.attempted.at(node);
      const auto& rb = sb.attempted.at(node);
      const std::string only_a = Missing(ra, rb), only_b = Missing(rb, ra);
      if (!only_a.empty()) absl::StrAppend(&note, "only A ran ", only_a, " on it");
      if (!only_b.empty()) {
        absl::StrAppend(&note, note.empty() ? "" : "; ", "only B ran ", only_b, " on it");
      }
    }
    v->set_comparable(note.empty());
    v->set_comparable_note(note);
    const bool worse = v->comparable() && OutcomeBadness(after_v) > OutcomeBadness(before_v);
    v->set_worse(worse);
    if (worse) ++regressions;
    if (ib != vb.end()) {
      for (const auto& r : ib->second->reasons()) v->add_reasons(r);
    }
  }
  return regressions;
}

std::string Plural(int n, absl::string_view one, absl::string_view many) {
  return absl::StrCat(n, " ", n == 1 ? one : many);
}

// The lines every rendering leads with (CompareResult.summary).
std::vector<std::string> SummaryLines(const Comparison& c) {
  int regressed = 0, improved = 0, changed = 0;
  for (const auto& ch : c.moved()) {
    (ch.direction() == "regressed"  ? regressed
     : ch.direction() == "improved" ? improved
                                    : changed)++;
  }
  std::map<std::string, int> findings;
  for (const auto& f : c.findings()) ++findings[f.change()];
  int worse = 0, better = 0, not_comparable = 0;
  for (const auto& v : c.verdicts()) {
    if (!v.comparable()) {
      ++not_comparable;
    } else {
      (v.worse() ? worse : better)++;
    }
  }
  std::vector<std::string> out;
  out.push_back(c.regressions() == 0 ? "no regression"
                                     : Plural(c.regressions(), "regression", "regressions"));
  out.push_back(absl::StrCat(
      "metrics: ", c.metrics_compared(), " in both runs: ", regressed, " regressed, ", improved,
      " improved, ", changed, " changed beyond their noise; ", c.within_noise(),
      " moved within it; ", c.only_in_a(), " not measured in B, ", c.only_in_b(),
      " not measured in A"));
  out.push_back(absl::StrCat("findings (warn or worse): ", findings["appeared"], " appeared, ",
                             findings["cleared"], " cleared; ", findings["not measured in B"],
                             " not measured in B, ", findings["not measured in A"],
                             " not measured in A"));
  std::string verdicts = absl::StrCat("verdicts: ", worse, " worse, ", better, " better");
  if (not_comparable > 0) {
    absl::StrAppend(&verdicts, "; ",
                    Plural(not_comparable, "changed node not comparable (the runs ran different "
                                           "suites on it, or only one had it)",
                           "changed nodes not comparable (the runs ran different suites on "
                           "them, or only one had them)"));
  }
  out.push_back(std::move(verdicts));
  std::string tier = absl::StrCat("tier: ", c.tier_a(), " -> ", c.tier_b());
  if (!c.tier_changed()) {
    absl::StrAppend(&tier, " (unchanged)");
  } else if (TierPoints(c.tier_a()) == 0 || TierPoints(c.tier_b()) == 0) {
    absl::StrAppend(&tier, " (not compared: a run that is not rated has no tier)");
  } else if (!c.tier_comparable()) {
    absl::StrAppend(&tier, " (not compared: the runs ran different suites or nodes)");
  } else if (c.tier_worse()) {
    absl::StrAppend(&tier, " (worse)");
  } else {
    absl::StrAppend(&tier, " (better)");
  }
  out.push_back(std::move(tier));
  return out;
}

}  // namespace

Comparison CompareScorecards(const v1::Scorecard& a, const v1::Scorecard& b,
                             const CompareOptions& options) {
  Comparison c;
  c.set_run_a(a.run_id());
  c.set_run_b(b.run_id());
  c.set_plan_a(a.plan());
  c.set_plan_b(b.plan());
  c.set_tier_a(a.tier());
  c.set_tier_b(b.tier());
  c.set_threshold_pct(options.threshold_pct);
  c.set_simulated(a.simulated() || b.simulated());
  c.set_generated(FormatRfc3339(NowUnixNs()));
  if (a.plan() != b.plan()) {
    c.add_notes(absl::StrCat("different plans ('", a.plan(), "' and '", b.plan(),
                             "'): only what both ran is compared"));
  }
  if (a.metric_summary().empty() || b.metric_summary().empty()) {
    c.add_notes("a scorecard without metric_summary: compared on its key measurements only "
                "(at most 2000)");
  }
  const RunSuites sa = SuitesOf(a), sb = SuitesOf(b);
  int regressions = CompareMetrics(a, b, options.threshold_pct, &c);
  regressions += CompareFindings(a, b, sa, sb, &c);
  regressions += CompareVerdicts(a, b, sa, sb, &c);
  c.set_tier_changed(a.tier() != b.tier());
  // The tier follows the verdicts and the coverage: two tiers compare when
  // both runs ran the same suites on the same nodes and both are rated
  // ("not rated" says too little was measured, not that the cluster is
  // worse).
  c.set_tier_comparable(sa.attempted == sb.attempted && TierPoints(a.tier()) > 0 &&
                        TierPoints(b.tier()) > 0);
  c.set_tier_worse(c.tier_comparable() && TierPoints(b.tier()) < TierPoints(a.tier()));
  if (c.tier_worse()) ++regressions;
  c.set_regressions(regressions);
  for (auto& line : SummaryLines(c)) c.add_summary(std::move(line));
  return c;
}

namespace {

// Rows a text section lists; the HTML shows as many and folds up to
// kMaxHtmlRows more into a <details>. The rest are counted, and the JSON
// lists every one.
constexpr int kMaxTextRows = 20;
constexpr int kMaxHtmlRows = 200;
// Run B's reasons shown under a changed verdict.
constexpr int kMaxReasons = 5;

std::string MoreText(int shown, int total) {
  return total > shown ? absl::StrCat("    (and ", total - shown,
                                      " more: --format json lists every one)\n")
                       : "";
}

std::string MovedLine(const v1::CompareChange& ch) {
  return absl::StrCat(
      absl::StrFormat("%-9s", ch.direction()), " ", ChangeLabel(ch), ": ",
      FormatValue(ch.before(), ch.unit()), " -> ", FormatValue(ch.after(), ch.unit()), " (",
      Pct(ch.change_pct()),
      ch.better().empty() ? "; better direction unknown"
                          : absl::StrCat("; ", ch.better(), " is better"),
      "; noise ", FormatNumber(ch.noise_pct()), "%, ", ch.noise_basis(), ")");
}

std::string FindingLine(const v1::CompareFinding& f) {
  return absl::StrCat(f.change(), " [", f.severity(), "] ",
                      f.node().empty() ? "" : absl::StrCat(f.node(), ": "), f.check_id(), " ",
                      f.subject(), ": ", f.title());
}

std::string VerdictLine(const v1::CompareVerdict& v) {
  if (!v.comparable()) {
    return absl::StrCat(v.node(), ": ", v.before(), " in A, ", v.after(),
                        " in B: not compared (", v.comparable_note(), ")");
  }
  return absl::StrCat(v.node(), ": ", v.before(), " -> ", v.after(), v.worse() ? " (worse)" : "");
}

}  // namespace

std::string RenderCompareText(const Comparison& c) {
  std::string out;
  if (c.simulated()) absl::StrAppend(&out, "SIMULATED DATA \u2014 not a measurement\n");
  absl::StrAppend(&out, "compare A = ", c.run_a(), " (", c.plan_a(), ") -> B = ", c.run_b(), " (",
                  c.plan_b(), "), threshold ", FormatNumber(c.threshold_pct()), "%\n");
  for (const auto& line : c.summary()) absl::StrAppend(&out, "  ", line, "\n");
  for (const auto& n : c.notes()) absl::StrAppend(&out, "  note: ", n, "\n");
  if (!c.moved().empty()) {
    absl::StrAppend(&out, "\nmetrics that moved beyond their noise:\n");
    const int shown = std::min(c.moved_size(), kMaxTextRows);
    for (int i = 0; i < shown; ++i) absl::StrAppend(&out, "  ", MovedLine(c.moved(i)), "\n");
    absl::StrAppend(&out, MoreText(shown, c.moved_size()));
  }
  if (!c.missing_in_b().empty()) {
    absl::StrAppend(&out, "\nmetrics not measured in B:\n");
    const int shown = std::min(c.missing_in_b_size(), kMaxTextRows);
    for (int i = 0; i < shown; ++i) absl::StrAppend(&out, "  ", c.missing_in_b(i), "\n");
    absl::StrAppend(&out, MoreText(shown, c.only_in_a()));
  }
  if (!c.findings().empty()) {
    absl::StrAppend(&out, "\nfindings (warn or worse):\n");
    const int shown = std::min(c.findings_size(), kMaxTextRows);
    for (int i = 0; i < shown; ++i) absl::StrAppend(&out, "  ", FindingLine(c.findings(i)), "\n");
    absl::StrAppend(&out, MoreText(shown, c.findings_size()));
  }
  if (!c.verdicts().empty()) {
    absl::StrAppend(&out, "\nverdicts that differ:\n");
    const int shown = std::min(c.verdicts_size(), kMaxTextRows);
    for (int i = 0; i < shown; ++i) {
      const auto& v = c.verdicts(i);
      absl::StrAppend(&out, "  ", VerdictLine(v), "\n");
      if (!v.comparable()) continue;
      const int reasons = std::min(v.reasons_size(), kMaxReasons);
      for (int r = 0; r < reasons; ++r) absl::StrAppend(&out, "    ", v.reasons(r), "\n");
      if (v.reasons_size() > reasons) {
        absl::StrAppend(&out, "    (and ", v.reasons_size() - reasons, " more reasons)\n");
      }
    }
    absl::StrAppend(&out, MoreText(shown, c.verdicts_size()));
  }
  return out;
}

std::string RenderCompareJson(const Comparison& c) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(c, &out, options).ok()) {
    return MessageToJsonLine(c, true);
  }
  return out;
}

namespace {

// Rows of a table: the first kMaxTextRows shown, up to kMaxHtmlRows more
// folded into a <details> (no script), the rest counted. `row(i)` writes
// the i-th <tr>.
template <typename Row>
void AppendBoundedTable(std::string* out, const std::string& header, int total, Row row) {
  const int shown = std::min(total, kMaxTextRows);
  const int folded = std::min(total, kMaxHtmlRows) - shown;
  absl::StrAppend(out, "<table>", header, "\n");
  for (int i = 0; i < shown; ++i) absl::StrAppend(out, row(i));
  absl::StrAppend(out, "</table>\n");
  if (folded > 0) {
    absl::StrAppend(out, "<details><summary>", folded, " more</summary>\n<table>", header, "\n");
    for (int i = shown; i < shown + folded; ++i) absl::StrAppend(out, row(i));
    absl::StrAppend(out, "</table>\n</details>\n");
  }
  if (total > shown + folded) {
    absl::StrAppend(out, "<p>And ", total - shown - folded,
                    " more: <code>cmaxctl compare --format json</code> lists every one.</p>\n");
  }
}

}  // namespace

std::string RenderCompareHtml(const Comparison& c) {
  auto H = HtmlEscape;
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  absl::StrAppend(&out, "<title>cmax compare ", H(c.run_a()), " vs ", H(c.run_b()), "</title>\n",
                  "<style>body{font-family:sans-serif;margin:1.5em;color:#222}"
                  "table{border-collapse:collapse;margin:.5em 0 1em}"
                  "td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left;"
                  "vertical-align:top}th{background:#f0f0f0}"
                  ".regressed,.worse,.appeared{background:#fde2e1}"
                  ".improved,.cleared{background:#e1f5e4}.unmeasured{color:#666}"
                  ".sim{background:#fff3cd;padding:.5em;font-weight:bold}td.num{text-align:right}"
                  "details{margin:0 0 1.5em}"
                  "@media print{body{margin:0}}</style>\n</head>\n<body>\n");
  if (c.simulated()) {
    absl::StrAppend(&out, "<p class=\"sim\">SIMULATED DATA \u2014 not a measurement</p>\n");
  }
  absl::StrAppend(&out, "<h1>Compare A = ", H(c.run_a()), " \u2192 B = ", H(c.run_b()), "</h1>\n",
                  "<p>Plans: ", H(c.plan_a()), " \u2192 ", H(c.plan_b()), ". Threshold ",
                  H(FormatNumber(c.threshold_pct())), "%.</p>\n<h2>Summary</h2>\n<ul>\n");
  for (int i = 0; i < c.summary_size(); ++i) {
    absl::StrAppend(&out, "<li>", i == 0 ? "<strong>" : "", H(c.summary(i)),
                    i == 0 ? "</strong>" : "", "</li>\n");
  }
  for (const auto& n : c.notes()) absl::StrAppend(&out, "<li>Note: ", H(n), "</li>\n");
  absl::StrAppend(&out, "</ul>\n");
  if (!c.moved().empty()) {
    absl::StrAppend(&out, "<h2>Metrics that moved beyond their noise</h2>\n");
    AppendBoundedTable(
        &out,
        "<tr><th>change</th><th>entry</th><th>node</th><th>gpu</th><th>metric</th>"
        "<th>labels</th><th>before</th><th>after</th><th>%</th><th>noise</th><th>better</th></tr>",
        c.moved_size(), [&](int i) {
          const auto& ch = c.moved(i);
          // The class comes from a fixed set, never from the data.
          const std::string cls = ch.direction() == "regressed"  ? "regressed"
                                  : ch.direction() == "improved" ? "improved"
                                                                 : "changed";
          return absl::StrCat(
              "<tr class=\"", cls, "\"><td>", cls, "</td><td>", H(ch.entry()), "</td><td>",
              H(ch.node()), "</td><td>", H(ch.gpu()), "</td><td>", H(ch.metric()), "</td><td>",
              H(LabelsText(ch.labels())), "</td><td class=\"num\">",
              H(FormatValue(ch.before(), ch.unit())), "</td><td class=\"num\">",
              H(FormatValue(ch.after(), ch.unit())), "</td><td class=\"num\">",
              H(Pct(ch.change_pct())), "</td><td>", H(FormatNumber(ch.noise_pct())), "% (",
              H(ch.noise_basis()), ")</td><td>",
              ch.better().empty() ? "unknown" : H(ch.better()), "</td></tr>\n");
        });
  }
  if (!c.missing_in_b().empty()) {
    absl::StrAppend(&out, "<h2>Metrics not measured in B</h2>\n");
    AppendBoundedTable(&out, "<tr><th>metric</th></tr>", c.missing_in_b_size(), [&](int i) {
      return absl::StrCat("<tr class=\"unmeasured\"><td>", H(c.missing_in_b(i)), "</td></tr>\n");
    });
    if (c.only_in_a() > c.missing_in_b_size()) {
      absl::StrAppend(&out, "<p>And ", c.only_in_a() - c.missing_in_b_size(),
                      " more not listed.</p>\n");
    }
  }
  if (!c.findings().empty()) {
    absl::StrAppend(&out, "<h2>Findings (warn or worse)</h2>\n");
    AppendBoundedTable(&out,
                       "<tr><th>change</th><th>severity</th><th>node</th><th>check</th>"
                       "<th>subject</th><th>title</th></tr>",
                       c.findings_size(), [&](int i) {
                         const auto& f = c.findings(i);
                         const std::string cls = f.change() == "appeared" ? "appeared"
                                                 : f.change() == "cleared" ? "cleared"
                                                                           : "unmeasured";
                         return absl::StrCat("<tr class=\"", cls, "\"><td>", H(f.change()),
                                             "</td><td>", H(f.severity()), "</td><td>",
                                             H(f.node()), "</td><td>", H(f.check_id()),
                                             "</td><td>", H(f.subject()), "</td><td>",
                                             H(f.title()), "</td></tr>\n");
                       });
  }
  if (!c.verdicts().empty()) {
    absl::StrAppend(&out, "<h2>Verdicts that differ</h2>\n");
    AppendBoundedTable(
        &out, "<tr><th>node</th><th>A</th><th>B</th><th>compared</th><th>reasons (B)</th></tr>",
        c.verdicts_size(), [&](int i) {
          const auto& v = c.verdicts(i);
          const char* cls = v.worse()         ? " class=\"worse\""
                            : !v.comparable() ? " class=\"unmeasured\""
                                              : "";
          std::string row = absl::StrCat(
              "<tr", cls,
              "><td>", H(v.node()), "</td><td>", H(v.before()), "</td><td>", H(v.after()),
              "</td><td>",
              v.comparable() ? (v.worse() ? "worse" : "better")
                             : absl::StrCat("not compared: ", H(v.comparable_note())),
              "</td><td>");
          const int reasons = v.comparable() ? std::min(v.reasons_size(), kMaxReasons) : 0;
          for (int r = 0; r < reasons; ++r) absl::StrAppend(&row, H(v.reasons(r)), "<br>");
          if (v.comparable() && v.reasons_size() > reasons) {
            absl::StrAppend(&row, "and ", v.reasons_size() - reasons, " more");
          }
          absl::StrAppend(&row, "</td></tr>\n");
          return row;
        });
  }
  absl::StrAppend(&out, "<p>Generated ", H(c.generated()), " by cmax.</p>\n</body>\n</html>\n");
  return out;
}

}  // namespace cmax::reports
