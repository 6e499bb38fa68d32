#include "reports/history.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/median.h"
#include "reports/judge_util.h"

namespace cmax::reports {
namespace {

constexpr double kNsPerHour = 3600.0 * 1e9;
constexpr double kNsPerDay = 24 * kNsPerHour;

bool Measured(const v1::NodeRunSummary& s) { return s.verdict() != kVerdictNotMeasured; }

bool Older(const v1::NodeRunSummary& a, const v1::NodeRunSummary& b) {
  if (a.finished_unix_ns() != b.finished_unix_ns()) {
    return a.finished_unix_ns() < b.finished_unix_ns();
  }
  return a.run_id() < b.run_id();
}

std::vector<const v1::NodeRunSummary*> RunsOf(
    const std::string& node, const std::vector<v1::NodeRunSummary>& all) {
  std::vector<const v1::NodeRunSummary*> out;
  for (const auto& s : all) {
    if (s.node() == node) out.push_back(&s);
  }
  std::sort(out.begin(), out.end(),
            [](const auto* a, const auto* b) { return Older(*a, *b); });
  return out;
}

std::string Label(const v1::CompareMetric& m, const char* key) {
  auto it = m.labels().find(key);
  return it == m.labels().end() ? std::string() : it->second;
}

struct FigureAcc {
  std::vector<double> values;
  std::string unit;
  bool simulated = false;
};

// The node's key figures from the card's metric summary (history.h).
std::vector<v1::HistoryFigure> FiguresOf(const std::string& node,
                                         const v1::Scorecard& card) {
  std::map<std::string, FigureAcc> acc;
  std::vector<double> gemm_bf16, gemm_any;
  FigureAcc gemm;
  int64_t largest = -1;
  FigureAcc busbw;
  auto add = [](FigureAcc& a, const v1::CompareMetric& m) {
    a.values.push_back(m.value());
    a.unit = m.unit();
    a.simulated = a.simulated || m.simulated();
  };
  for (const auto& m : card.metric_summary()) {
    if (m.node() != node) continue;
    if (m.metric() == "gemm_tflops") {
      (Label(m, "dtype") == "bf16" ? gemm_bf16 : gemm_any).push_back(m.value());
      gemm.unit = m.unit();
      gemm.simulated = gemm.simulated || m.simulated();
    } else if (m.metric() == "busbw_gbps" && Label(m, "op") == "all_reduce") {
      int64_t bytes = 0;
      if (!absl::SimpleAtoi(Label(m, "size_bytes"), &bytes)) continue;
      if (bytes > largest) {
        largest = bytes;
        busbw.values.clear();
      }
      if (bytes == largest) add(busbw, m);
    } else if (m.metric() == "storage_bandwidth_mbps" && Label(m, "op") == "read" &&
               Label(m, "job") == "all") {
      add(acc["storage_read_mbps"], m);
    } else if (m.metric() == "gpu_temperature_c") {
      add(acc["burnin_gpu_temperature_c"], m);
    } else if (m.metric() == "gpu_count") {
      add(acc["gpu_count"], m);
    }
  }
  gemm.values = gemm_bf16.empty() ? gemm_any : gemm_bf16;
  if (!gemm.values.empty()) acc["gemm_tflops_per_gpu"] = gemm;
  if (!busbw.values.empty()) acc["allreduce_busbw_gbps"] = busbw;
  std::vector<v1::HistoryFigure> out;
  for (auto& [name, a] : acc) {
    v1::HistoryFigure f;
    f.set_name(name);
    f.set_value(Median(a.values));
    f.set_unit(a.unit);
    f.set_simulated(a.simulated);
    out.push_back(std::move(f));
  }
  return out;
}

std::string Hours(double h) { return absl::StrFormat("%.2f h", h); }

// Why an open incident is open: " (waiting for a run that measures again
// and passes: orchestration.scheduler)".
std::string Unresolved(const v1::Incident& i) {
  if (i.unresolved_size() == 0) return "";
  std::vector<std::string> what;
  for (const auto& id : i.unresolved()) {
    std::string where;
    for (const auto& r : i.reasons()) {
      if (r.id() != id) continue;
      where = !r.suite().empty() ? absl::StrCat(" (suite ", r.suite(), ")")
              : !r.category().empty() ? absl::StrCat(" (", r.category(), ")")
                                      : "";
      break;
    }
    what.push_back(absl::StrCat(id, where));
  }
  return absl::StrCat(" (waiting for a run that measures again and passes: ",
                      absl::StrJoin(what, ", "), ")");
}

std::string TimeText(int64_t unix_ns) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%SZ", absl::FromUnixNanos(unix_ns),
                          absl::UTCTimeZone());
}

double Quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return SortedQuantile(v, q);
}

// What a card evaluated on each node, and which suite gave each finding
// there: what an incident's reasons are matched against (history.h).
struct MeasuredOnNodes {
  std::map<std::string, std::set<std::string>> suites;      // node -> suites
  std::map<std::pair<std::string, std::string>, std::string> finding_suite;  // (node, check)
};

MeasuredOnNodes MeasuredOf(const v1::Scorecard& card) {
  MeasuredOnNodes out;
  for (const auto& f : card.findings()) {
    auto node = f.labels().find("node");
    if (node == f.labels().end() || f.suite().empty()) continue;
    out.finding_suite.try_emplace({node->second, f.check_id()}, f.suite());
    if (!f.not_measured()) out.suites[node->second].insert(f.suite());
  }
  // metric_summary names the plan entry; the categories' coverage names
  // each entry's suite.
  std::map<std::string, std::string> entry_suite;
  for (const auto& c : card.categories()) {
    for (const auto& e : c.entries()) entry_suite.emplace(e.entry(), e.suite());
  }
  for (const auto& m : card.metric_summary()) {
    auto it = entry_suite.find(m.entry());
    if (!m.node().empty() && it != entry_suite.end()) out.suites[m.node()].insert(it->second);
  }
  return out;
}

}  // namespace

