// The league table (rank.h; rules in RULES.md, "Ranking").
#include "reports/rank.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "common/record_io.h"
#include "common/time_util.h"
#include "google/protobuf/util/json_util.h"
#include "reports/compare.h"
#include "reports/cost.h"
#include "reports/coverage.h"
#include "reports/outcome_order.h"
#include "reports/stats.h"

namespace cmax::reports {
namespace {


// Three significant figures: figures that differ beyond them order clusters.
double Round3(double v) {
  if (v == 0 || !std::isfinite(v)) return 0;
  const double scale = std::pow(10.0, 2 - std::floor(std::log10(std::fabs(v))));
  return std::round(v * scale) / scale;
}

// One rule's key for one entry: measured first, then the value (bigger is
// better after the sign is applied).
struct Key {
  bool measured;
  double value;  // already signed: higher is better
  std::string shown;
};

std::vector<Key> Keys(const v1::RankEntry& e) {
  int grade_points = 0;
  for (const auto& c : RatedCategories()) {
    auto it = e.grades().find(c);
    if (it != e.grades().end()) grade_points += GradePoints(it->second);
  }
  return {
      {true, e.rated() ? 1.0 : 0.0, e.rated() ? "rated" : "not rated"},
      {true, static_cast<double>(TierPoints(e.tier())), e.tier()},
      {true, static_cast<double>(grade_points), absl::StrCat(grade_points, " grade points")},
      {e.bf16_measured(), Round3(e.bf16_tflops_per_gpu()),
       e.bf16_measured() ? absl::StrFormat("%.1f BF16 TFLOP/s per GPU", e.bf16_tflops_per_gpu())
                         : "BF16 not measured"},
      {e.allreduce_measured(), Round3(e.allreduce_busbw_gbps()),
       e.allreduce_measured() ? absl::StrFormat("%.1f GB/s all-reduce busbw",
                                                e.allreduce_busbw_gbps())
                              : "all-reduce not measured"},
      {e.storage_measured(), Round3(e.storage_gbps_per_gpu()),
       e.storage_measured() ? absl::StrFormat("%.2f GB/s storage per GPU",
                                              e.storage_gbps_per_gpu())
                            : "storage per GPU not measured"},
      {e.nodes() > 0, -Round3(e.rejected_share()),
       e.nodes() > 0 ? absl::StrFormat("%.0f%% of nodes rejected", e.rejected_share() * 100)
                     : "no nodes"},
      {e.failures_measured(), -Round3(e.failures_per_1000_gpu_hours()),
       e.failures_measured() ? absl::StrFormat("%.2f failures per 1,000 GPU-hours",
                                               e.failures_per_1000_gpu_hours())
                             : "failures per GPU-hour not measured (no GPU-hours)"},
  };
}

// <0: a before b; 0: tie; >0: b before a. `rule` gets the deciding rule.
int Order(const v1::RankEntry& a, const v1::RankEntry& b, size_t* rule = nullptr) {
  const auto ka = Keys(a), kb = Keys(b);
  for (size_t i = 0; i < ka.size(); ++i) {
    if (rule) *rule = i;
    if (ka[i].measured != kb[i].measured) return ka[i].measured ? -1 : 1;
    if (!ka[i].measured) continue;
    if (ka[i].value != kb[i].value) return ka[i].value > kb[i].value ? -1 : 1;
  }
  return 0;
}

// all_reduce busbw at the largest message size of any all_reduce entry, the
// median over its records.
bool AllReduceBusbw(const std::vector<v1::CompareMetric>& summary, double* out) {
  int64_t largest = -1;
  std::vector<double> values;
  for (const auto& m : summary) {
    if (m.metric() != "busbw_gbps") continue;
    auto op = m.labels().find("op");
    auto size = m.labels().find("size_bytes");
    int64_t bytes = 0;
    if (op == m.labels().end() || op->second != "all_reduce" || size == m.labels().end() ||
        !absl::SimpleAtoi(size->second, &bytes)) {
      continue;
    }
    if (bytes > largest) {
      largest = bytes;
      values.clear();
    }
    if (bytes == largest) values.push_back(m.value());
  }
  if (values.empty()) return false;
  *out = ComputeFleetStats(values).median;
  return true;
}

// The read (else write) pattern with the highest fleet total: the sum over
// nodes of each node's total (job "all"), in GB/s.
bool StorageTotalGbps(const std::vector<v1::CompareMetric>& summary, double* out) {
  std::map<std::pair<std::string, std::string>, double> total;  // (op, entry/pattern) -> MB/s
  for (const auto& m : summary) {
    if (m.metric() != "storage_bandwidth_mbps") continue;
    auto job = m.labels().find("job");
    if (job == m.labels().end() || job->second != "all") continue;
    auto op = m.labels().find("op");
    auto pattern = m.labels().find("pattern");
    const std::string op_name = op == m.labels().end() ? "" : op->second;
    const std::string pat = pattern == m.labels().end() ? "" : pattern->second;
    total[{op_name, absl::StrCat(m.entry(), "/", pat)}] += m.value();
  }
  double best_read = -1, best_any = -1;
  for (const auto& [k, v] : total) {
    if (k.first == "read") best_read = std::max(best_read, v);
    best_any = std::max(best_any, v);
  }
  const double best = best_read >= 0 ? best_read : best_any;
  if (best < 0) return false;
  *out = best / 1000.0;
  return true;
}

std::string Md(const std::string& s) {
  std::string e;
  for (char ch : s) {
    if (std::string("\\`*_{}[]<>()#+-.!|").find(ch) != std::string::npos) e.push_back('\\');
    if (ch == '\n') {
      e.push_back(' ');
      continue;
    }
    e.push_back(ch);
  }
  return e;
}

std::string Fig(bool measured, double v, int decimals) {
  return measured ? absl::StrFormat("%.*f", decimals, v) : "not measured";
}

std::string CostText(const v1::RankEntry& e) {
  if (e.price_per_gpu_hour() <= 0) return "no price";
  if (!e.cost_measured()) return "not measured";
  return absl::StrFormat("$%.2f", e.usd_per_pflop_hour());
}

}  // namespace

const std::vector<std::string>& RankRules() {
  static const std::vector<std::string> rules = {
      "1. rated scorecards before not rated ones (not rated never ranks above a tier)",
      "2. tier: Platinum, Gold, Silver, Bronze, Underperform",
      absl::StrCat("3. grade points over ", absl::StrJoin(RatedCategories(), ", "),
                   " (A 4, B 3, C 2, D 1, F and not measured 0)"),
      "4. BF16 TFLOP/s per GPU (gemm), higher first",
      "5. all-reduce bus bandwidth at the largest message size, higher first",
      "6. storage GB/s per GPU (best read pattern, fleet total / GPUs), higher first",
      "7. share of nodes rejected (verdict fail), lower first",
      "8. failures (tasks crashed, hung or lost) per 1,000 GPU-hours, lower first",
      "in rules 4-8 a measured figure ranks above a not measured one; figures are compared "
      "at three significant digits; clusters equal on every rule share a position (a tie)",
      "cost order: USD per delivered BF16 PFLOP-hour, lower first; clusters without a price "
      "or without a BF16 figure are not placed",
  };
  return rules;
}

v1::RankTable RankClusters(const std::vector<RankInput>& inputs) {
  v1::RankTable table;
  table.set_generated(FormatRfc3339(NowUnixNs()));
  for (const auto& r : RankRules()) table.add_rules(r);
  std::vector<v1::RankEntry> entries;
  for (const auto& in : inputs) {
    const v1::Scorecard& card = in.card;
    v1::RankEntry e;
    e.set_cluster(in.cluster);
    e.set_run_id(card.run_id());
    e.set_plan(card.plan());
    e.set_tier(card.tier());
    e.set_rated(TierPoints(card.tier()) > 0);
    e.set_simulated(card.simulated());
    if (card.simulated()) table.set_simulated(true);
    for (const auto& c : card.categories()) (*e.mutable_grades())[c.name()] = c.grade();
    double price = in.price_per_gpu_hour;
    std::string source = "rank --price";
    if (price <= 0 && card.has_cost() && card.cost().price_per_gpu_hour() > 0) {
      price = card.cost().price_per_gpu_hour();
      source = card.cost().price_source();
    }
    const v1::CostSummary cost = ComputeCost(card, price, source);
    e.set_bf16_measured(cost.bf16_measured());
    e.set_bf16_tflops_per_gpu(cost.bf16_tflops_per_gpu());
    e.set_gpus(cost.gpus_total());
    e.set_nodes(card.nodes_size());
    const std::vector<v1::CompareMetric> summary = SummaryOf(card);
    double busbw = 0, storage = 0;
    e.set_allreduce_measured(AllReduceBusbw(summary, &busbw));
    e.set_allreduce_busbw_gbps(busbw);
    if (StorageTotalGbps(summary, &storage) && cost.gpus_total() > 0) {
      e.set_storage_measured(true);
      e.set_storage_gbps_per_gpu(storage / cost.gpus_total());
    }
    int failed = 0;
    for (const auto& n : card.nodes()) failed += n.verdict() == "fail";
    e.set_rejected_share(card.nodes_size() > 0 ? static_cast<double>(failed) / card.nodes_size()
                                               : 0);
    if (cost.gpu_hours() > 0) {
      e.set_failures_measured(true);
      e.set_failures_per_1000_gpu_hours(cost.failures() / cost.gpu_hours() * 1000);
    }
    // How the provider responds to failures (docs/history.md): shown, not
    // ranked (a cluster with no failures has no repair time to compare).
    const v1::ReliabilitySummary& h = card.history();
    e.set_open_incidents(h.open_incidents());
    if (h.repair_measured()) {
      e.set_repair_measured(true);
      e.set_median_repair_hours(h.median_repair_hours());
      e.set_p90_repair_hours(h.p90_repair_hours());
      e.set_response(absl::StrFormat(
          "time to repair median %.2f h, p90 %.2f h over %d closed incidents; %d open",
          h.median_repair_hours(), h.p90_repair_hours(), h.closed_incidents(),
          h.open_incidents()));
    } else if (h.measured()) {
      e.set_response(absl::StrCat("time to repair not measured: no incident closed in ",
                                  h.runs(), " runs; ", h.open_incidents(), " open"));
    } else {
      e.set_response(
          "time to repair not measured: the scorecard has no history "
          "(one run on its own, or written before cmax kept history)");
    }
    e.set_price_per_gpu_hour(cost.price_per_gpu_hour());
    e.set_cost_measured(cost.price_per_gpu_hour() > 0 && cost.bf16_measured());
    e.set_usd_per_pflop_hour(cost.usd_per_pflop_hour());
    entries.push_back(std::move(e));
  }
  std::stable_sort(entries.begin(), entries.end(),
                   [](const auto& a, const auto& b) { return Order(a, b) < 0; });
  for (size_t i = 0; i < entries.size(); ++i) {
    if (i == 0) {
      entries[i].set_position(1);
      continue;
    }
    size_t rule = 0;
    const int o = Order(entries[i - 1], entries[i], &rule);
    if (o == 0) {
      entries[i].set_position(entries[i - 1].position());
      const std::string why = "equal on every rule (tier, grade points and key figures at three "
                              "significant digits)";
      entries[i].set_tie(absl::StrCat("ties with ", entries[i - 1].cluster(), ": ", why));
      if (entries[i - 1].tie().empty()) {
        entries[i - 1].set_tie(absl::StrCat("ties with ", entries[i].cluster(), ": ", why));
      }
    } else {
      entries[i].set_position(static_cast<int>(i) + 1);
      const auto ka = Keys(entries[i - 1]), kb = Keys(entries[i]);
      entries[i].set_why(absl::StrCat("below ", entries[i - 1].cluster(), " by rule ", rule + 1,
                                      ": ", kb[rule].shown, " vs ", ka[rule].shown));
    }
  }
  // Cost order.
  std::vector<v1::RankEntry*> priced;
  for (auto& e : entries) {
    if (e.cost_measured()) priced.push_back(&e);
  }
  std::stable_sort(priced.begin(), priced.end(), [](const auto* a, const auto* b) {
    return Round3(a->usd_per_pflop_hour()) < Round3(b->usd_per_pflop_hour());
  });
  for (size_t i = 0; i < priced.size(); ++i) {
    const bool tie = i > 0 && Round3(priced[i]->usd_per_pflop_hour()) ==
                                  Round3(priced[i - 1]->usd_per_pflop_hour());
    priced[i]->set_cost_position(tie ? priced[i - 1]->cost_position() : static_cast<int>(i) + 1);
  }
  for (auto& e : entries) *table.add_entries() = std::move(e);
  return table;
}

namespace {

// "1.50/4.20" hours, or "n/m".
std::string RepairText(const v1::RankEntry& e) {
  if (!e.repair_measured()) return "n/m";
  return absl::StrFormat("%.2f/%.2f", e.median_repair_hours(), e.p90_repair_hours());
}

}  // namespace

std::string RenderRankText(const v1::RankTable& t) {
  std::string out;
  if (t.simulated()) absl::StrAppend(&out, "SIMULATED DATA \u2014 not a measurement\n");
  // One 5-wide column per rated category: COMP NET STOR REL SEC ORCH ...
  std::string grade_heads;
  for (const auto& c : RatedCategories()) {
    static const std::map<std::string, std::string> kShort = {
        {"Compute", "COMP"}, {"Networking", "NET"},       {"Storage", "STOR"},
        {"Reliability", "REL"}, {"Security", "SEC"}, {"Orchestration", "ORCH"},
        {"Monitoring", "MON"}};
    auto it = kShort.find(c);
    absl::StrAppend(&grade_heads, absl::StrFormat("%-5s ", it == kShort.end() ? c : it->second));
  }
  absl::StrAppend(&out, absl::StrFormat("%-4s %-20s %-13s %s%9s %9s %9s %8s %9s %9s %5s %11s\n",
                                        "POS", "CLUSTER", "TIER", grade_heads, "BF16/GPU",
                                        "AR_BUSBW", "STOR/GPU", "REJECTED", "FAIL/1kGH",
                                        "$/PFLOPh", "COST#", "TTR_P50/P90"));
  auto g = [](const v1::RankEntry& e, const char* c) {
    auto it = e.grades().find(c);
    if (it == e.grades().end() || it->second == "not measured") return std::string("n/m");
    return it->second;
  };
  for (const auto& e : t.entries()) {
    std::string grades;
    for (const auto& c : RatedCategories()) {
      absl::StrAppend(&grades, absl::StrFormat("%-5s ", g(e, c.c_str())));
    }
    absl::StrAppend(
        &out,
        absl::StrFormat("%-4d %-20s %-13s %s%9s %9s %9s %7.0f%% %9s %9s %5s %11s\n",
                        e.position(), e.cluster(), e.tier(), grades,
                        e.bf16_measured() ? absl::StrFormat("%.1f", e.bf16_tflops_per_gpu()) : "n/m",
                        e.allreduce_measured() ? absl::StrFormat("%.1f", e.allreduce_busbw_gbps())
                                               : "n/m",
                        e.storage_measured() ? absl::StrFormat("%.2f", e.storage_gbps_per_gpu())
                                             : "n/m",
                        e.rejected_share() * 100,
                        e.failures_measured()
                            ? absl::StrFormat("%.2f", e.failures_per_1000_gpu_hours())
                            : "n/m",
                        CostText(e),
                        e.cost_position() > 0 ? absl::StrCat(e.cost_position()) : "-",
                        RepairText(e)));
  }
  absl::StrAppend(&out,
                  "\n(n/m: not measured; units: BF16 TFLOP/s per GPU, GB/s, GB/s per "
                  "GPU, USD per delivered BF16 PFLOP-hour, hours; TTR: time to repair, "
                  "shown, not ranked)\n");
  for (const auto& e : t.entries()) {
    absl::StrAppend(&out, e.cluster(), ": responds to failures: ", e.response(), "\n");
  }
  for (const auto& e : t.entries()) {
    if (!e.tie().empty()) absl::StrAppend(&out, e.cluster(), ": ", e.tie(), "\n");
    if (!e.why().empty()) absl::StrAppend(&out, e.cluster(), ": ", e.why(), "\n");
    if (!e.rated()) {
      absl::StrAppend(&out, e.cluster(), ": not rated (", e.run_id(),
                      "): too little was measured for a tier\n");
    }
  }
  absl::StrAppend(&out, "\nrules:\n");
  for (const auto& r : t.rules()) absl::StrAppend(&out, "  ", r, "\n");
  return out;
}

std::string RenderRankJson(const v1::RankTable& t) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.add_whitespace = true;
  options.always_print_primitive_fields = true;
  std::string out;
  if (!google::protobuf::util::MessageToJsonString(t, &out, options).ok()) {
    return MessageToJsonLine(t, true);
  }
  return out;
}

