#include "reports/charts.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/plural.h"
#include "common/suite_declaration.h"
#include "reports/gpu_specs.h"
#include "reports/judge_util.h"
#include "reports/metric_table.h"
#include "reports/outcome_order.h"
#include "reports/record_speaker.h"
#include "reports/stats.h"

namespace cmax::reports {
namespace {

// "node-2" < "node-10": digits compare as numbers.
bool NaturalLess(const std::string& a, const std::string& b) {
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const bool da = std::isdigit(static_cast<unsigned char>(a[i]));
    const bool db = std::isdigit(static_cast<unsigned char>(b[j]));
    if (da && db) {
      size_t ie = i, je = j;
      while (ie < a.size() && std::isdigit(static_cast<unsigned char>(a[ie]))) ++ie;
      while (je < b.size() && std::isdigit(static_cast<unsigned char>(b[je]))) ++je;
      const std::string na = a.substr(i, ie - i), nb = b.substr(j, je - j);
      const size_t za = na.find_first_not_of('0'), zb = nb.find_first_not_of('0');
      const std::string ta = za == std::string::npos ? "" : na.substr(za);
      const std::string tb = zb == std::string::npos ? "" : nb.substr(zb);
      if (ta.size() != tb.size()) return ta.size() < tb.size();
      if (ta != tb) return ta < tb;
      i = ie;
      j = je;
      continue;
    }
    if (a[i] != b[j]) return a[i] < b[j];
    ++i;
    ++j;
  }
  return a.size() - i < b.size() - j;
}

std::string Subject(const std::string& node, const v1::Measurement& m) {
  const std::string gpu = LabelValue(m, "gpu");
  return gpu.empty() ? node : absl::StrCat(node, " gpu:", gpu);
}

void SetStats(const FleetStats& s, v1::ChartStats* out) {
  out->set_n(static_cast<int32_t>(s.n));
  out->set_min(s.min);
  out->set_max(s.max);
  out->set_median(s.median);
  out->set_q1(s.q1);
  out->set_q3(s.q3);
  out->set_low_fence(s.low_mild);
  out->set_high_fence(s.high_mild);
}

// The subjects on the bad side (both sides when `better` is empty), as the
// judges name them (stats.h FindOutliers: the mild fence and the metric's
// declared margin, OutlierMargin), so a bar is never marked that no rule
// names.
std::set<std::string> OutlierSubjects(const std::vector<Keyed>& items, const std::string& better,
                                      double margin) {
  std::set<std::string> out;
  auto add = [&](Better b) {
    for (const auto& o : FindOutliers(items, b, 4, margin)) out.insert(o.item.subject);
  };
  const std::optional<Better> side = BetterFromName(better);
  if (side != Better::kLower) add(Better::kHigher);
  if (side != Better::kHigher) add(Better::kLower);
  return out;
}

// Fills a per_subject chart from every subject's value; `margin`: the
// metric's OutlierMargin.
void FinishPerSubject(std::vector<v1::ChartValue> values, double margin, v1::Chart* c) {
  c->set_kind("per_subject");
  std::sort(values.begin(), values.end(), [](const auto& a, const auto& b) {
    return NaturalLess(a.subject(), b.subject());
  });
  std::vector<double> xs;
  std::vector<Keyed> items;
  for (const auto& v : values) {
    xs.push_back(v.value());
    items.push_back({v.subject(), v.node(), v.value()});
  }
  const FleetStats s = ComputeFleetStats(xs);
  SetStats(s, c->mutable_stats());
  c->set_subjects(static_cast<int32_t>(values.size()));
  const std::set<std::string> outliers = OutlierSubjects(items, c->better(), margin);
  for (auto& v : values) v.set_outlier(outliers.count(v.subject()) > 0);
  if (values.size() <= kMaxSubjectsDrawn) {
    for (auto& v : values) *c->add_values() = std::move(v);
    return;
  }
  // Many subjects: a histogram of all, the outliers named (the farthest from
  // the median first when there are more than kMaxNamed).
  const double lo = s.min, hi = s.max > s.min ? s.max : s.min + 1;
  for (size_t i = 0; i <= kHistogramBins; ++i) {
    c->add_bin_edges(lo + (hi - lo) * static_cast<double>(i) / kHistogramBins);
  }
  std::vector<int32_t> counts(kHistogramBins, 0);
  for (double x : xs) {
    size_t b = static_cast<size_t>((x - lo) / (hi - lo) * kHistogramBins);
    counts[std::min(b, kHistogramBins - 1)]++;
  }
  for (int32_t n : counts) c->add_bin_counts(n);
  std::vector<v1::ChartValue> named;
  for (auto& v : values) {
    if (v.outlier()) named.push_back(std::move(v));
  }
  std::stable_sort(named.begin(), named.end(), [&](const auto& a, const auto& b) {
    return std::fabs(a.value() - s.median) > std::fabs(b.value() - s.median);
  });
  const size_t total = named.size();
  if (named.size() > kMaxNamed) named.resize(kMaxNamed);
  std::sort(named.begin(), named.end(), [](const auto& a, const auto& b) {
    return NaturalLess(a.subject(), b.subject());
  });
  for (auto& v : named) *c->add_values() = std::move(v);
  c->set_note(absl::StrCat(values.size(), " subjects drawn as a histogram; ", total,
                           " outlier", total == 1 ? "" : "s", " beyond the fences",
                           total > kMaxNamed ? absl::StrCat(", the ", kMaxNamed, " farthest named")
                                             : std::string(total ? " named" : "")));
}

struct Line {
  std::string name, node;
  std::vector<std::pair<double, double>> points;  // x, y
};

double Mean(const Line& l) {
  double s = 0;
  for (const auto& p : l.points) s += p.second;
  return l.points.empty() ? 0 : s / static_cast<double>(l.points.size());
}

void AddSeries(Line line, bool outlier, v1::Chart* c) {
  std::sort(line.points.begin(), line.points.end());
  v1::ChartSeries* s = c->add_series();
  s->set_name(line.name);
  s->set_node(line.node);
  s->set_outlier(outlier);
  const size_t n = line.points.size();
  const size_t step = n > kMaxPointsPerSeries ? (n + kMaxPointsPerSeries - 1) / kMaxPointsPerSeries : 1;
  for (size_t i = 0; i < n; i += step) {
    // Downsampled: the mean of each run of `step` points.
    double sx = 0, sy = 0;
    size_t k = 0;
    for (size_t j = i; j < std::min(n, i + step); ++j, ++k) {
      sx += line.points[j].first;
      sy += line.points[j].second;
    }
    s->add_x(sx / static_cast<double>(k));
    s->add_y(sy / static_cast<double>(k));
  }
}

// Fills a series chart: every line when few, else the band and the outliers
// (by each line's mean, stats.h fences and the metric's margin).
void FinishSeries(std::vector<Line> lines, double margin, v1::Chart* c) {
  c->set_kind("series");
  std::sort(lines.begin(), lines.end(),
            [](const Line& a, const Line& b) { return NaturalLess(a.name, b.name); });
  c->set_subjects(static_cast<int32_t>(lines.size()));
  std::vector<Keyed> items;
  std::vector<double> means;
  for (const auto& l : lines) {
    items.push_back({l.name, l.node, Mean(l)});
    means.push_back(Mean(l));
  }
  SetStats(ComputeFleetStats(means), c->mutable_stats());
  const std::set<std::string> outliers = OutlierSubjects(items, c->better(), margin);
  if (lines.size() <= kMaxSeriesDrawn) {
    for (auto& l : lines) {
      const bool o = outliers.count(l.name) > 0;
      AddSeries(std::move(l), o, c);
    }
    return;
  }
  // The band: exact x values when there are few distinct ones (message
  // sizes), else kBuckets buckets over the x range (seconds).
  constexpr size_t kBuckets = 60;
  std::set<double> distinct;
  double xmax = 0;
  for (const auto& l : lines) {
    for (const auto& p : l.points) {
      distinct.insert(p.first);
      xmax = std::max(xmax, p.first);
    }
  }
  const bool exact = distinct.size() <= kBuckets;
  std::vector<double> xs = exact ? std::vector<double>(distinct.begin(), distinct.end())
                                 : std::vector<double>();
  if (!exact) {
    for (size_t i = 0; i < kBuckets; ++i) {
      xs.push_back(xmax * (static_cast<double>(i) + 0.5) / kBuckets);
    }
  }
  std::vector<std::vector<double>> per_x(xs.size());
  for (const auto& l : lines) {
    // One value per line and x (its mean in the bucket).
    std::map<size_t, std::pair<double, int>> acc;
    for (const auto& p : l.points) {
      size_t i = 0;
      if (exact) {
        i = static_cast<size_t>(std::lower_bound(xs.begin(), xs.end(), p.first) - xs.begin());
      } else {
        i = std::min(kBuckets - 1,
                     static_cast<size_t>(xmax > 0 ? p.first / xmax * kBuckets : 0));
      }
      acc[i].first += p.second;
      acc[i].second++;
    }
    for (const auto& [i, sum] : acc) per_x[i].push_back(sum.first / sum.second);
  }
  for (size_t i = 0; i < xs.size(); ++i) {
    if (per_x[i].empty()) continue;
    const FleetStats s = ComputeFleetStats(per_x[i]);
    c->add_band_x(xs[i]);
    c->add_band_min(s.min);
    c->add_band_median(s.median);
    c->add_band_max(s.max);
  }
  size_t named = 0;
  for (auto& l : lines) {
    if (!outliers.count(l.name)) continue;
    if (named++ >= kMaxSeriesDrawn / 2) continue;
    AddSeries(std::move(l), true, c);
  }
  c->set_note(absl::StrCat(lines.size(), " lines drawn as the fleet's band (min, median, max); ",
                           outliers.size(), " outlier", outliers.size() == 1 ? "" : "s",
                           " by mean", named > kMaxSeriesDrawn / 2
                               ? absl::StrCat(", ", kMaxSeriesDrawn / 2, " drawn")
                               : std::string(outliers.empty() ? "" : " drawn")));
}

// Which tasks carried simulated data (Samples have no flag of their own).
std::set<std::string> SimulatedTasks(const RunData& data) {
  std::set<std::string> out;
  RecordFilter every;
  every.labels_if = NoLabels;  // reads no label: not parsed (record_set.h)
  ForEachRecord(data, every, [&](const v1::ExportedRecord& rec) {
    const auto& r = rec.record();
    if ((r.has_measurement() && r.measurement().simulated()) ||
        (r.has_finding() && r.finding().simulated())) {
      out.insert(rec.task_id());
    }
  });
  return out;
}

// `tasks`: each task id's first task in data.tasks (a map, not a walk of
// every task per record's task: 10,000 nodes have 40,000 tasks).
std::string EntryName(const RunData& data,
                      const std::map<std::string, const v1::TaskInfo*>& tasks,
                      const std::string& task_id, const std::string& suite) {
  auto it = tasks.find(task_id);
  if (it == tasks.end()) return suite;
  const v1::TaskInfo& t = *it->second;
  if (const v1::SuiteSpec* s = PlanEntryOf(data, t)) return EntryLabel(s->name(), s->suite());
  return EntryLabel(t.name(), t.suite());
}

// The plan's floor: the first of `keys` its expect.metrics sets (the
// suite's keys, most specific first). 0 when it sets none.
double PlanFloor(const v1::Plan& plan, const std::vector<std::string>& keys,
                 std::string* key) {
  const auto& metrics = plan.expect().metrics();
  for (const std::string& k : keys) {
    auto it = metrics.find(k);
    if (it != metrics.end()) {
      *key = k;
      return it->second;
    }
  }
  return 0;
}

// A chart's settings that come from its declaration, set when the chart is
// first met.
void StartChart(const SuiteInfo& suite, const MetricSpec& spec, const ChartNames& names,
                const v1::Plan& plan, v1::Chart* c) {
  c->set_id(names.id);
  c->set_title(names.title);
  c->set_unit(spec.unit);
  c->set_better(BetterName(spec.better));
  c->set_section(CanonicalCategory(suite.category));
  if (spec.chart.kind == ChartKind::kBySize) {
    c->set_x_label(spec.chart.x_label);
    c->set_x_log(true);
  }
  if (spec.chart.reference == ChartReference::kPlanFloor) {
    std::string key;
    const double floor = PlanFloor(plan, names.floor_keys, &key);
    if (floor > 0) {
      c->set_reference(floor);
      c->set_reference_label(absl::StrCat("plan floor ", key));
    }
  }
}

struct PerSubjectAcc {
  v1::Chart chart;
  const MetricSpec* spec = nullptr;  // its OutlierMargin marks the outliers
  std::string peak_dtype;            // ChartReference::kDatasheetPeak
  std::vector<v1::ChartValue> values;
  std::set<std::string> models;  // GPU models of the nodes whose GPUs it shows
};

struct SeriesAcc {
  v1::Chart chart;
  const MetricSpec* spec = nullptr;
  bool over_time = false;  // x: unix ns, made seconds since each line's first sample
  std::map<std::string, Line> lines;
};

struct MatrixAcc {
  const MetricSpec* spec = nullptr;
  v1::Chart chart;  // id, title, unit, better, section
  // src -> dst -> value (or unreachable).
  std::map<std::string, std::map<std::string, std::pair<double, bool>>> cells;
};

// The metrics the suites declare a chart for, by name: which suite, its
// declaration, and whether the record is the reachability companion of a
// matrix (ChartSpec::reachable_metric) rather than the charted metric.
struct Charted {
  const SuiteInfo* suite;
  const MetricSpec* spec;
  bool reachability;
};

struct ChartTable {
  std::map<std::string, std::vector<Charted>, std::less<>> by_metric;
  std::vector<std::string> label_keys;  // every label a namer or the walk reads
};

const ChartTable& Table() {
  static const ChartTable* table = [] {
    auto* t = new ChartTable;
    // Subject, over-time lines; the matrix cells (src, dst; record_speaker.h).
    std::set<std::string> keys = {"gpu", "sensor", "src", "dst"};
    for (const SuiteInfo& suite : SuiteCatalog()) {
      for (const MetricSpec& m : suite.metrics) {
        if (m.chart.kind == ChartKind::kNone) continue;
        t->by_metric[m.name].push_back({&suite, &m, false});
        if (!m.chart.reachable_metric.empty()) {
          t->by_metric[m.chart.reachable_metric].push_back({&suite, &m, true});
        }
        keys.insert(m.chart.labels.begin(), m.chart.labels.end());
        if (!m.chart.x_key.empty()) keys.insert(m.chart.x_key);
      }
    }
    t->label_keys.assign(keys.begin(), keys.end());
    return t;
  }();
  return *table;
}

// The declared chart of `metric` as `suite` writes it, or nullptr.
const Charted* FindCharted(const std::string& suite, const std::string& metric) {
  const auto& by_metric = Table().by_metric;
  auto it = by_metric.find(metric);
  if (it == by_metric.end()) return nullptr;
  for (const Charted& c : it->second) {
    if (c.suite->name == suite) return &c;
  }
  return nullptr;
}

void GridFromReasons(const RunData& data, v1::Scorecard* card) {
  // Measured: a record evaluated something for this node and category.
  std::map<std::string, std::set<std::string>> measured;  // category -> nodes
  RecordFilter every;
  every.labels_if = NoLabels;  // reads no label: not parsed (record_set.h)
  ForEachRecord(data, every, [&](const v1::ExportedRecord& rec) {
    const auto& r = rec.record();
    const std::string node = RecordNode(rec);
    if (node.empty()) return;
    if (r.has_measurement()) {
      measured[MeasurementCategory(r.measurement(), rec.suite())].insert(node);
    } else if (r.has_finding() && !r.finding().not_measured()) {
      measured[FindingCategory(r.finding())].insert(node);
    }
  });
  for (const auto& n : card->nodes()) {
    v1::NodeCategorySummary* g = card->add_node_grid();
    g->set_node(n.node());
    for (const auto& c : card->categories()) {
      // The node's reasons are "<Category> <outcome label>: ..." (scorecard.cc),
      // the outcome one of ReasonOutcomes() (outcome_order.h).
      int worst = 0;  // OutcomeBadness: 0 none
      for (const auto& r : n.reasons()) {
        if (!absl::StartsWith(r, c.name() + " ")) continue;
        const std::string rest = r.substr(c.name().size() + 1);
        for (const std::string& word : ReasonOutcomes()) {
          if (absl::StartsWith(rest, OutcomeLabel(word) + ":")) {
            worst = std::max(worst, OutcomeBadness(word));
            break;
          }
        }
      }
      const bool m = measured[c.name()].count(n.node()) > 0;
      std::string o = worst > OutcomeBadness("not_measured") ? OutcomeWord(worst)
                      : worst > 0                            ? (m ? "partial" : "not_measured")
                      : m                                    ? "pass"
                                                             : "not_measured";
      g->add_outcomes(o);
    }
  }
}

}  // namespace