std::vector<v1::NodeRunSummary> SummarizeRun(const v1::Scorecard& card,
                                             int64_t finished_unix_ns,
                                             const std::string& report_dir) {
  // Rules with a node, by node (the categories keep every rule that fired).
  std::map<std::string, std::vector<const v1::RuleResult*>> rules;
  for (const auto& c : card.categories()) {
    for (const auto& r : c.rules()) {
      if (!r.node().empty()) rules[r.node()].push_back(&r);
    }
  }
  const MeasuredOnNodes measured = MeasuredOf(card);
  std::vector<v1::NodeRunSummary> out;
  for (const auto& n : card.nodes()) {
    v1::NodeRunSummary s;
    s.set_run_id(card.run_id());
    s.set_node(n.node());
    s.set_finished_unix_ns(finished_unix_ns);
    s.set_plan(card.plan());
    s.set_report_dir(report_dir);
    s.set_simulated(card.simulated());
    s.set_version(kSummaryVersion);
    if (auto it = measured.suites.find(n.node()); it != measured.suites.end()) {
      for (const auto& suite : it->second) s.add_measured_suites(suite);
    }
    int gpus = 0;
    if (auto it = n.inventory().find("gpu_count"); it != n.inventory().end()) {
      if (!absl::SimpleAtoi(it->second, &gpus)) gpus = 0;
    }
    s.set_gpus(gpus);
    bool no_results = false, not_measured = false;
    for (const auto& reason : n.reasons()) {
      no_results = no_results || reason == "no results from this node";
    }
    // The card's grid (charts.cc) says per category whether anything was
    // evaluated on the node: none at all is "not measured" (a run of
    // ungraded suites, such as selftest, says nothing about the node).
    for (const auto& g : card.node_grid()) {
      if (g.node() != n.node()) continue;
      bool any = false;
      for (int i = 0; i < g.outcomes_size() && i < card.categories_size(); ++i) {
        if (g.outcomes(i) == "not_measured") continue;
        any = true;
        s.add_measured_categories(card.categories(i).name());
      }
      no_results = no_results || !any;
      for (const auto& o : g.outcomes()) not_measured = not_measured || o == "partial";
    }
    std::set<std::string> ids;
    for (const v1::RuleResult* r : rules[n.node()]) {
      if (r->outcome() == "not_measured") not_measured = true;
      if (r->outcome() != "warn" && r->outcome() != "fail" && r->outcome() != "critical")
        continue;
      if (!ids.insert(r->rule_id()).second) continue;
      v1::HistoryReason* h = s.add_reasons();
      h->set_id(r->rule_id());
      h->set_outcome(r->outcome());
      h->set_category(r->category());
      h->set_text(Headline(*r));  // one line: the card has the message whole
      if (auto it = measured.finding_suite.find({n.node(), r->rule_id()});
          it != measured.finding_suite.end()) {
        h->set_suite(it->second);
      }
    }
    if (n.verdict() == "fail") {
      s.set_verdict(kVerdictReject);
      bool any_fail = false;
      for (const auto& h : s.reasons()) any_fail = any_fail || h.outcome() != "warn";
      if (!any_fail) {  // failed by a broken task, not by a rule on the node
        v1::HistoryReason* h = s.add_reasons();
        h->set_id("verdict");
        h->set_outcome("fail");
        h->set_text(n.reasons_size() > 0 ? n.reasons(0) : "verdict fail");
      }
    } else if (no_results) {
      s.set_verdict(kVerdictNotMeasured);
    } else {
      s.set_verdict(kVerdictAccept);
      // A warn verdict with nothing warn-level of its own is a warn for
      // what was not measured (scorecard.cc: never a pass).
      bool warn_rule = false;
      for (const auto& h : s.reasons()) warn_rule = warn_rule || h.outcome() == "warn";
      s.set_partial(not_measured || (n.verdict() == "warn" && !warn_rule));
    }
    for (auto& f : FiguresOf(n.node(), card)) *s.add_figures() = std::move(f);
    out.push_back(std::move(s));
  }
  return out;
}

namespace {

bool Has(const google::protobuf::RepeatedPtrField<std::string>& list, const std::string& v) {
  return std::find(list.begin(), list.end(), v) != list.end();
}

// Whether run `s` measured reason `r` on its node again (history.h).
bool Remeasures(const v1::NodeRunSummary& s, const v1::HistoryReason& r) {
  if (s.version() < 1 || !Measured(s)) return false;  // says nothing of what it measured
  if (!r.suite().empty()) return Has(s.measured_suites(), r.suite());
  if (!r.category().empty()) return Has(s.measured_categories(), r.category());
  return true;
}

// A reason that counts against the node (a warn accepts it).
bool Failing(const v1::HistoryReason& r) { return r.outcome() != "warn"; }

bool FailsIn(const v1::NodeRunSummary& s, const std::string& id) {
  for (const auto& r : s.reasons()) {
    if (r.id() == id && Failing(r)) return true;
  }
  return false;
}

const v1::HistoryReason* ReasonOf(const v1::Incident& inc, const std::string& id) {
  for (const auto& r : inc.reasons()) {
    if (r.id() == id) return &r;
  }
  return nullptr;
}

void Open(const v1::NodeRunSummary& s, const HistoryOptions& options, IncidentState* state) {
  v1::Incident& inc = state->open;
  inc.Clear();
  inc.set_node(s.node());
  inc.set_opened_run(s.run_id());
  inc.set_opened_unix_ns(s.finished_unix_ns());
  *inc.mutable_figures() = s.figures();
  inc.set_reopened_within_7d(state->last_close_ns >= 0 &&
                             s.finished_unix_ns() - state->last_close_ns <=
                                 options.reopen_window_ns);
  state->has_open = true;
}

// The node's incidents from its own summaries, oldest first (`runs` sorted
// by Older).
std::vector<v1::Incident> IncidentsOf(const std::vector<const v1::NodeRunSummary*>& runs,
                                      const HistoryOptions& options) {
  std::vector<v1::Incident> out;
  IncidentState state;
  v1::Incident closed;
  for (const v1::NodeRunSummary* s : runs) {
    if (AdvanceIncident(*s, options, &state, &closed)) out.push_back(std::move(closed));
  }
  if (state.has_open) out.push_back(state.open);
  return out;
}

// Every node's summaries, each node's sorted oldest first: one pass over
// `all`, so the fleet's figures cost O(summaries), not O(nodes x summaries).
std::map<std::string, std::vector<const v1::NodeRunSummary*>> ByNode(
    const std::vector<v1::NodeRunSummary>& all) {
  std::map<std::string, std::vector<const v1::NodeRunSummary*>> out;
  for (const auto& s : all) out[s.node()].push_back(&s);
  for (auto& [node, runs] : out) {
    std::sort(runs.begin(), runs.end(),
              [](const auto* a, const auto* b) { return Older(*a, *b); });
  }
  return out;
}

// The bands of every run in `all`.
std::map<std::string, RunBands> BandsOfAll(const std::vector<v1::NodeRunSummary>& all) {
  std::map<std::string, std::map<std::string, std::vector<double>>> values;
  for (const auto& s : all) {
    for (const auto& f : s.figures()) values[s.run_id()][f.name()].push_back(f.value());
  }
  std::map<std::string, RunBands> out;
  for (auto& [run, figures] : values) {
    for (auto& [name, v] : figures) {
      out[run][name] = FigureBand{Quantile(v, 0.10), Quantile(v, 0.90)};
    }
  }
  return out;
}

}  // namespace

