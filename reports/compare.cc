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

// Whether label `k` is part of a metric's key. For the fleet table's
// metrics its group keys (the labels that make figures comparable); for
// the others every label except those that describe how a figure was
// obtained and may differ between runs of the same hardware (the GEMM
// autotuner's choices, the address a peer answered on, the index of a
// first wrong element).
bool KeyLabel(const FleetMetric* fleet, const std::string& k) {
  if (fleet) {
    return std::find(fleet->group_keys.begin(), fleet->group_keys.end(), k) !=
           fleet->group_keys.end();
  }
  static const std::set<std::string> volatile_labels = {
      "verified", "algos_timed", "algos_failed", "split_k", "reduction_scheme",
      "dst_addr", "first_wrong_index", "uuid", "pci_bus_id"};
  return volatile_labels.count(k) == 0;
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
    acc.m.set_value(ComputeFleetStats(std::move(acc.values)).median);
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
                             "'): only keys of the same plan entry name are compared"));
  }
  if (a.metric_summary().empty() || b.metric_summary().empty()) {
    c.add_notes("a scorecard without metric_summary: compared on its key measurements only "
                "(at most 2000)");
  }
  int regressions = 0;

  // Metrics.
  std::map<std::string, v1::CompareMetric> before, after;
  for (auto& m : SummaryOf(a)) before.emplace(MetricKey(m), std::move(m));
  for (auto& m : SummaryOf(b)) after.emplace(MetricKey(m), std::move(m));
  int compared = 0, only_a = 0, only_b = 0;
  for (const auto& [key, ma] : before) {
    auto it = after.find(key);
    if (it == after.end()) {
      ++only_a;
      if (static_cast<size_t>(c.missing_in_b_size()) < kMaxMissingListed) {
        c.add_missing_in_b(MetricLabel(ma));
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
    if (!(std::fabs(pct) > options.threshold_pct)) continue;
    v1::CompareChange* ch = c.add_moved();
    ch->set_entry(ma.entry());
    ch->set_node(ma.node());
    ch->set_gpu(ma.gpu());
    ch->set_metric(ma.metric());
    ch->set_unit(ma.unit());
    *ch->mutable_labels() = ma.labels();
    ch->set_before(x);
    ch->set_after(y);
    ch->set_change_pct(pct);
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
  for (const auto& [key, mb] : after) {
    if (!before.count(key)) ++only_b;
  }
  c.set_metrics_compared(compared);
  c.set_only_in_a(only_a);
  c.set_only_in_b(only_b);
  // Regressions first, then by size of the change.
  std::stable_sort(c.mutable_moved()->begin(), c.mutable_moved()->end(),
                   [](const v1::CompareChange& l, const v1::CompareChange& r) {
                     const bool lr = l.direction() == "regressed", rr = r.direction() == "regressed";
                     if (lr != rr) return lr;
                     return std::fabs(l.change_pct()) > std::fabs(r.change_pct());
                   });

  // Findings of warn or worse.
  auto finding_key = [](const v1::Finding& f) {
    return absl::StrCat(FindingNode(f), "\x1f", f.check_id(), "\x1f", f.subject(), "\x1f",
                        static_cast<int>(f.severity()));
  };
  std::map<std::string, const v1::Finding*> fa, fb;
  for (const auto& f : a.findings()) {
    if (f.severity() >= v1::SEVERITY_WARN) fa.emplace(finding_key(f), &f);
  }
  for (const auto& f : b.findings()) {
    if (f.severity() >= v1::SEVERITY_WARN) fb.emplace(finding_key(f), &f);
  }
  auto add_finding = [&c](const std::string& change, const v1::Finding& f) {
    v1::CompareFinding* out = c.add_findings();
    out->set_change(change);
    out->set_node(FindingNode(f));
    out->set_check_id(f.check_id());
    out->set_severity(SeverityName(f.severity()));
    out->set_category(f.category());
    out->set_subject(f.subject());
    out->set_title(f.title());
  };
  for (const auto& [key, f] : fb) {
    if (!fa.count(key)) {
      add_finding("appeared", *f);
      ++regressions;
    }
  }
  for (const auto& [key, f] : fa) {
    if (!fb.count(key)) add_finding("cleared", *f);
  }

  // Verdicts.
  std::map<std::string, const v1::NodeVerdict*> va, vb;
  for (const auto& n : a.nodes()) va[n.node()] = &n;
  for (const auto& n : b.nodes()) vb[n.node()] = &n;
  std::set<std::string> all_nodes;
  for (const auto& [n, v] : va) all_nodes.insert(n);
  for (const auto& [n, v] : vb) all_nodes.insert(n);
  for (const auto& node : all_nodes) {
    auto ia = va.find(node);
    auto ib = vb.find(node);
    const std::string before_v = ia == va.end() ? "absent" : ia->second->verdict();
    const std::string after_v = ib == vb.end() ? "absent" : ib->second->verdict();
    if (before_v == after_v) continue;
    v1::CompareVerdict* v = c.add_verdicts();
    v->set_node(node);
    v->set_before(before_v);
    v->set_after(after_v);
    // A node gone from run B counts as worse: it was not evaluated again.
    const bool worse = after_v == "absent" ||
                       (before_v != "absent" && OutcomeBadness(after_v) > OutcomeBadness(before_v));
    v->set_worse(worse);
    if (worse) ++regressions;
    if (ib != vb.end()) {
      for (const auto& r : ib->second->reasons()) v->add_reasons(r);
    }
  }

  // Tier.
  c.set_tier_changed(a.tier() != b.tier());
  c.set_tier_worse(TierPoints(b.tier()) < TierPoints(a.tier()));
  if (c.tier_worse()) ++regressions;
  c.set_regressions(regressions);
  return c;
}

std::string RenderCompareText(const Comparison& c) {
  std::string out;
  if (c.simulated()) absl::StrAppend(&out, "SIMULATED DATA \u2014 not a measurement\n");
  absl::StrAppend(&out, "compare ", c.run_a(), " (", c.plan_a(), ") -> ", c.run_b(), " (",
                  c.plan_b(), "), threshold ", FormatNumber(c.threshold_pct()), "%\n");
  absl::StrAppend(&out, "tier: ", c.tier_a(), " -> ", c.tier_b(),
                  c.tier_worse()     ? " (worse)"
                  : c.tier_changed() ? " (changed)"
                                     : " (unchanged)",
                  "\n");
  for (const auto& n : c.notes()) absl::StrAppend(&out, "note: ", n, "\n");
  absl::StrAppend(&out, "\nmetrics: ", c.metrics_compared(), " compared, ", c.moved_size(),
                  " moved more than ", FormatNumber(c.threshold_pct()), "%, ", c.only_in_a(),
                  " only in ", c.run_a(), ", ", c.only_in_b(), " only in ", c.run_b(), "\n");
  for (const auto& ch : c.moved()) {
    absl::StrAppend(&out, "  ", absl::StrFormat("%-9s", ch.direction()), " ", ChangeLabel(ch),
                    ": ", FormatValue(ch.before(), ch.unit()), " -> ",
                    FormatValue(ch.after(), ch.unit()), " (", Pct(ch.change_pct()),
                    ch.better().empty() ? "; better direction unknown"
                                        : absl::StrCat("; ", ch.better(), " is better"),
                    ")\n");
  }
  if (!c.missing_in_b().empty()) {
    absl::StrAppend(&out, "  not measured in ", c.run_b(), ":\n");
    for (const auto& m : c.missing_in_b()) absl::StrAppend(&out, "    ", m, "\n");
    if (c.only_in_a() > c.missing_in_b_size()) {
      absl::StrAppend(&out, "    (and ", c.only_in_a() - c.missing_in_b_size(), " more)\n");
    }
  }
  absl::StrAppend(&out, "\nfindings (warn or worse): ", c.findings_size(), " changed\n");
  for (const auto& f : c.findings()) {
    absl::StrAppend(&out, "  ", absl::StrFormat("%-8s", f.change()), " [", f.severity(), "] ",
                    f.node().empty() ? "" : absl::StrCat(f.node(), ": "), f.check_id(), " ",
                    f.subject(), ": ", f.title(), "\n");
  }
  absl::StrAppend(&out, "\nverdicts: ", c.verdicts_size(), " changed\n");
  for (const auto& v : c.verdicts()) {
    absl::StrAppend(&out, "  ", v.node(), ": ", v.before(), " -> ", v.after(),
                    v.worse() ? " (worse)" : "", "\n");
    for (const auto& r : v.reasons()) absl::StrAppend(&out, "    ", r, "\n");
  }
  absl::StrAppend(&out, "\n", c.regressions(), c.regressions() == 1 ? " regression" : " regressions",
                  "\n");
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

std::string RenderCompareHtml(const Comparison& c) {
  auto H = HtmlEscape;
  std::string out =
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  absl::StrAppend(&out, "<title>cmax compare ", H(c.run_a()), " vs ", H(c.run_b()), "</title>\n",
                  "<style>body{font-family:sans-serif;margin:1.5em;color:#222}"
                  "table{border-collapse:collapse;margin:.5em 0 1.5em}"
                  "td,th{border:1px solid #ccc;padding:.25em .5em;text-align:left;"
                  "vertical-align:top}th{background:#f0f0f0}"
                  ".regressed,.worse,.appeared{background:#fde2e1}"
                  ".improved,.cleared{background:#e1f5e4}.sim{background:#fff3cd;"
                  "padding:.5em;font-weight:bold}td.num{text-align:right}"
                  "@media print{body{margin:0}}</style>\n</head>\n<body>\n");
  if (c.simulated()) {
    absl::StrAppend(&out, "<p class=\"sim\">SIMULATED DATA \u2014 not a measurement</p>\n");
  }
  absl::StrAppend(&out, "<h1>Compare ", H(c.run_a()), " \u2192 ", H(c.run_b()), "</h1>\n",
                  "<p>Plans: ", H(c.plan_a()), " \u2192 ", H(c.plan_b()), ". Threshold ",
                  H(FormatNumber(c.threshold_pct())), "%. <strong>", c.regressions(),
                  c.regressions() == 1 ? " regression" : " regressions", "</strong>.</p>\n",
                  "<p>Tier: ", H(c.tier_a()), " \u2192 ", H(c.tier_b()),
                  c.tier_worse()     ? " <span class=\"worse\">(worse)</span>"
                  : c.tier_changed() ? " (changed)"
                                     : " (unchanged)",
                  "</p>\n");
  for (const auto& n : c.notes()) absl::StrAppend(&out, "<p>Note: ", H(n), "</p>\n");
  absl::StrAppend(&out, "<h2>Metrics</h2>\n<p>", c.metrics_compared(), " compared, ",
                  c.moved_size(), " moved more than ", H(FormatNumber(c.threshold_pct())), "%, ",
                  c.only_in_a(), " only in ", H(c.run_a()), ", ", c.only_in_b(), " only in ",
                  H(c.run_b()), ".</p>\n");
  if (!c.moved().empty()) {
    absl::StrAppend(&out,
                    "<table><tr><th>change</th><th>entry</th><th>node</th><th>gpu</th>"
                    "<th>metric</th><th>labels</th><th>before</th><th>after</th><th>%</th>"
                    "<th>better</th></tr>\n");
    for (const auto& ch : c.moved()) {
      // The class comes from a fixed set, never from the data.
      const std::string cls = ch.direction() == "regressed"  ? "regressed"
                              : ch.direction() == "improved" ? "improved"
                                                             : "changed";
      absl::StrAppend(&out, "<tr class=\"", cls, "\"><td>", cls, "</td><td>", H(ch.entry()),
                      "</td><td>", H(ch.node()), "</td><td>", H(ch.gpu()), "</td><td>",
                      H(ch.metric()), "</td><td>", H(LabelsText(ch.labels())),
                      "</td><td class=\"num\">", H(FormatValue(ch.before(), ch.unit())),
                      "</td><td class=\"num\">", H(FormatValue(ch.after(), ch.unit())),
                      "</td><td class=\"num\">", H(Pct(ch.change_pct())), "</td><td>",
                      ch.better().empty() ? "unknown" : H(ch.better()), "</td></tr>\n");
    }
    absl::StrAppend(&out, "</table>\n");
  }
  if (!c.missing_in_b().empty()) {
    absl::StrAppend(&out, "<h3>Not measured in ", H(c.run_b()), "</h3>\n<ul>\n");
    for (const auto& m : c.missing_in_b()) absl::StrAppend(&out, "<li>", H(m), "</li>\n");
    absl::StrAppend(&out, "</ul>\n");
  }
  absl::StrAppend(&out, "<h2>Findings (warn or worse)</h2>\n");
  if (c.findings().empty()) {
    absl::StrAppend(&out, "<p>None appeared or cleared.</p>\n");
  } else {
    absl::StrAppend(&out,
                    "<table><tr><th>change</th><th>severity</th><th>node</th><th>check</th>"
                    "<th>subject</th><th>title</th></tr>\n");
    for (const auto& f : c.findings()) {
      const std::string cls = f.change() == "appeared" ? "appeared" : "cleared";
      absl::StrAppend(&out, "<tr class=\"", cls, "\"><td>", cls, "</td><td>", H(f.severity()),
                      "</td><td>", H(f.node()), "</td><td>", H(f.check_id()), "</td><td>",
                      H(f.subject()), "</td><td>", H(f.title()), "</td></tr>\n");
    }
    absl::StrAppend(&out, "</table>\n");
  }
  absl::StrAppend(&out, "<h2>Verdicts</h2>\n");
  if (c.verdicts().empty()) {
    absl::StrAppend(&out, "<p>No node's verdict changed.</p>\n");
  } else {
    absl::StrAppend(&out, "<table><tr><th>node</th><th>before</th><th>after</th>"
                          "<th>reasons (after)</th></tr>\n");
    for (const auto& v : c.verdicts()) {
      absl::StrAppend(&out, "<tr", v.worse() ? " class=\"worse\"" : "", "><td>", H(v.node()),
                      "</td><td>", H(v.before()), "</td><td>", H(v.after()), "</td><td>");
      for (const auto& r : v.reasons()) absl::StrAppend(&out, H(r), "<br>");
      absl::StrAppend(&out, "</td></tr>\n");
    }
    absl::StrAppend(&out, "</table>\n");
  }
  absl::StrAppend(&out, "<p>Generated ", H(c.generated()), " by cmax.</p>\n</body>\n</html>\n");
  return out;
}

}  // namespace cmax::reports
