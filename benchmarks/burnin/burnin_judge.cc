// Burn-in judge (Reliability): how steady each GPU (or the host, for the cpu
// backend) stayed under sustained load, and what changed when every node was
// loaded at once. Rules and thresholds with their reasons: reports/RULES.md,
// "Burn-in".
//
// Inputs: the measurements of `cmax-bench-cuda burnin` (burnin_tflops_mean,
// burnin_tflops_min_window, burnin_cv, burnin_mismatches,
// burnin_throttled_hot_s, burnin_seconds; labels gpu, uuid, pci_bus_id, model)
// and of `cmax-bench burnin --backend cpu` (burnin_gflops_*,
// burnin_mismatched_elements), grouped by task. A task's scope comes from
// TaskInfo.suite_index -> RunData.plan.suites(i): barrier is the fleet
// burn-in, anything else the node's own (solo) burn-in.
//
// The suite's own findings (burnin.gpu_mismatch, burnin.mismatch,
// burnin.unstable_throughput, burnin.throttled) are rule results already
// (findings_judge.cc): where one covers a problem, this judge cites it instead
// of raising the same problem twice.
#include <algorithm>
#include <initializer_list>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "generated/suite_judges.h"
#include "reports/judge_util.h"
#include "reports/run_data.h"
#include "reports/scorecard.h"

namespace cmax::reports {
namespace {

constexpr char kSuite[] = "burnin";
// Its rules' category, from the suite's declaration.
std::string Category() { return JudgeCategory("burnin"); }

// Thresholds (RULES.md, "Burn-in").
constexpr double kGpuCvWarn = 0.05;        // GPU: a steady GEMM varies by ~1%
constexpr double kCpuCvWarn = 0.15;        // host: the cpu suite's own threshold
constexpr double kMinWindowWarn = 0.90;    // slowest second / mean (gpu-fryer's 10%)
constexpr double kThrottledFraction = 0.01;  // of the run (gpud: 0.6 events/min)
constexpr double kFleetDropWarn = 0.05;    // fleet vs solo mean (SuperBench's 5%)

// One GPU (or the host) in one burn-in task.
struct Unit {
  std::string node, key;  // key: uuid, else "gpu:<index>", else "host"
  std::string gpu, uuid, pci_bus_id, model;
  std::map<std::string, double> values;  // normalized metric name -> value
  bool simulated = false;
  std::vector<std::string> findings;  // "check_id (severity)" of the suite's findings