bool AdvanceIncident(const v1::NodeRunSummary& s, const HistoryOptions& options,
                     IncidentState* state, v1::Incident* closed) {
  if (!Measured(s)) return false;  // neither opens nor closes
  v1::Incident& inc = state->open;
  if (state->has_open) {
    // What this run measured again and did not fail is resolved, whatever
    // its verdict on the node (a run may pass one check and fail another).
    auto* unresolved = inc.mutable_unresolved();
    unresolved->erase(std::remove_if(unresolved->begin(), unresolved->end(),
                                     [&](const std::string& id) {
                                       const v1::HistoryReason* r = ReasonOf(inc, id);
                                       return r != nullptr && Remeasures(s, *r) &&
                                              !FailsIn(s, id);
                                     }),
                      unresolved->end());
  }
  if (s.verdict() == kVerdictReject) {
    if (!state->has_open) Open(s, options, state);
    inc.set_rejecting_runs(inc.rejecting_runs() + 1);
    for (const auto& r : s.reasons()) {
      if (ReasonOf(inc, r.id()) == nullptr) *inc.add_reasons() = r;
      if (Failing(r) && !Has(inc.unresolved(), r.id())) inc.add_unresolved(r.id());
    }
    if (!s.report_dir().empty()) inc.add_artifacts(s.report_dir());
    return false;
  }
  if (!state->has_open || inc.unresolved_size() > 0) return false;
  inc.set_closed_run(s.run_id());
  inc.set_closed_unix_ns(s.finished_unix_ns());
  inc.set_repair_hours((s.finished_unix_ns() - inc.opened_unix_ns()) / kNsPerHour);
  state->last_close_ns = s.finished_unix_ns();
  state->has_open = false;
  if (closed != nullptr) *closed = std::move(inc);
  inc.Clear();
  return true;
}

std::vector<v1::Incident> ComputeIncidents(const std::string& node,
                                           const std::vector<v1::NodeRunSummary>& all,
                                           const HistoryOptions& options) {
  return IncidentsOf(RunsOf(node, all), options);
}

RunBands ComputeRunBands(const std::vector<v1::NodeRunSummary>& run_summaries) {
  std::map<std::string, std::vector<double>> values;
  for (const auto& s : run_summaries) {
    for (const auto& f : s.figures()) values[f.name()].push_back(f.value());
  }
  RunBands out;
  for (auto& [name, v] : values) out[name] = FigureBand{Quantile(v, 0.10), Quantile(v, 0.90)};
  return out;
}