void BuildCharts(const RunData& data, v1::Scorecard* card) {
  const std::set<std::string> simulated_tasks = SimulatedTasks(data);
  std::map<std::string, PerSubjectAcc> per_subject;  // by chart id
  std::map<std::string, SeriesAcc> series;
  std::map<std::string, MatrixAcc> matrices;
  std::set<std::string> drawn_families;
  std::map<std::string, std::string> entry_names;  // task id -> plan entry (EntryName)
  std::map<std::string, const v1::TaskInfo*> first_task;  // task id -> its first task
  for (const auto& t : data.tasks) first_task.try_emplace(t.task_id(), &t);

  // Labels are read only of the charted metrics and of Samples, and of
  // those only the labels the declarations name: the rest is not parsed
  // (record_set.h).
  RecordFilter every;
  every.labels_if = [](const v1::ExportedRecord& rec) {
    const v1::Record& r = rec.record();
    return !r.has_measurement() || Table().by_metric.count(r.measurement().metric()) > 0;
  };
  every.label_keys.assign(Table().label_keys.begin(), Table().label_keys.end());
  const RecordSpeaker speaker(data);
  ForEachRecord(data, every, [&](const v1::ExportedRecord& rec) {
    const auto& r = rec.record();
    const std::string node = RecordNode(rec);
    if (r.has_measurement()) {
      const v1::Measurement& m = r.measurement();
      const Charted* charted = FindCharted(rec.suite(), m.metric());
      if (charted == nullptr) return;
      const MetricSpec& spec = *charted->spec;
      auto [e, fresh] = entry_names.try_emplace(rec.task_id());
      if (fresh) e->second = EntryName(data, first_task, rec.task_id(), rec.suite());
      ChartNames names;
      if (!spec.chart.names(m, node, e->second, &names)) return;
      switch (spec.chart.kind) {
        case ChartKind::kPerSubject: {
          PerSubjectAcc& a = per_subject[names.id];
          if (a.spec == nullptr) {
            a.spec = &spec;
            a.peak_dtype = names.peak_dtype;
            StartChart(*charted->suite, spec, names, data.plan, &a.chart);
            drawn_families.insert(spec.chart.family);
          }
          v1::ChartValue v;
          v.set_subject(Subject(node, m));
          v.set_node(node);
          v.set_value(m.value());
          a.values.push_back(std::move(v));
          if (m.simulated()) a.chart.set_simulated(true);
          if (!LabelValue(m, "gpu").empty()) {
            if (auto it = data.inventories.find(node); it != data.inventories.end()) {
              a.models.insert(it->second.gpu_model());
            }
          }
          break;
        }
        case ChartKind::kBySize: {
          double x = 0;
          if (!absl::SimpleAtod(LabelValue(m, spec.chart.x_key), &x) || x <= 0) return;
          SeriesAcc& a = series[names.id];
          if (a.spec == nullptr) {
            a.spec = &spec;
            StartChart(*charted->suite, spec, names, data.plan, &a.chart);
            drawn_families.insert(spec.chart.family);
          }
          Line& l = a.lines[names.line];
          l.name = names.line;
          l.node = node;
          l.points.emplace_back(x, m.value());
          if (m.simulated()) a.chart.set_simulated(true);
          break;
        }
        case ChartKind::kMatrix: {
          // A row is its sender's own measurements (record_speaker.h): a
          // src label naming another node is not drawn as that node's.
          const std::string src =
              LabelValue(m, "src").empty() ? node : LabelValue(m, "src");
          const std::string dst = LabelValue(m, "dst");
          if (!speaker.SpeaksFor(rec, src) || !speaker.IsPeer(rec, dst)) return;
          MatrixAcc& a = matrices[names.id];
          if (a.spec == nullptr) {
            a.spec = &spec;
            StartChart(*charted->suite, spec, names, data.plan, &a.chart);
            drawn_families.insert(spec.chart.family);
          }
          auto& cell = a.cells[src][dst];
          if (!charted->reachability) cell.first = m.value();
          if (charted->reachability && m.value() == 0) cell.second = true;
          if (m.simulated()) a.chart.set_simulated(true);
          break;
        }
        case ChartKind::kNone:
        case ChartKind::kOverTime:
          break;
      }
    } else if (r.has_sample()) {
      const v1::Sample& s = r.sample();
      // Samples the suite declares to be drawn over time (ChartKind::kOverTime).
      const std::string suite = s.suite().empty() ? rec.suite() : s.suite();
      const SuiteInfo* info = FindSuite(suite);
      const MetricSpec* spec =
          info != nullptr ? FindSuiteMetric(*info, s.metric()) : nullptr;
      if (spec == nullptr || spec->chart.kind != ChartKind::kOverTime) return;
      SeriesAcc& a = series[absl::StrCat(suite, ":", s.metric())];
      if (a.spec == nullptr) {
        a.spec = spec;
        a.over_time = true;
        a.chart.set_id(absl::StrCat(suite, ":", s.metric()));
        a.chart.set_title(spec->chart.title);
        a.chart.set_unit(s.unit());
        a.chart.set_x_label("seconds since the task began");
        a.chart.set_better(BetterName(spec->better));
        a.chart.set_section(CanonicalCategory(info->category));
        drawn_families.insert(spec->chart.family);
      }
      std::string name = node;
      if (const std::string gpu = LabelValue(s.labels(), "gpu"); !gpu.empty()) {
        absl::StrAppend(&name, " gpu:", gpu);
      } else if (const std::string sensor = LabelValue(s.labels(), "sensor");
                 !sensor.empty()) {
        absl::StrAppend(&name, " ", sensor);
      }
      Line& l = a.lines[name];
      l.name = name;
      l.node = node;
      // x is made relative once every sample is in (below); keep the raw time.
      l.points.emplace_back(static_cast<double>(s.time_unix_ns()), s.value());
      if (simulated_tasks.count(rec.task_id())) a.chart.set_simulated(true);
    }
  });

  std::vector<v1::Chart> charts;
  for (auto& [id, a] : per_subject) {
    if (a.values.empty()) continue;
    if (a.spec->chart.reference == ChartReference::kDatasheetPeak &&
        a.models.size() == 1) {
      if (auto spec = FindGpuSpec(*a.models.begin())) {
        const double peak = PeakTflops(*spec, a.peak_dtype);
        if (peak > 0) {
          a.chart.set_reference(peak);
          a.chart.set_reference_label(
              absl::StrCat("datasheet peak ", spec->name, " ", a.peak_dtype, " dense"));
        }
      }
    }
    if (a.spec->chart.total_note) {
      double sum = 0;
      for (const auto& v : a.values) sum += v.value();
      a.chart.set_note(
          absl::StrCat("aggregate ", FormatValue(sum, a.spec->unit), " over ",
                       Counted(static_cast<int64_t>(a.values.size()), "node", "nodes")));
    }
    const std::string agg_note = a.chart.note();
    FinishPerSubject(std::move(a.values), OutlierMargin(a.spec->name), &a.chart);
    if (!agg_note.empty() && a.chart.note() != agg_note) {
      a.chart.set_note(a.chart.note().empty()
                           ? agg_note
                           : absl::StrCat(agg_note, "; ", a.chart.note()));
    }
    charts.push_back(std::move(a.chart));
  }
  for (auto& [id, a] : series) {
    std::vector<Line> lines;
    for (auto& [name, l] : a.lines) {
      if (a.over_time) {
        double t0 = 0;
        bool first = true;
        for (const auto& p : l.points) {
          if (first || p.first < t0) t0 = p.first;
          first = false;
        }
        for (auto& p : l.points) p.first = (p.first - t0) / 1e9;
      }
      lines.push_back(std::move(l));
    }
    if (lines.empty()) continue;
    FinishSeries(std::move(lines), OutlierMargin(a.spec->name), &a.chart);
    charts.push_back(std::move(a.chart));
  }
  for (auto& [id, a] : matrices) {
    std::set<std::string> names;
    for (const auto& [src, row] : a.cells) {
      names.insert(src);
      for (const auto& [dst, cell] : row) names.insert(dst);
    }
    v1::Chart c = std::move(a.chart);
    if (names.size() <= kMaxHeatmapNodes) {
      c.set_kind("heatmap");
      std::vector<double> xs;
      for (const auto& [src, row] : a.cells) {
        for (const auto& [dst, cell] : row) {
          v1::ChartCell* k = c.add_cells();
          k->set_row(src);
          k->set_col(dst);
          k->set_value(cell.first);
          k->set_state(cell.second ? "unreachable" : "ok");
          if (!cell.second) xs.push_back(cell.first);
        }
      }
      SetStats(ComputeFleetStats(xs), c.mutable_stats());
      c.set_subjects(static_cast<int32_t>(names.size()));
    } else {
      c.set_title(a.spec->chart.many_title);
      std::vector<v1::ChartValue> values;
      size_t unreachable = 0;
      for (const auto& [src, row] : a.cells) {
        std::vector<double> xs;
        for (const auto& [dst, cell] : row) {
          if (cell.second) {
            ++unreachable;
          } else {
            xs.push_back(cell.first);
          }
        }
        if (xs.empty()) continue;
        v1::ChartValue v;
        v.set_subject(src);
        v.set_node(src);
        v.set_value(ComputeFleetStats(xs).median);
        values.push_back(std::move(v));
      }
      FinishPerSubject(std::move(values), OutlierMargin(a.spec->name), &c);
      c.set_note(absl::StrCat(names.size(), " nodes: too many for a matrix; ",
                              Counted(static_cast<int64_t>(unreachable),
                                      "unreachable pair", "unreachable pairs"),
                              c.note().empty() ? "" : "; ", c.note()));
    }
    charts.push_back(std::move(c));
  }
  // The scorecard's section order, then the id.
  auto section_rank = [](const std::string& s) {
    const auto& names = CategoryNames();
    return std::find(names.begin(), names.end(), s) - names.begin();
  };
  std::stable_sort(charts.begin(), charts.end(), [&](const auto& a, const auto& b) {
    if (section_rank(a.section()) != section_rank(b.section())) {
      return section_rank(a.section()) < section_rank(b.section());
    }
    return NaturalLess(a.id(), b.id());
  });
  for (auto& c : charts) *card->add_charts() = std::move(c);

  // What was not drawn, for the chart families the suites declare: one line
  // a family (in catalog order) that drew nothing in this run.
  std::vector<std::string> families;
  std::map<std::string, std::vector<std::string>> needs;  // family -> what it lacked
  for (const SuiteInfo& suite : SuiteCatalog()) {
    for (const MetricSpec& m : suite.metrics) {
      const std::string& f = m.chart.family;
      if (m.chart.kind == ChartKind::kNone || f.empty() || drawn_families.count(f))
        continue;
      if (!needs.count(f)) families.push_back(f);
      const std::string what =
          m.chart.family_needs.empty() ? m.name : m.chart.family_needs;
      auto& list = needs[f];
      if (std::find(list.begin(), list.end(), what) == list.end()) list.push_back(what);
    }
  }
  for (const auto& f : families) {
    card->add_charts_not_measured(absl::StrCat(
        f, ": not measured (no ", absl::StrJoin(needs[f], ", "), " in this run)"));
  }
  GridFromReasons(data, card);
}

}  // namespace cmax::reports