  bool Has(const std::string& m) const { return values.count(m) > 0; }
  double Get(const std::string& m) const {
    auto it = values.find(m);
    return it == values.end() ? 0 : it->second;
  }
  bool cpu() const { return key == "host"; }
  std::string Subject() const {
    if (cpu()) return "host";
    std::string s = "gpu:" + gpu;
    if (!uuid.empty()) s += " (" + uuid + ")";
    return s;
  }
  std::string Who() const { return absl::StrCat(node, " ", Subject()); }
  std::string ThroughputUnit() const { return cpu() ? "GFLOP/s" : "TFLOP/s"; }
  // The suite's finding among `ids`, as "check_id (severity)", or "".
  std::string FindingOf(std::initializer_list<const char*> ids) const {
    for (const auto& f : findings) {
      for (const char* id : ids) {
        if (f.rfind(std::string(id) + " ", 0) == 0) return f;
      }
    }
    return "";
  }
};

struct BurninTask {
  std::string task_id;
  const v1::TaskInfo* info = nullptr;  // null when the run has no TaskInfo for it
  bool fleet = false;                  // scope: barrier
  std::string label;                   // "burnin-fleet (scope barrier)"
  std::map<std::string, Unit> units;   // node + "|" + key -> unit
};

std::string UnitKey(const google::protobuf::Map<std::string, std::string>& labels) {
  const std::string uuid = LabelValue(labels, "uuid");
  if (!uuid.empty()) return uuid;
  const std::string gpu = LabelValue(labels, "gpu");
  if (!gpu.empty()) return "gpu:" + gpu;
  return "host";
}

// Both backends' metric names onto one set.
std::string NormalizedMetric(const std::string& metric) {
  static const std::map<std::string, std::string> names = {
      {"burnin_tflops_mean", "mean"},         {"burnin_gflops_mean", "mean"},
      {"burnin_tflops_min_window", "min"},    {"burnin_gflops_min_window", "min"},
      {"burnin_cv", "cv"},                    {"burnin_gflops_cv", "cv"},
      {"burnin_mismatches", "mismatches"},    {"burnin_mismatched_elements", "mismatches"},
      {"burnin_throttled_hot_s", "hot_s"},    {"burnin_seconds", "seconds"},
  };
  auto it = names.find(metric);
  return it == names.end() ? "" : it->second;
}

bool IsBurninRecord(const v1::ExportedRecord& rec) {
  if (rec.suite() == kSuite) return true;
  const v1::Record& r = rec.record();
  if (r.has_measurement()) return r.measurement().suite() == kSuite;
  if (r.has_finding()) return r.finding().suite() == kSuite;
  return false;
}

bool IsFleetScope(const RunData& data, const v1::TaskInfo& t) {
  const v1::SuiteSpec* entry = PlanEntryOf(data, t);
  return entry != nullptr && entry->scope() == v1::SCOPE_BARRIER;
}

std::string TaskLabel(const v1::TaskInfo* t, bool fleet) {
  std::string name = t == nullptr || t->name().empty() ? std::string(kSuite) : t->name();
  return absl::StrCat(name, fleet ? " (scope barrier: every node at once)" : " (node's own)");
}

// Burn-in tasks by id with their units; only each task's latest attempt.
std::vector<BurninTask> CollectTasks(const RunData& data) {
  std::vector<BurninTask> tasks;
  std::map<std::string, size_t> index;
  for (const auto& t : data.tasks) {
    if (t.suite() != kSuite) continue;
    BurninTask bt;
    bt.task_id = t.task_id();
    bt.info = &t;
    bt.fleet = IsFleetScope(data, t);
    bt.label = TaskLabel(&t, bt.fleet);
    index[t.task_id()] = tasks.size();
    tasks.push_back(std::move(bt));
  }
  std::map<std::string, int> latest_attempt;
  // IsBurninRecord's records are among these: the rest is not parsed.
  RecordFilter burnin;
  burnin.suite_or_own = kSuite;
  ForEachRecord(data, burnin, [&](const v1::ExportedRecord& rec) {
    if (!IsBurninRecord(rec)) return;
    auto& a = latest_attempt[rec.task_id()];
    a = std::max(a, rec.attempt());
  });
  ForEachRecord(data, burnin, [&](const v1::ExportedRecord& rec) {
    if (!IsBurninRecord(rec) || rec.attempt() != latest_attempt[rec.task_id()]) return;
    auto it = index.find(rec.task_id());
    if (it == index.end()) {  // records without a task: judged as a node's own burn-in
      BurninTask bt;
      bt.task_id = rec.task_id();
      bt.label = TaskLabel(nullptr, false);
      it = index.emplace(rec.task_id(), tasks.size()).first;
      tasks.push_back(std::move(bt));
    }
    BurninTask& bt = tasks[it->second];
    const std::string node = RecordNode(rec);
    const v1::Record& r = rec.record();
    if (r.has_measurement()) {
      const v1::Measurement& m = r.measurement();
      const std::string name = NormalizedMetric(m.metric());
      if (name.empty()) return;
      const std::string key = UnitKey(m.labels());
      Unit& u = bt.units[node + "|" + key];
      u.node = node;
      u.key = key;
      if (key != "host") {
        u.gpu = LabelValue(m.labels(), "gpu");
        u.uuid = LabelValue(m.labels(), "uuid");
        u.pci_bus_id = LabelValue(m.labels(), "pci_bus_id");
        u.model = LabelValue(m.labels(), "model");
      }
      u.values[name] = m.value();
      u.simulated = u.simulated || m.simulated();
    } else if (r.has_finding()) {
      const v1::Finding& f = r.finding();
      const std::string key = UnitKey(f.labels());
      Unit& u = bt.units[node + "|" + key];
      u.node = node;
      u.key = key;
      u.findings.push_back(absl::StrCat(f.check_id(), " (", SeverityName(f.severity()), ")"));
      u.simulated = u.simulated || f.simulated();
    }
  });
  return tasks;
}

bool Completed(const BurninTask& t) {
  return t.info == nullptr || t.info->state() == v1::TASK_COMPLETED;
}

v1::RuleResult Result(const std::string& rule_id, const std::string& outcome,
                      const std::string& node, const std::string& subject) {
  return MakeRule(rule_id, Category(), outcome, node, subject);
}

std::string Pct(double ratio) { return absl::StrFormat("%.0f%%", 100 * ratio); }

// Marks a result built from simulated records: never presented as measured.
void MarkSimulated(v1::RuleResult* r) {
  r->set_outcome("not_measured");
  r->set_message(absl::StrCat(kSimulatedBanner, ": ", r->message()));
  r->clear_action();
}

// A task that did not complete: each of its nodes is not measured.
void JudgeUnfinished(const BurninTask& t, std::vector<v1::RuleResult>* out) {
  const v1::TaskInfo& info = *t.info;
  for (const auto& node : SplitNodes(info.node())) {
    v1::RuleResult r = Result("burnin.stability", "not_measured", node, "node");
    r.set_message(absl::StrCat(
        "burn-in ", t.label, " on ", node, " did not complete (", TaskStateName(info.state()),
        ", exit code ", info.exit_code(), ")", info.message().empty() ? "" : ": ",
        info.message(), "; its figures are not judged"));
    r.add_evidence(absl::StrCat("task ", info.task_id(), " attempt ", info.attempt()));
    if (!info.stderr_tail().empty()) {
      r.add_evidence(absl::StrCat("stderr tail:\n", info.stderr_tail()));
    }
    r.set_action("read the task's message and stderr tail; rerun the burn-in on this node");
    out->push_back(std::move(r));
  }
}

// Stability of one unit in one completed task.
void JudgeStability(const BurninTask& t, const Unit& u, std::vector<v1::RuleResult>* out) {
  v1::RuleResult r = Result("burnin.stability", "pass", u.node, u.Subject());
  r.add_evidence(absl::StrCat("task ", t.task_id, ": ", t.label));
  if (!u.pci_bus_id.empty() || !u.model.empty()) {
    r.add_evidence(absl::StrCat("PCI ", u.pci_bus_id, ", ", u.model));
  }
  if (!u.Has("mean")) {
    r.set_outcome("not_measured");
    r.set_message(absl::StrCat(u.Who(), ": burn-in ", t.label,
                               " produced no throughput figure (no verified iteration)"));
    for (const auto& f : u.findings) r.add_evidence(absl::StrCat("suite finding ", f));
    if (u.simulated) MarkSimulated(&r);
    out->push_back(std::move(r));
    return;
  }
  const std::string unit = u.ThroughputUnit();
  const double mean = u.Get("mean");
  const double cv_warn = u.cpu() ? kCpuCvWarn : kGpuCvWarn;
  std::vector<std::string> problems, notes;
  r.set_unit(unit);
  r.set_value(mean);
  notes.push_back(absl::StrFormat("mean %s", FormatValue(mean, unit)));
  if (u.Has("cv")) {
    const double cv = u.Get("cv");
    const std::string text = absl::StrFormat("CV %s (warn above %s)", FormatNumber(cv),
                                             FormatNumber(cv_warn));
    if (cv <= cv_warn) {
      notes.push_back(text);
    } else if (std::string f = u.FindingOf({"burnin.unstable_throughput"}); !f.empty()) {
      notes.push_back(absl::StrCat(text, ", already reported by the suite's finding ", f));
    } else {
      problems.push_back(text);
    }
  }
  if (u.Has("min") && mean > 0) {
    const double ratio = u.Get("min") / mean;
    const std::string text =
        absl::StrFormat("slowest one-second window %s = %s of the mean (warn below %s)",
                        FormatValue(u.Get("min"), unit), Pct(ratio), Pct(kMinWindowWarn));
    (ratio < kMinWindowWarn ? problems : notes).push_back(text);
  }
  const double mismatches = u.Get("mismatches");
  std::string mismatch_finding;
  if (mismatches > 0) {
    mismatch_finding = u.FindingOf({"burnin.gpu_mismatch", "burnin.mismatch"});
    if (mismatch_finding.empty()) {
      r.set_outcome("critical");
      problems.push_back(absl::StrFormat(
          "%s mismatched elements (the same GEMM gave a different result): silent data "
          "corruption suspect",
          FormatNumber(mismatches)));
    } else {
      notes.push_back(absl::StrFormat("%s mismatched elements, judged by the suite's finding %s",
                                      FormatNumber(mismatches), mismatch_finding));
    }
  } else if (u.Has("mismatches")) {
    notes.push_back("no mismatched elements");
  }
  if (!problems.empty() && r.outcome() == "pass") r.set_outcome("warn");
  if (problems.empty()) {
    r.set_message(absl::StrCat(u.Who(), " steady through burn-in ", t.label, ": ",
                               absl::StrJoin(notes, "; ")));
  } else {
    r.set_message(absl::StrCat(u.Who(), " unsteady in burn-in ", t.label, ": ",
                               absl::StrJoin(problems, "; ")));
    for (const auto& n : notes) r.add_evidence(n);
  }
  if (!mismatch_finding.empty()) {
    r.add_evidence(absl::StrCat("mismatches: see the rule result ", mismatch_finding,
                                " on this node"));
  }
  if (r.outcome() == "critical") {
    r.set_action("drain the node; confirm with a second burn-in, then replace the GPU (RMA)");
  } else if (r.outcome() == "warn") {
    r.set_action(
        "check clocks and throttle reasons (nvidia-smi -q -d PERFORMANCE), other processes on "
        "the GPU or host, and cooling; rerun the burn-in and drain the node if it stays unsteady");
  }
  if (u.simulated) MarkSimulated(&r);
  out->push_back(std::move(r));
}

// The fraction of the run spent throttled for heat or power delivery, when
// both figures were measured.
bool HotFraction(const Unit& u, double* fraction) {
  if (!u.Has("hot_s") || !u.Has("seconds") || u.Get("seconds") <= 0) return false;
  *fraction = u.Get("hot_s") / u.Get("seconds");
  return true;
}

std::string Figures(const Unit& u, const std::string& which) {
  double hot = 0;
  std::string s = absl::StrCat(which, ": mean ", FormatValue(u.Get("mean"), u.ThroughputUnit()));
  if (HotFraction(u, &hot)) {
    absl::StrAppend(&s, ", throttled for heat or power delivery ", FormatNumber(u.Get("hot_s")),
                    " s of ", FormatNumber(u.Get("seconds")), " s (", Pct(hot), ")");
  }
  return s;
}

// Fleet (barrier) burn-in against the node's own one for one unit. Returns
// true when the unit was compared; sets *fleet_only when something appeared
// only under fleet load.
bool CompareFleet(const Unit& fleet, const Unit* solo, std::vector<v1::RuleResult>* out,
                  bool* fleet_only) {
  *fleet_only = false;
  double fleet_hot = 0;
  const bool fleet_has_hot = HotFraction(fleet, &fleet_hot);
  const bool fleet_throttled = fleet_has_hot && fleet_hot >= kThrottledFraction;
  v1::RuleResult r = Result("burnin.fleet_load", "pass", fleet.node, fleet.Subject());
  r.add_evidence(Figures(fleet, "fleet burn-in (every node at once)"));
  if (solo == nullptr || !solo->Has("mean")) {
    if (fleet_throttled) {
      r.set_outcome("warn");
      r.set_message(absl::StrCat(
          fleet.Who(), " throttled ", Pct(fleet_hot),
          " of the fleet burn-in for heat or power delivery; no node-scoped burn-in of this "
          "GPU to tell whether it is fleet-specific"));
      r.set_action("check this GPU's cooling and power delivery; add a node-scoped burn-in "
                   "before the fleet one to separate the node from the facility");
    } else {
      r.set_message(absl::StrCat(fleet.Who(), " under fleet load: ",
                                 fleet_has_hot ? "not throttled" : "no throttle figures",
                                 "; no node-scoped burn-in to compare with"));
    }
    if (fleet.simulated) MarkSimulated(&r);
    out->push_back(std::move(r));
    return false;
  }
  r.add_evidence(Figures(*solo, "node's own burn-in"));
  double solo_hot = 0;
  const bool solo_has_hot = HotFraction(*solo, &solo_hot);
  const bool solo_throttled = solo_has_hot && solo_hot >= kThrottledFraction;
  const double drop = solo->Get("mean") > 0 ? 1 - fleet.Get("mean") / solo->Get("mean") : 0;
  r.set_value(fleet.Get("mean"));
  r.set_expected(solo->Get("mean"));
  r.set_unit(fleet.ThroughputUnit());
  std::vector<std::string> changes;
  if (fleet_throttled && solo_has_hot && !solo_throttled) {
    changes.push_back(absl::StrCat("throttled for heat or power delivery ", Pct(fleet_hot),
                                   " of the time (", Pct(solo_hot), " alone)"));
  }
  if (drop > kFleetDropWarn) {
    changes.push_back(absl::StrCat(
        "mean ", FormatValue(fleet.Get("mean"), fleet.ThroughputUnit()), " is ", Pct(drop),
        " below its own burn-in's ", FormatValue(solo->Get("mean"), fleet.ThroughputUnit()),
        " (warn above ", Pct(kFleetDropWarn), ")"));
  }
  if (!changes.empty()) {
    *fleet_only = true;
    r.set_outcome("warn");
    r.set_message(absl::StrCat(
        fleet.Who(), ": ", absl::StrJoin(changes, "; "),
        " — this appeared only with the whole fleet loaded (facility power or cooling)",
        solo_throttled ? "; it also throttled alone (the suite's burnin.throttled covers that)"
                       : ""));
    r.set_action(
        "check the facility under full load: rack and PDU power limits or BMC power capping, "
        "inlet temperature and airflow (or coolant) for this node's rack; compare with the "
        "other nodes of the same rack");
  } else if (fleet_throttled && solo_throttled) {
    r.set_message(absl::StrCat(
        fleet.Who(), " throttled alone (", Pct(solo_hot), ") and under fleet load (",
        Pct(fleet_hot),
        "): not fleet-specific; the suite's burnin.throttled finding covers it"));
  } else {
    r.set_message(absl::StrCat(fleet.Who(), ": no change under fleet load (mean ",
                               FormatValue(fleet.Get("mean"), fleet.ThroughputUnit()),
                               ", alone ", FormatValue(solo->Get("mean"), fleet.ThroughputUnit()),
                               ")"));
  }
  if (fleet.simulated || solo->simulated) {
    MarkSimulated(&r);
    *fleet_only = false;
  }
  out->push_back(std::move(r));
  return !(fleet.simulated || solo->simulated);
}

void JudgeBurnin(const RunData& data, std::vector<v1::RuleResult>* out) {
  const std::vector<BurninTask> tasks = CollectTasks(data);
  if (tasks.empty()) return;  // no burn-in in this run

  bool fleet_in_plan = false;
  for (const auto& s : data.plan.suites()) {
    if (s.suite() == kSuite && s.scope() == v1::SCOPE_BARRIER) fleet_in_plan = true;
  }
  std::map<std::string, const Unit*> solo;  // node|key -> the latest solo unit
  std::vector<const BurninTask*> fleet_tasks;
  for (const auto& t : tasks) {
    fleet_in_plan = fleet_in_plan || t.fleet;
    if (!Completed(t)) {
      JudgeUnfinished(t, out);
      continue;
    }
    std::set<std::string> nodes_with_units;
    for (const auto& [key, u] : t.units) {
      nodes_with_units.insert(u.node);
      JudgeStability(t, u, out);
      if (!t.fleet) solo[key] = &u;
    }
    if (t.info != nullptr) {
      for (const auto& node : SplitNodes(t.info->node())) {
        if (nodes_with_units.count(node)) continue;
        v1::RuleResult r = Result("burnin.stability", "not_measured", node, "node");
        r.set_message(absl::StrCat("burn-in ", t.label, " on ", node,
                                   " completed without a figure"));
        r.add_evidence(absl::StrCat("task ", t.task_id, ", ", t.info->records(), " records"));
        out->push_back(std::move(r));
      }
    }
    if (t.fleet) fleet_tasks.push_back(&t);
  }

  if (!fleet_in_plan) {
    v1::RuleResult r = Result("burnin.fleet_load", "not_measured", "", "fleet");
    r.set_message("fleet burn-in (scope: barrier) not in the plan: throttling that appears only "
                  "when every node is loaded at once (facility power or cooling) was not tested");
    r.set_action("add a burn-in with scope: barrier after the node-scoped one "
                 "(benchmarks/plans/full.yaml does)");
    out->push_back(std::move(r));
    return;
  }
  std::set<std::string> compared, fleet_only;
  for (const BurninTask* t : fleet_tasks) {
    for (const auto& [key, u] : t->units) {
      if (!u.Has("mean")) continue;  // its stability result says why
      auto it = solo.find(key);
      bool only = false;
      if (CompareFleet(u, it == solo.end() ? nullptr : it->second, out, &only)) {
        compared.insert(u.node);
      }
      if (only) fleet_only.insert(u.node);
    }
  }
  v1::RuleResult r = Result("burnin.fleet_load", "pass", "", "fleet");
  if (compared.empty()) {
    r.set_outcome("not_measured");
    r.set_message(fleet_tasks.empty()
                      ? "fleet burn-in (scope: barrier) did not complete on any node"
                      : "no node had both its own burn-in and the fleet burn-in measured: "
                        "nothing to compare");
  } else {
    r.set_outcome(fleet_only.empty() ? "pass" : "warn");
    r.set_value(static_cast<double>(fleet_only.size()));
    r.set_expected(0);
    r.set_unit("nodes");
    r.set_message(absl::StrFormat(
        "%d of %d nodes compared throttled or slowed only under fleet load%s", fleet_only.size(),
        compared.size(),
        fleet_only.empty() ? ""
                           : absl::StrCat(": ", absl::StrJoin(fleet_only, ", "),
                                          " (facility power or cooling)")));
    if (!fleet_only.empty()) {
      r.set_action("check facility power and cooling under full load for the nodes named");
    }
  }
  out->push_back(std::move(r));
}

}  // namespace

// Declared in judges.cc.
void BurninJudge(const RunData& data, std::vector<v1::RuleResult>* out) { JudgeBurnin(data, out); }

}  // namespace cmax::reports