bool LeastSquaresSlopePerDay(const std::vector<int64_t>& times_ns,
                             const std::vector<double>& values, double* slope) {
  const size_t n = std::min(times_ns.size(), values.size());
  if (n < 2) return false;
  // x in days from the first point (keeps the sums small).
  double sx = 0, sy = 0;
  std::vector<double> x(n);
  for (size_t i = 0; i < n; ++i) {
    x[i] = (times_ns[i] - times_ns[0]) / kNsPerDay;
    sx += x[i];
    sy += values[i];
  }
  const double mx = sx / n, my = sy / n;
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < n; ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (values[i] - my);
  }
  if (sxx <= 0) return false;
  *slope = sxy / sxx;
  return true;
}

std::string WeekStart(int64_t unix_ns) {
  // 1970-01-01 was a Thursday: days since a Monday = (days + 3) mod 7.
  const int64_t ns_per_day = 86400ll * 1000000000;
  int64_t days =
      unix_ns >= 0 ? unix_ns / ns_per_day : -((-unix_ns + ns_per_day - 1) / ns_per_day);
  int64_t monday = days - (((days + 3) % 7) + 7) % 7;
  return absl::FormatTime("%Y-%m-%d", absl::FromUnixSeconds(monday * 86400),
                          absl::UTCTimeZone());
}

v1::NodeHistory ComputeNodeHistory(const std::string& node,
                                   const std::vector<v1::NodeRunSummary>& all,
                                   const HistoryOptions& options) {
  std::vector<v1::NodeRunSummary> own;
  for (const auto& s : all) {
    if (s.node() == node) own.push_back(s);
  }
  return ComputeNodeHistoryFrom(node, own, BandsOfAll(all), options);
}

v1::NodeHistory ComputeNodeHistoryFrom(const std::string& node,
                                       const std::vector<v1::NodeRunSummary>& node_runs,
                                       const std::map<std::string, RunBands>& bands,
                                       const HistoryOptions& options) {
  v1::NodeHistory h;
  h.set_node(node);
  h.set_repeat_k(options.repeat_k);
  h.set_repeat_n(options.repeat_n);
  const auto runs = RunsOf(node, node_runs);
  for (const auto* s : runs) *h.add_runs() = *s;

  // State: the latest run that measured the node.
  h.set_state(runs.empty() ? "unknown" : "not measured");
  for (auto it = runs.rbegin(); it != runs.rend(); ++it) {
    if (!Measured(**it)) continue;
    h.set_state((*it)->verdict() == kVerdictAccept ? "accepted" : "rejected");
    break;
  }

  // Reasons: first and last seen, and repeat offenders.
  std::vector<const v1::NodeRunSummary*> measured;
  for (const auto* s : runs) {
    if (Measured(*s)) measured.push_back(s);
  }
  const size_t recent_from = measured.size() > static_cast<size_t>(options.repeat_n)
                                 ? measured.size() - options.repeat_n
                                 : 0;
  std::map<std::string, v1::ReasonSeen> seen;
  std::map<std::string, int> recent;
  for (size_t i = 0; i < measured.size(); ++i) {
    for (const auto& r : measured[i]->reasons()) {
      auto& rs = seen[r.id()];
      if (rs.runs() == 0) {
        rs.set_id(r.id());
        rs.set_first_unix_ns(measured[i]->finished_unix_ns());
      }
      rs.set_text(r.text());
      rs.set_last_unix_ns(measured[i]->finished_unix_ns());
      rs.set_runs(rs.runs() + 1);
      if (i >= recent_from) ++recent[r.id()];
    }
  }
  for (auto& [id, rs] : seen) {
    rs.set_repeat_offender(recent[id] >= options.repeat_k);
    *h.add_reasons() = rs;
  }

  // Figures: the node's values over time, its trend, and the fleet's band
  // (p10-p90 across the nodes of the same run).
  std::map<std::string, v1::FigureTrend> trends;
  for (const auto* s : runs) {
    for (const auto& f : s->figures()) {
      auto& t = trends[f.name()];
      t.set_name(f.name());
      t.set_unit(f.unit());
      t.set_simulated(t.simulated() || f.simulated());
      t.add_node_values(f.value());
      t.add_node_times_unix_ns(s->finished_unix_ns());
      FigureBand band;
      if (auto r = bands.find(s->run_id()); r != bands.end()) {
        if (auto b = r->second.find(f.name()); b != r->second.end()) band = b->second;
      }
      t.add_fleet_p10(band.p10);
      t.add_fleet_p90(band.p90);
    }
  }
  for (auto& [name, t] : trends) {
    double slope = 0;
    const std::vector<int64_t> times(t.node_times_unix_ns().begin(),
                                     t.node_times_unix_ns().end());
    const std::vector<double> values(t.node_values().begin(), t.node_values().end());
    // A slope per day from values minutes apart extrapolates noise: the
    // trend needs the values to span an hour or more.
    const bool span = times.size() >= 2 && times.back() - times.front() >= kNsPerHour;
    t.set_trend_measured(span && LeastSquaresSlopePerDay(times, values, &slope));
    t.set_slope_per_day(slope);
    *h.add_figures() = t;
  }
  for (auto& i : IncidentsOf(runs, options)) *h.add_incidents() = std::move(i);
  return h;
}

