// Cost figures from a scorecard (cost.h; rules in RULES.md, "Cost").
#include "reports/cost.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "common/task_state.h"
#include "reports/compare.h"
#include "reports/stats.h"
#include "reports/svg.h"

namespace cmax::reports {
namespace {

double Hours(const std::string& started, const std::string& finished) {
  absl::Time a, b;
  std::string err;
  if (!absl::ParseTime(absl::RFC3339_full, started, &a, &err) ||
      !absl::ParseTime(absl::RFC3339_full, finished, &b, &err) || b <= a) {
    return 0;
  }
  return absl::ToDoubleHours(b - a);
}

int NodeGpus(const v1::NodeVerdict& n) {
  auto it = n.inventory().find("gpu_count");
  int g = 0;
  if (it == n.inventory().end() || !absl::SimpleAtoi(it->second, &g) || g < 0) return 0;
  return g;
}

std::string Usd(double v) { return absl::StrFormat("$%.2f", v); }

}  // namespace

v1::CostSummary ComputeCost(const v1::Scorecard& card, double price, const std::string& source) {
  v1::CostSummary c;
  c.set_price_per_gpu_hour(price > 0 ? price : 0);
  if (price > 0) c.set_price_source(source);
  c.set_formula(kCostFormula);
  c.set_simulated(card.simulated());

  // BF16 dense per GPU: each GPU's best shape, then the median over GPUs.
  std::map<std::string, double> best;  // node/gpu -> TFLOP/s
  for (const auto& m : SummaryOf(card)) {
    if (m.metric() != "gemm_tflops") continue;
    auto it = m.labels().find("dtype");
    if (it == m.labels().end() || it->second != "bf16") continue;
    const std::string gpu = absl::StrCat(m.node(), "/", m.gpu());
    auto [pos, inserted] = best.emplace(gpu, m.value());
    if (!inserted) pos->second = std::max(pos->second, m.value());
    if (m.simulated()) c.set_simulated(true);
  }
  std::vector<double> per_gpu;
  for (const auto& [gpu, v] : best) per_gpu.push_back(v);
  c.set_gpus_measured(static_cast<int>(per_gpu.size()));
  const double tflops = ComputeFleetStats(per_gpu).median;
  c.set_bf16_measured(!per_gpu.empty() && tflops > 0);
  if (c.bf16_measured()) c.set_bf16_tflops_per_gpu(tflops);

  int gpus = 0, lost_gpus = 0;
  std::set<std::string> broken_tasks;
  for (const auto& n : card.nodes()) {
    const int g = NodeGpus(n);
    gpus += g;
    if (n.verdict() == "fail") {
      lost_gpus += g;
      c.add_lost_nodes(n.node());
    }
    for (const auto& t : n.tasks()) {
      const std::optional<v1::TaskState> state = TaskStateFromName(t.state());
      if (state && TaskBroke(*state, t.exit_code())) broken_tasks.insert(t.task_id());
    }
  }
  c.set_failures(static_cast<int>(broken_tasks.size()));
  c.set_gpus_total(gpus);
  c.set_run_hours(Hours(card.started(), card.finished()));
  c.set_gpu_hours(gpus * c.run_hours());
  c.set_lost_gpu_hours(lost_gpus * c.run_hours());
  if (price > 0) {
    c.set_lost_usd(c.lost_gpu_hours() * price);
    if (c.bf16_measured()) c.set_usd_per_pflop_hour(price / (tflops / 1000.0));
  }

  std::vector<std::string> parts;
  if (price <= 0) {
    parts.push_back("no price given");
  } else if (!c.bf16_measured()) {
    parts.push_back(absl::StrCat(Usd(price),
                                 " per GPU-hour; price per delivered PFLOP-hour: not measured "
                                 "(no BF16 gemm_tflops in this run)"));
  } else {
    parts.push_back(absl::StrFormat(
        "%s per GPU-hour: %s per delivered BF16 PFLOP-hour (%.1f TFLOP/s per GPU, median of %d "
        "GPUs)",
        Usd(price), Usd(c.usd_per_pflop_hour()), tflops, c.gpus_measured()));
  }
  if (gpus == 0) {
    parts.push_back("no GPUs in the nodes' inventories: no GPU-hours");
  } else {
    std::string lost = absl::StrFormat("%.2f of %.2f GPU-hours lost to %d failed node%s",
                                       c.lost_gpu_hours(), c.gpu_hours(), c.lost_nodes_size(),
                                       c.lost_nodes_size() == 1 ? "" : "s");
    if (c.lost_nodes_size() > 0) {
      absl::StrAppend(&lost, " (", absl::StrJoin(c.lost_nodes(), ", "), ")");
    }
    if (price > 0) absl::StrAppend(&lost, ", ", Usd(c.lost_usd()));
    parts.push_back(lost);
  }
  c.set_summary(absl::StrCat(c.simulated() ? "SIMULATED DATA \u2014 not a measurement; " : "",
                             absl::StrJoin(parts, "; ")));
  return c;
}

std::string RenderCostText(const v1::CostSummary& c) { return c.summary(); }

namespace {

// The rows of the cost table, shared by Markdown and HTML; `lost_nodes`
// formats the node names for the medium.
std::vector<std::pair<std::string, std::string>> CostRows(const v1::CostSummary& c,
                                                          const std::string& lost_nodes) {
  std::vector<std::pair<std::string, std::string>> rows;
  rows.emplace_back("price per GPU-hour",
                    c.price_per_gpu_hour() > 0
                        ? absl::StrCat(Usd(c.price_per_gpu_hour()), " (", c.price_source(), ")")
                        : "not given");
  rows.emplace_back("BF16 TFLOP/s per GPU",
                    c.bf16_measured() ? absl::StrFormat("%.1f (median of %d GPUs)",
                                                        c.bf16_tflops_per_gpu(), c.gpus_measured())
                                      : "not measured");
  rows.emplace_back("USD per delivered PFLOP-hour", c.price_per_gpu_hour() <= 0 ? "no price"
                                                    : c.bf16_measured() ? Usd(c.usd_per_pflop_hour())
                                                                        : "not measured");
  rows.emplace_back("GPU-hours of the run", absl::StrFormat("%.2f (%d GPUs x %.3f h)", c.gpu_hours(),
                                                            c.gpus_total(), c.run_hours()));
  std::string lost = absl::StrFormat("%.2f", c.lost_gpu_hours());
  if (!lost_nodes.empty()) absl::StrAppend(&lost, " (", lost_nodes, ")");
  rows.emplace_back("GPU-hours lost to failed nodes", lost);
  if (c.price_per_gpu_hour() > 0) rows.emplace_back("cost of the lost GPU-hours", Usd(c.lost_usd()));
  return rows;
}

// Shown at all: a price was given or GPUs were counted.
bool HasCost(const v1::Scorecard& card) {
  return card.has_cost() &&
         (card.cost().price_per_gpu_hour() > 0 || card.cost().gpus_total() > 0);
}

}  // namespace

std::string RenderCostMarkdown(const v1::Scorecard& card) {
  if (!HasCost(card)) return "";
  const v1::CostSummary& c = card.cost();
  std::string out = "## Cost\n\n";
  if (c.simulated()) absl::StrAppend(&out, "**SIMULATED DATA \u2014 not a measurement**\n\n");
  absl::StrAppend(&out, "| figure | value |\n| --- | --- |\n");
  // Node names come from the data: escape what Markdown would read.
  std::vector<std::string> names;
  for (const auto& n : c.lost_nodes()) {
    std::string e;
    for (char ch : n) {
      if (std::string("\\`*_{}[]<>()#+-.!|").find(ch) != std::string::npos) e.push_back('\\');
      e.push_back(ch);
    }
    names.push_back(e);
  }
  for (const auto& [k, v] : CostRows(c, absl::StrJoin(names, ", "))) {
    absl::StrAppend(&out, "| ", k, " | ", v, " |\n");
  }
  absl::StrAppend(&out, "\nFormula: ", c.formula(), ".\n\n");
  return out;
}

std::string RenderCostHtml(const v1::Scorecard& card) {
  if (!HasCost(card)) return "";
  const v1::CostSummary& c = card.cost();
  std::string out = "<section id=\"cost\"><h2>Cost</h2>\n";
  if (c.simulated()) {
    absl::StrAppend(&out, "<p><strong>SIMULATED DATA \u2014 not a measurement</strong></p>\n");
  }
  absl::StrAppend(&out, "<table>\n");
  for (const auto& [k, v] : CostRows(c, absl::StrJoin(c.lost_nodes(), ", "))) {
    absl::StrAppend(&out, "<tr><th>", HtmlEscape(k), "</th><td>", HtmlEscape(v), "</td></tr>\n");
  }
  absl::StrAppend(&out, "</table>\n<p>Formula: ", HtmlEscape(c.formula()), ".</p>\n</section>\n");
  return out;
}

}  // namespace cmax::reports