std::string RenderRankMarkdown(const v1::RankTable& t) {
  std::string out = "# cmax league table\n\n";
  if (t.simulated()) absl::StrAppend(&out, "**SIMULATED DATA \u2014 not a measurement**\n\n");
  absl::StrAppend(&out, "| # | cluster | tier | ", absl::StrJoin(RatedCategories(), " | "),
                  " | BF16 TFLOP/s per GPU | all-reduce busbw GB/s | storage GB/s per "
                  "GPU | nodes rejected | failures per 1,000 GPU-h | USD per PFLOP-h | cost # | "
                  "time to repair p50/p90 h |\n"
                  "| ---: | --- | --- | ");
  for (size_t i = 0; i < RatedCategories().size(); ++i) absl::StrAppend(&out, "--- | ");
  absl::StrAppend(&out, "---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
  for (const auto& e : t.entries()) {
    std::vector<std::string> grades;
    for (const auto& c : RatedCategories()) {
      auto it = e.grades().find(c);
      grades.push_back(it == e.grades().end() ? "not measured" : Md(it->second));
    }
    absl::StrAppend(&out, "| ", e.position(), " | ", Md(e.cluster()), " | ", Md(e.tier()),
                    " | ", absl::StrJoin(grades, " | "), " | ",
                    Fig(e.bf16_measured(), e.bf16_tflops_per_gpu(), 1), " | ",
                    Fig(e.allreduce_measured(), e.allreduce_busbw_gbps(), 1), " | ",
                    Fig(e.storage_measured(), e.storage_gbps_per_gpu(), 2), " | ",
                    absl::StrFormat("%.0f%%", e.rejected_share() * 100), " | ",
                    Fig(e.failures_measured(), e.failures_per_1000_gpu_hours(), 2), " | ",
                    CostText(e), " | ",
                    e.cost_position() > 0 ? absl::StrCat(e.cost_position()) : "-", " | ",
                    RepairText(e), " |\n");
  }
  absl::StrAppend(&out, "\n");
  for (const auto& e : t.entries()) {
    absl::StrAppend(&out, "- ", Md(e.cluster()),
                    " responds to failures: ", Md(e.response()), "\n");
  }
  for (const auto& e : t.entries()) {
    if (!e.tie().empty()) absl::StrAppend(&out, "- ", Md(e.cluster()), ": ", Md(e.tie()), "\n");
    if (!e.why().empty()) absl::StrAppend(&out, "- ", Md(e.cluster()), ": ", Md(e.why()), "\n");
    if (!e.rated()) absl::StrAppend(&out, "- ", Md(e.cluster()), ": not rated\n");
  }
  absl::StrAppend(&out, "\n## Rules\n\n");
  for (const auto& r : t.rules()) absl::StrAppend(&out, "- ", Md(r), "\n");
  return out;
}

}  // namespace cmax::reports
