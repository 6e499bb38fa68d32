// Storage judge: the cluster's figure per pattern from every node's storage
// records, computed over the window in which every node was active.
//
// Per (storage class, pattern, op) group of `job=all` measurements:
//  - Aggregate bandwidth. When every node's record carries its per-second
//    series (labels bw_series_mbps, bw_series_start_unix_ms,
//    bw_series_step_ms; from fio's bandwidth logs), the aggregate is the mean
//    over the seconds in which all nodes were active of the sum of the
//    nodes' bandwidths, i.e. bytes moved inside the common window / its
//    length (stonewalling: a straggler's tail does not count). The first and
//    last second of each series (partial seconds) are dropped when a series
//    has three or more. Otherwise the aggregate is the sum of the per-node
//    bandwidths, and the evidence gives the overlap of the nodes'
//    [start_unix_ns, end_unix_ns] windows as a fraction of their span.
//  - Stragglers: nodes whose figure is a low outlier (stats.h FindOutliers)
//    warn, each named.
//  - Metadata: summed ops/s per operation; checkpoint and restore: the
//    slowest node's seconds.
// Local scratch and shared storage are separate groups (rule subjects and
// evidence say which). An optional plan floor, expect.metrics
// "storage_aggregate_mbps.<pattern>", fails a lower aggregate.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/plural.h"
#include "generated/suite_judges.h"
#include "reports/judge_util.h"
#include "reports/metric_table.h"
#include "reports/run_data.h"
#include "reports/stats.h"