v1::ReliabilitySummary ComputeReliability(const std::vector<v1::NodeRunSummary>& all,
                                          const HistoryOptions& options) {
  v1::ReliabilitySummary r;
  std::set<std::string> runs, measured_runs;
  for (const auto& s : all) {
    runs.insert(s.run_id());
    if (Measured(s)) measured_runs.insert(s.run_id());
  }
  const auto by_node = ByNode(all);
  r.set_nodes(by_node.size());
  r.set_runs(runs.size());
  r.set_measured(measured_runs.size() >= 2);
  r.set_drain_time(
      "not measured: cmax's Slurm drain (--slurm-drain) records no time of its own");

  std::vector<double> repairs;
  std::map<std::string, int> failures_by_week;
  std::map<std::string, double> hours_by_week;
  std::map<std::string, v1::ReasonSeen> reasons;
  for (const auto& [node, runs_of] : by_node) {
    if (options.stop && options.stop()) return r;
    for (auto& inc : IncidentsOf(runs_of, options)) {
      r.set_incidents(r.incidents() + 1);
      ++failures_by_week[WeekStart(inc.opened_unix_ns())];
      if (inc.closed_run().empty()) {
        r.set_open_incidents(r.open_incidents() + 1);
        *r.add_open() = inc;
      } else {
        r.set_closed_incidents(r.closed_incidents() + 1);
        repairs.push_back(inc.repair_hours());
      }
      if (inc.reopened_within_7d()) r.set_reopened_within_7d(r.reopened_within_7d() + 1);
    }
    // GPU-hours: the node's GPUs x the hours between consecutive measured
    // evaluations, counted in the week of the later one.
    const v1::NodeRunSummary* prev = nullptr;
    for (const auto* s : runs_of) {
      if (!Measured(*s)) continue;
      if (prev) {
        const double hours =
            (s->finished_unix_ns() - prev->finished_unix_ns()) / kNsPerHour;
        hours_by_week[WeekStart(s->finished_unix_ns())] += prev->gpus() * hours;
      }
      prev = s;
      for (const auto& reason : s->reasons()) {
        if (reason.outcome() == "warn") continue;
        auto& rs = reasons[reason.id()];
        if (rs.runs() == 0) {
          rs.set_id(reason.id());
          rs.set_first_unix_ns(s->finished_unix_ns());
        }
        rs.set_first_unix_ns(std::min(rs.first_unix_ns(), s->finished_unix_ns()));
        rs.set_last_unix_ns(std::max(rs.last_unix_ns(), s->finished_unix_ns()));
        rs.set_text(reason.text());
        rs.set_runs(rs.runs() + 1);
      }
    }
    std::string state = "unknown";
    for (auto it = runs_of.rbegin(); it != runs_of.rend(); ++it) {
      state = "not measured";
      if (!Measured(**it)) continue;
      state = (*it)->verdict() == kVerdictAccept ? "accepted" : "rejected";
      break;
    }
    ++(*r.mutable_nodes_by_state())[state];
  }
  std::set<std::string> weeks;
  for (const auto& [w, n] : failures_by_week) weeks.insert(w);
  for (const auto& [w, h] : hours_by_week) weeks.insert(w);
  for (const auto& w : weeks) {
    v1::WeekFailures* wf = r.add_weeks();
    wf->set_week(w);
    wf->set_failures(failures_by_week[w]);
    wf->set_gpu_hours(hours_by_week[w]);
    wf->set_measured(wf->gpu_hours() > 0);
    if (wf->measured())
      wf->set_per_1000_gpu_hours(wf->failures() / wf->gpu_hours() * 1000.0);
  }
  std::vector<v1::ReasonSeen> top;
  for (auto& [id, rs] : reasons) top.push_back(rs);
  std::stable_sort(top.begin(), top.end(),
                   [](const auto& a, const auto& b) { return a.runs() > b.runs(); });
  if (top.size() > options.top_reasons) top.resize(options.top_reasons);
  for (auto& rs : top) *r.add_top_reasons() = std::move(rs);

  r.set_repair_measured(!repairs.empty());
  if (!repairs.empty()) {
    r.set_median_repair_hours(Quantile(repairs, 0.5));
    r.set_p90_repair_hours(Quantile(repairs, 0.9));
  }
  if (!r.measured()) {
    r.set_summary(
        absl::StrCat("history: not measured (", measured_runs.size(),
                     " run in this coordinator's store measured a node; 2 are needed)"));
  } else {
    std::string repair =
        r.repair_measured()
            ? absl::StrCat("time to repair median ", Hours(r.median_repair_hours()),
                           ", p90 ", Hours(r.p90_repair_hours()), " (",
                           r.closed_incidents(), " closed)")
            : std::string("time to repair not measured (no incident closed)");
    r.set_summary(absl::StrCat(
        "history: ", measured_runs.size(), " measured runs over ", r.nodes(), " nodes; ",
        r.incidents(), " incidents, ", r.open_incidents(), " open; ", repair, "; ",
        r.reopened_within_7d(), " failed again within 7 days of a repair"));
  }
  return r;
}

