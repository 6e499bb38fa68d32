// Expectations judge: the plan's metric floors (expect.metrics) against the
// Measurements (RULES.md, rule 3). A key is "metric" or
// "metric.qualifier[.qualifier...]"; each qualifier matches a label value
// (gemm_tflops.bf16: metric gemm_tflops with a label whose value is "bf16")
// or a GEMM shape "MxNxK". Like is compared with like:
//  - only verified results count (a measurement labelled verified=false is
//    a failure of its own, and its figure means nothing);
//  - a per-job or per-GPU figure and an all-jobs / all-GPUs one (label job
//    or gpu = "all") are different things: a floor applies to the per-job /
//    per-GPU figures unless a qualifier is "all";
//  - a GEMM floor without a shape applies to each GPU's best verified shape
//    of the matching dtype (the peak shape), not to every small shape.
#include <algorithm>
#include <map>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/suite_declaration.h"
#include "reports/judge_util.h"
#include "reports/judges.h"
#include "reports/metric_table.h"
#include "reports/run_data.h"

namespace cmax::reports {
namespace {

struct Key {
  std::string metric;
  std::vector<std::string> qualifiers;  // empty: any labels
};

// Labels whose value "all" marks a total over jobs or GPUs.
constexpr const char* kKindLabels[] = {"job", "gpu"};

std::string Shape(const v1::Measurement& m) {
  const std::string mm = LabelValue(m, "m"), n = LabelValue(m, "n"), k = LabelValue(m, "k");
  if (mm.empty() || n.empty() || k.empty()) return "";
  return absl::StrCat(mm, "x", n, "x", k);
}

bool Matches(const v1::Measurement& m, const std::string& q) {
  if (q == Shape(m)) return true;
  for (const auto& [k, v] : m.labels()) {
    if (v == q) return true;
  }
  return false;
}

bool IsTotal(const v1::Measurement& m) {
  for (const char* k : kKindLabels) {
    if (LabelValue(m, k) == "all") return true;
  }
  return false;
}

// The exact metric name wins; otherwise the metric is up to the first '.'
// and every further '.'-separated piece is a qualifier.
Key ParseKey(const std::string& key, const RunData& data) {
  if (AnyRecord(data, {v1::Record::kMeasurement, {}, key},
                [&](const v1::ExportedRecord& rec) {
                  return rec.record().has_measurement() &&
                         rec.record().measurement().metric() == key;
                })) {
    return {key, {}};
  }
  std::vector<std::string> parts = absl::StrSplit(key, '.');
  Key k{parts[0], {}};
  for (size_t i = 1; i < parts.size(); ++i) {
    if (!parts[i].empty()) k.qualifiers.push_back(parts[i]);
  }
  return k;
}

// `rec` is a copy (a record seen through ForEachRecord lives only during
// its call); `m` points into it.
struct Candidate {
  std::shared_ptr<const v1::ExportedRecord> rec;
  const v1::Measurement* m;
};

// The measurements a key applies to (see the file comment).
std::vector<Candidate> Applicable(const Key& k, const RunData& data) {
  const bool wants_total =
      std::find(k.qualifiers.begin(), k.qualifiers.end(), "all") != k.qualifiers.end();
  bool names_shape = false;
  std::vector<Candidate> all;
  ForEachRecord(data, {v1::Record::kMeasurement, {}, k.metric},
                [&](const v1::ExportedRecord& rec) {
                  if (!rec.record().has_measurement()) return;
                  const v1::Measurement& m = rec.record().measurement();
                  if (m.metric() != k.metric) return;
                  const std::string verified = LabelValue(m, "verified");
                  if (!verified.empty() && verified != "true") return;
                  if (IsTotal(m) != wants_total) return;
                  bool ok = true;
                  for (const auto& q : k.qualifiers) {
                    if (q == "all" && wants_total) continue;
                    if (!Matches(m, q)) ok = false;
                    if (ok && q == Shape(m)) names_shape = true;
                  }
                  if (ok) {
                    auto copy = std::make_shared<const v1::ExportedRecord>(rec);
                    all.push_back({copy, &copy->record().measurement()});
                  }
                });
  if (names_shape) return all;
  // GEMM without a shape: each GPU's best verified shape per dtype.
  std::map<std::string, size_t> best;  // node|gpu|uuid|dtype -> index in out
  std::vector<Candidate> out;
  for (const Candidate& c : all) {
    if (Shape(*c.m).empty()) {
      out.push_back(c);
      continue;
    }
    const std::string id = absl::StrCat(RecordNode(*c.rec), "|", LabelValue(*c.m, "gpu"), "|",
                                        LabelValue(*c.m, "uuid"), "|", LabelValue(*c.m, "dtype"));
    auto [it, inserted] = best.try_emplace(id, out.size());
    if (inserted) {
      out.push_back(c);
    } else if (c.m->value() > out[it->second].m->value()) {
      out[it->second] = c;
    }
  }
  return out;
}

// The suite's catalog category; for a suite the catalog does not know, the
// fleet metric table's category, else Reliability.
std::string CategoryFor(const std::string& suite, const std::string& metric) {
  if (FindSuite(suite) != nullptr) return SuiteCategory(suite);
  if (const FleetMetric* fm = FindFleetMetric(metric)) return fm->category;
  return "Reliability";
}

std::string LabelsText(const v1::Measurement& m) {
  std::map<std::string, std::string> sorted(m.labels().begin(), m.labels().end());
  return absl::StrJoin(sorted, ", ", absl::PairFormatter("="));
}

}  // namespace

void ExpectationsJudge(const RunData& data, std::vector<v1::RuleResult>* out) {
  std::map<std::string, double> floors(data.plan.expect().metrics().begin(),
                                       data.plan.expect().metrics().end());
  for (const auto& [key, minimum] : floors) {
    // Collective bandwidth floors apply at a run's largest size, per group
    // of nodes: collective_judge.cc judges them.
    if (key.rfind("busbw_gbps.", 0) == 0 || key == "busbw_gbps") continue;
    const Key k = ParseKey(key, data);
    const std::string rule_id = absl::StrCat("expect.metrics.", key);
    size_t matched = 0, passed = 0;
    double lowest = 0;
    std::string lowest_subject, unit, category;
    for (const Candidate& c : Applicable(k, data)) {
      const v1::ExportedRecord& rec = *c.rec;
      const v1::Measurement& m = *c.m;
      const std::string suite = m.suite().empty() ? rec.suite() : m.suite();
      const std::string node = RecordNode(rec);
      const std::string subject = DescribeSubject(node, m);
      category = CategoryFor(suite, m.metric());
      unit = m.unit();
      if (matched == 0 || m.value() < lowest) {
        lowest = m.value();
        lowest_subject = subject;
      }
      ++matched;
      if (m.value() >= minimum) {
        ++passed;
        continue;
      }
      v1::RuleResult r;
      r.set_rule_id(rule_id);
      r.set_category(category);
      r.set_outcome("fail");
      r.set_node(node);
      r.set_subject(subject);
      r.set_message(absl::StrCat(subject, ": ", m.metric(), " ", FormatValue(m.value(), m.unit()),
                                 " is below the plan's minimum ", FormatValue(minimum, m.unit()),
                                 " (", key, ")"));
      r.add_evidence(absl::StrCat("measured ", FormatValue(m.value(), m.unit()), " by ", suite));
      r.add_evidence(absl::StrCat("plan ", data.plan.name(), " expects ", key, " >= ",
                                  FormatNumber(minimum)));
      if (!m.labels().empty()) r.add_evidence(absl::StrCat("labels: ", LabelsText(m)));
      r.set_value(m.value());
      r.set_expected(minimum);
      r.set_unit(m.unit());
      r.set_action("rerun the suite on this node; if it stays low, check clocks, power and "
                   "thermal limits and the driver");
      out->push_back(std::move(r));
    }
    v1::RuleResult r;
    r.set_rule_id(rule_id);
    r.set_expected(minimum);
    r.set_subject(key);
    if (matched == 0) {
      const FleetMetric* fm = FindFleetMetric(k.metric);
      r.set_category(fm != nullptr ? fm->category : "Reliability");
      r.set_outcome("not_measured");
      r.set_message(absl::StrCat("the plan expects ", key, " >= ", FormatNumber(minimum),
                                 " but no suite measured it (verified figures only; per job or GPU unless the key "
                                 "says .all)"));
      out->push_back(std::move(r));
      continue;
    }
    if (passed == 0) continue;  // every value failed and was named above
    r.set_category(category);
    r.set_outcome("pass");
    r.set_unit(unit);
    r.set_value(lowest);
    r.set_message(absl::StrCat(key, " >= ", FormatValue(minimum, unit), ": ", passed, " of ",
                               matched, " measurements at or above (lowest ",
                               FormatValue(lowest, unit), " on ", lowest_subject, ")"));
    out->push_back(std::move(r));
  }
}

}  // namespace cmax::reports