namespace cmax::reports {
namespace {

struct NodeFigure {
  std::string node;
  double value = 0;
  int64_t start_ns = 0, end_ns = 0;
  bool has_series = false;
  int64_t series_start_ms = 0, step_ms = 1000;
  std::vector<double> series;
  std::string fs_type, mount_source, path, unit;
};

int64_t LabelInt(const v1::Measurement& m, const std::string& key) {
  int64_t v = 0;
  return absl::SimpleAtoi(LabelValue(m, key), &v) ? v : 0;
}

// Where a group's figures were taken, in words: "shared storage (nfs
// server:/export at /mnt/shared)". Every clause is filled or left out: a
// record without a storage class or mount labels (a simulated run) reads
// "storage", not "storage of unknown class ( at )".
std::string StorageWhere(const std::string& cls, const NodeFigure& f) {
  std::string where = cls == "shared" ? "shared storage" : cls == "local" ? "local scratch"
                                                                          : "storage";
  std::vector<std::string> mount;
  for (const std::string* part : {&f.fs_type, &f.mount_source}) {
    if (!part->empty()) mount.push_back(*part);
  }
  std::string location = absl::StrJoin(mount, " ");
  if (!f.path.empty()) absl::StrAppend(&location, location.empty() ? "at " : " at ", f.path);
  if (!location.empty()) absl::StrAppend(&where, " (", location, ")");
  return where;
}

// "seq-read read" / "metadata" / "read": the pattern and op that are set.
std::string PatternOp(const std::string& pattern, const std::string& op) {
  std::vector<std::string> parts;
  for (const std::string* part : {&pattern, &op}) {
    if (!part->empty()) parts.push_back(*part);
  }
  return absl::StrJoin(parts, " ");
}

bool ParseSeries(const std::string& text, std::vector<double>* out) {
  out->clear();
  if (text.empty()) return false;
  for (absl::string_view p : absl::StrSplit(text, ',')) {
    double v = 0;
    if (!absl::SimpleAtod(p, &v) || !std::isfinite(v)) return false;
    out->push_back(v);
  }
  return true;
}

v1::RuleResult Rule(const std::string& id, const std::string& outcome, const std::string& node,
                    const std::string& subject, const std::string& message) {
  return MakeRule(id, JudgeCategory("storage"), outcome, node, subject, message);
}

struct Aggregate {
  double value = 0;
  std::string method;
  std::vector<std::string> evidence;
};

Aggregate AggregateBandwidth(const std::vector<NodeFigure>& nodes) {
  Aggregate a;
  bool all_series = std::all_of(nodes.begin(), nodes.end(),
                                [](const NodeFigure& n) { return n.has_series; });
  if (all_series && nodes.size() > 1) {
    // Seconds (as Unix ms) in which each node was active, edges trimmed.
    int64_t lo = INT64_MIN, hi = INT64_MAX, step = nodes[0].step_ms;
    for (const auto& n : nodes) {
      size_t first = n.series.size() >= 3 ? 1 : 0;
      size_t last = n.series.size() >= 3 ? n.series.size() - 2 : n.series.size() - 1;
      lo = std::max(lo, n.series_start_ms + static_cast<int64_t>(first) * n.step_ms);
      hi = std::min(hi, n.series_start_ms + static_cast<int64_t>(last) * n.step_ms);
      if (n.step_ms != step) step = 0;
    }
    if (step > 0 && lo <= hi) {
      int64_t seconds = (hi - lo) / step + 1;
      double sum = 0;
      std::vector<std::string> per_node;
      for (const auto& n : nodes) {
        double node_sum = 0;
        for (int64_t t = lo; t <= hi; t += step) {
          node_sum += n.series[static_cast<size_t>((t - n.series_start_ms) / step)];
        }
        sum += node_sum;
        per_node.push_back(absl::StrFormat("%s %.1f", n.node, node_sum / seconds));
      }
      a.value = sum / seconds;
      a.method = absl::StrFormat(
          "sum over nodes of the bytes moved in the %lld s in which all %zu nodes were active "
          "/ %lld s (per-second fio bandwidth logs)",
          static_cast<long long>(seconds), nodes.size(), static_cast<long long>(seconds));
      a.evidence.push_back(absl::StrCat("all-active window: unix ms ", lo, " .. ", hi + step));
      a.evidence.push_back(absl::StrCat("per node in the window (MB/s): ",
                                        absl::StrJoin(per_node, ", ")));
      return a;
    }
  }
  int64_t max_start = INT64_MIN, min_end = INT64_MAX, min_start = INT64_MAX, max_end = INT64_MIN;
  for (const auto& n : nodes) {
    a.value += n.value;
    max_start = std::max(max_start, n.start_ns);
    min_start = std::min(min_start, n.start_ns);
    min_end = std::min(min_end, n.end_ns);
    max_end = std::max(max_end, n.end_ns);
  }
  if (nodes.size() == 1) {
    a.method = "one node: its own bandwidth";
    return a;
  }
  double span = static_cast<double>(max_end - min_start);
  double overlap = span > 0 ? std::max(0.0, static_cast<double>(min_end - max_start)) / span : 0;
  a.method = absl::StrFormat(
      "sum of the per-node bandwidths (no per-second logs from every node); the nodes' "
      "windows overlap for %.0f%% of their span",
      overlap * 100);
  a.evidence.push_back(absl::StrFormat("window overlap fraction %.3f", overlap));
  return a;
}

void JudgeStorage(const RunData& data, std::vector<v1::RuleResult>* out) {
  // (class, pattern, op, metric) -> node -> figure (the last record wins).
  using Key = std::tuple<std::string, std::string, std::string, std::string>;
  std::map<Key, std::map<std::string, NodeFigure>> groups;
  bool any_storage = false;
  // The records the first check keeps are among these: the rest is not parsed.
  RecordFilter storage;
  storage.suite_or_own = "storage";
  ForEachRecord(data, storage, [&](const v1::ExportedRecord& er) {
    if (er.suite() != "storage" && er.record().measurement().suite() != "storage") return;
    any_storage = true;
    if (!er.record().has_measurement()) return;
    const v1::Measurement& m = er.record().measurement();
    if (LabelValue(m, "job") != "all") return;
    const std::string& metric = m.metric();
    if (metric != "storage_bandwidth_mbps" && metric != "storage_checkpoint_seconds" &&
        metric != "storage_restore_seconds" &&
        metric != "storage_metadata_ops") {
      return;
    }
    std::string cls = LabelValue(m, "storage_class");
    if (cls.empty()) cls = "unknown";
    // The sender (record_speaker.h); the host label only for a record that
    // has none (a hand-made file).
    std::string node = RecordNode(er);
    if (node.empty()) node = LabelValue(m, "host");
    NodeFigure f;
    f.node = node;
    f.value = m.value();
    f.unit = m.unit();
    f.start_ns = LabelInt(m, "start_unix_ns");
    f.end_ns = LabelInt(m, "end_unix_ns");
    f.fs_type = LabelValue(m, "fs_type");
    f.mount_source = LabelValue(m, "mount_source");
    f.path = LabelValue(m, "path");
    if (ParseSeries(LabelValue(m, "bw_series_mbps"), &f.series) && !f.series.empty()) {
      f.has_series = true;
      f.series_start_ms = LabelInt(m, "bw_series_start_unix_ms");
      f.step_ms = std::max<int64_t>(1, LabelInt(m, "bw_series_step_ms"));
    }
    groups[{cls, LabelValue(m, "pattern"), LabelValue(m, "op"), metric}][node] = std::move(f);
  });
  if (groups.empty()) {
    if (any_storage) {
      out->push_back(Rule("storage.measured", "not_measured", "", "storage",
                          "the storage suite ran but measured nothing (see its findings)"));
    }
    return;
  }
  int gpus = 0;
  for (const auto& [node, inv] : data.inventories) gpus += inv.gpu_count();

  for (const auto& [key, by_node] : groups) {
    const auto& [cls, pattern, op, metric] = key;
    std::vector<NodeFigure> nodes;
    for (const auto& [n, f] : by_node) nodes.push_back(f);
    const NodeFigure& any = nodes.front();
    const std::string where = StorageWhere(cls, any);
    const std::string what = PatternOp(pattern, op);
    std::string subject = absl::StrCat("storage:", cls, "/", pattern, op.empty() ? "" : "/", op);

    if (metric == "storage_checkpoint_seconds" || metric == "storage_restore_seconds") {
      auto slowest = std::max_element(nodes.begin(), nodes.end(),
                                      [](const auto& a, const auto& b) { return a.value < b.value; });
      v1::RuleResult r = Rule(
          metric == "storage_checkpoint_seconds" ? "storage.checkpoint_seconds"
                                                 : "storage.restore_seconds",
          "pass", "", subject,
          absl::StrFormat("%s on %s: %.2f s on the slowest of %s (%s)", pattern, where,
                          slowest->value, Counted(nodes.size(), "node", "nodes"),
                          slowest->node));
      r.set_value(slowest->value);
      r.set_unit("s");
      out->push_back(r);
      continue;
    }

    Aggregate agg;
    if (metric == "storage_metadata_ops") {
      for (const auto& n : nodes) agg.value += n.value;
      agg.method = "sum of the nodes' operation rates";
    } else {
      agg = AggregateBandwidth(nodes);
    }
    std::string unit = metric == "storage_metadata_ops" ? "ops/s" : "MB/s";
    std::string outcome = "pass";
    double expected = 0;
    auto floor = data.plan.expect().metrics().find(
        absl::StrCat("storage_aggregate_mbps.", pattern));
    if (metric == "storage_bandwidth_mbps" && floor != data.plan.expect().metrics().end()) {
      expected = floor->second;
      if (agg.value < expected) outcome = "fail";
    }
    v1::RuleResult r = Rule(
        metric == "storage_metadata_ops" ? "storage.aggregate_metadata_rate"
                                 : "storage.aggregate_bandwidth",
        outcome, "", subject,
        absl::StrFormat("%s on %s: %.1f %s across %s%s", what, where, agg.value, unit,
                        Counted(nodes.size(), "node", "nodes"),
                        expected > 0 ? absl::StrFormat(" (expected at least %.1f)", expected)
                                     : ""));
    r.set_value(agg.value);
    r.set_unit(unit);
    if (expected > 0) r.set_expected(expected);
    r.add_evidence(absl::StrCat("method: ", agg.method));
    for (const auto& e : agg.evidence) r.add_evidence(e);
    r.add_evidence(absl::StrCat("storage class: ", cls));
    std::vector<std::string> per;
    for (const auto& n : nodes) per.push_back(absl::StrFormat("%s %.1f", n.node, n.value));
    r.add_evidence(absl::StrCat("per node (", unit, "): ", absl::StrJoin(per, ", ")));
    if (gpus > 0 && metric == "storage_bandwidth_mbps") {
      r.add_evidence(absl::StrFormat("per GPU of the fleet: %.1f MB/s (%d GPUs)", agg.value / gpus,
                                     gpus));
    }
    out->push_back(r);

    std::vector<Keyed> items;
    for (const auto& n : nodes) items.push_back({n.node, n.node, n.value});
    for (const Outlier& o : FindOutliers(items, Better::kHigher, 4, OutlierMargin(metric))) {
      v1::RuleResult s = Rule(
          "storage.straggler", "warn", o.item.node, subject,
          absl::StrFormat("%s is a straggler for %s on %s: %.1f %s, %.0f%% of the median",
                          o.item.node, what, where, o.item.value, unit,
                          o.relative_to_median * 100));
      s.set_value(o.item.value);
      s.set_unit(unit);
      s.add_evidence(absl::StrCat("per node (", unit, "): ", absl::StrJoin(per, ", ")));
      s.set_action("check this node's storage client, mount options and network path");
      out->push_back(s);
    }
  }
}

}  // namespace

void StorageJudge(const RunData& data, std::vector<v1::RuleResult>* out) {
  JudgeStorage(data, out);
}

}  // namespace cmax::reports