void AddHistoryToScorecard(const v1::ReliabilitySummary& summary, v1::Scorecard* card) {
  *card->mutable_history() = summary;
  for (auto& c : *card->mutable_categories()) {
    if (c.name() == "Reliability") c.add_evidence(summary.summary());
  }
}

std::string RenderNodeHistoryText(const v1::NodeHistory& h) {
  std::string out = absl::StrCat("node ", h.node(), ": ", h.state(), ", ", h.runs_size(),
                                 " runs, ", h.incidents_size(), " incidents\n");
  if (h.runs_size() == 0) {
    absl::StrAppend(&out, "  no run of this coordinator's store has this node\n");
    return out;
  }
  absl::StrAppend(&out, "verdicts:\n");
  for (const auto& s : h.runs()) {
    std::vector<std::string> ids;
    for (const auto& r : s.reasons()) ids.push_back(r.id());
    absl::StrAppend(&out, "  ", TimeText(s.finished_unix_ns()), "  ", s.run_id(), "  ",
                    s.verdict(), s.partial() ? " (partial)" : "",
                    s.simulated() ? " [simulated]" : "", ids.empty() ? "" : "  ",
                    absl::StrJoin(ids, ", "), "\n");
  }
  if (h.reasons_size() > 0) {
    absl::StrAppend(&out, "reasons (repeat offender: in ", h.repeat_k(), " of the last ",
                    h.repeat_n(), " measured runs):\n");
    for (const auto& r : h.reasons()) {
      absl::StrAppend(&out, "  ", r.id(), ": ", r.runs(), " runs, first ",
                      TimeText(r.first_unix_ns()), ", last ", TimeText(r.last_unix_ns()),
                      r.repeat_offender() ? "  REPEAT OFFENDER" : "", "\n    ", OneLine(r.text()),
                      "\n");
    }
  }
  if (h.figures_size() > 0) {
    absl::StrAppend(&out,
                    "figures (latest; fleet p10-p90 at that run; trend per day):\n");
    for (const auto& f : h.figures()) {
      const int last = f.node_values_size() - 1;
      absl::StrAppend(
          &out, "  ", f.name(), ": ", absl::StrFormat("%.4g", f.node_values(last)), " ",
          f.unit(),
          absl::StrFormat("  fleet %.4g-%.4g", f.fleet_p10(last), f.fleet_p90(last)),
          f.trend_measured()
              ? absl::StrFormat("  trend %+.4g %s/day", f.slope_per_day(), f.unit())
              : std::string("  trend not measured"),
          f.simulated() ? "  [simulated]" : "", "\n");
    }
  }
  for (const auto& i : h.incidents()) {
    std::vector<std::string> ids;
    for (const auto& r : i.reasons()) ids.push_back(r.id());
    absl::StrAppend(
        &out, "incident opened ", TimeText(i.opened_unix_ns()), " (run ", i.opened_run(),
        ")",
        i.closed_run().empty()
            ? absl::StrCat(", OPEN", Unresolved(i))
            : absl::StrCat(", closed ", TimeText(i.closed_unix_ns()), " (run ",
                           i.closed_run(), "), time to repair ", Hours(i.repair_hours())),
        i.reopened_within_7d() ? ", failed again within 7 days of a repair" : "",
        "\n  reasons: ", absl::StrJoin(ids, ", "), "\n");
    for (const auto& a : i.artifacts()) absl::StrAppend(&out, "  evidence: ", a, "\n");
  }
  return out;
}

std::string RenderReliabilityText(const v1::ReliabilitySummary& r) {
  std::string out = absl::StrCat(r.summary(), "\n");
  std::vector<std::string> states;
  for (const auto& [state, n] : std::map<std::string, int32_t>(
           r.nodes_by_state().begin(), r.nodes_by_state().end())) {
    states.push_back(absl::StrCat(n, " ", state));
  }
  absl::StrAppend(&out, "nodes by state now: ",
                  states.empty() ? "none" : absl::StrJoin(states, ", "), "\n");
  absl::StrAppend(&out, "time from failure to drain: ", r.drain_time(), "\n");
  for (const auto& i : r.open()) {
    absl::StrAppend(&out, "open incident: ", i.node(), " since ",
                    TimeText(i.opened_unix_ns()), " (run ", i.opened_run(), ")",
                    Unresolved(i), "\n");
  }
  if (r.weeks_size() > 0)
    absl::StrAppend(&out, "failures per 1,000 GPU-hours by week:\n");
  for (const auto& w : r.weeks()) {
    absl::StrAppend(&out, "  ", w.week(), ": ", w.failures(), " failures, ",
                    absl::StrFormat("%.1f", w.gpu_hours()), " GPU-hours, ",
                    w.measured() ? absl::StrFormat("%.2f", w.per_1000_gpu_hours())
                                 : std::string("not measured (no GPU-hours)"),
                    "\n");
  }
  if (r.top_reasons_size() > 0) absl::StrAppend(&out, "reasons that recur most:\n");
  for (const auto& rs : r.top_reasons()) {
    absl::StrAppend(&out, "  ", rs.id(), ": ", rs.runs(), " node-runs, last ",
                    TimeText(rs.last_unix_ns()), "\n");
  }
  return out;
}

}  // namespace cmax::reports
