// The scorecard's chart data (reports/charts.h) and what the HTML and JUnit
// renderings make of it.
#include <catch2/catch.hpp>

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "reports/charts.h"
#include "reports/gpu_specs.h"
#include "reports/html/chart_svg.h"
#include "reports/svg.h"
#include "reports/scorecard.h"
#include "tests/reports/scorecard_test_util.h"

namespace cmax::reports {
namespace {

using testing::CleanHostcheckRun;
using testing::Find;
using testing::Meas;
using testing::Task;

const v1::Chart* ChartById(const v1::Scorecard& card, const std::string& id) {
  for (const auto& c : card.charts()) {
    if (c.id() == id) return &c;
  }
  return nullptr;
}

size_t Count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Five nodes, one H100 each, bf16 GEMM; node-5 is slow.
RunData GemmRun() {
  RunData d = CleanHostcheckRun();
  d.nodes = {"node-1", "node-2", "node-3", "node-4", "node-5"};
  const double tflops[] = {700, 710, 720, 730, 400};
  for (int i = 0; i < 5; ++i) {
    const std::string n = d.nodes[i];
    d.records.push_back(Meas(n, "gemm", "gemm_tflops", tflops[i], "TFLOP/s",
                             {{"gpu", "0"}, {"dtype", "bf16"}, {"m", "8192"}, {"n", "8192"},
                              {"k", "8192"}}));
    d.tasks.push_back(Task(n, "gemm", v1::TASK_COMPLETED));
    d.inventories[n].set_gpu_model("NVIDIA H100 80GB HBM3");
    d.inventories[n].set_gpu_count(1);
  }
  return d;
}

TEST_CASE("GEMM chart has the values, median, fences and datasheet peak", "[charts]") {
  const v1::Scorecard card = BuildScorecard(GemmRun());
  const v1::Chart* c = ChartById(card, "gemm:bf16 8192x8192x8192");
  REQUIRE(c != nullptr);
  CHECK(c->kind() == "per_subject");
  CHECK(c->unit() == "TFLOP/s");
  CHECK(c->section() == "Compute");
  REQUIRE(c->values_size() == 5);
  CHECK(c->values(0).subject() == "node-1 gpu:0");
  CHECK(c->values(4).value() == 400);
  // Sorted 400 700 710 720 730: median 710, Q1 700, Q3 720, IQR 20.
  CHECK(c->stats().n() == 5);
  CHECK(c->stats().median() == Approx(710));
  CHECK(c->stats().q1() == Approx(700));
  CHECK(c->stats().q3() == Approx(720));
  CHECK(c->stats().low_fence() == Approx(670));
  CHECK(c->stats().high_fence() == Approx(750));
  CHECK(c->values(4).outlier());
  for (int i = 0; i < 4; ++i) CHECK_FALSE(c->values(i).outlier());
  const auto spec = FindGpuSpec("NVIDIA H100 80GB HBM3");
  REQUIRE(spec.has_value());
  CHECK(c->reference() == Approx(PeakTflops(*spec, "bf16")));
  CHECK(c->reference() > 0);
  CHECK(absl::StrContains(c->reference_label(), "datasheet peak"));
  CHECK_FALSE(c->simulated());
  // The JSON export carries the chart.
  CHECK(absl::StrContains(RenderJson(card), "\"charts\""));
}

TEST_CASE("a chart family without data is not drawn but named as not measured", "[charts]") {
  const v1::Scorecard card = BuildScorecard(CleanHostcheckRun());
  CHECK(card.charts_size() == 0);
  bool gemm_line = false;
  for (const auto& l : card.charts_not_measured()) {
    gemm_line = gemm_line || absl::StartsWith(l, "GEMM TFLOP/s per GPU: not measured");
  }
  CHECK(gemm_line);
  const std::string html = RenderHtml(card);
  CHECK(absl::StrContains(html, "GEMM TFLOP/s per GPU: not measured"));
  CHECK_FALSE(absl::StrContains(html, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\""));
}

TEST_CASE("simulated data is carried to its chart and its caption", "[charts]") {
  RunData d = GemmRun();
  for (auto& r : d.records) {
    if (r.record().has_measurement()) r.mutable_record()->mutable_measurement()->set_simulated(true);
  }
  const v1::Scorecard card = BuildScorecard(d);
  const v1::Chart* c = ChartById(card, "gemm:bf16 8192x8192x8192");
  REQUIRE(c != nullptr);
  CHECK(c->simulated());
  const std::string html = RenderHtml(card);
  CHECK(absl::StrContains(html, "<strong>GEMM bf16 8192x8192x8192 per GPU</strong> "
                                "<span class=\"sim\">(simulated)</span>"));
}

TEST_CASE("bus bandwidth chart: one line per run against size, the plan's floor", "[charts]") {
  RunData d = CleanHostcheckRun();
  (*d.plan.mutable_expect()->mutable_metrics())["busbw_gbps.all_reduce"] = 100;
  v1::SuiteSpec* s = d.plan.add_suites();
  s->set_suite("collective");
  s->set_name("nccl-pair");
  v1::TaskInfo t = Task("node-1,node-2", "collective", v1::TASK_COMPLETED);
  t.set_suite_index(1);
  d.tasks.push_back(t);
  for (double size : {1024.0, 1048576.0, 1073741824.0}) {
    auto m = Meas("node-1", "collective", "busbw_gbps", size / 1e7, "GB/s",
                  {{"op", "all_reduce"}, {"dtype", "float"}, {"size_bytes", absl::StrCat(size)},
                   {"nodes", "node-1,node-2"}, {"backend", "gloo"}});
    m.set_task_id(t.task_id());
    d.records.push_back(m);
  }
  const v1::Scorecard card = BuildScorecard(d);
  const v1::Chart* c = ChartById(card, "busbw:nccl-pair (collective) (all_reduce)");
  REQUIRE(c != nullptr);
  CHECK(c->kind() == "series");
  CHECK(c->x_log());
  CHECK(c->reference() == 100);
  CHECK(c->reference_label() == "plan floor busbw_gbps.all_reduce");
  REQUIRE(c->series_size() == 1);
  CHECK(c->series(0).name() == "node-1,node-2 float");
  REQUIRE(c->series(0).x_size() == 3);
  CHECK(c->series(0).x(0) == 1024);
  CHECK(c->series(0).y(2) == Approx(107.3741824));
}

TEST_CASE("burn-in samples become lines over seconds since each began", "[charts]") {
  RunData d = CleanHostcheckRun();
  for (const std::string n : {"node-1", "node-2"}) {
    for (int i = 0; i < 5; ++i) {
      v1::ExportedRecord rec;
      rec.set_node(n);
      rec.set_suite("burnin");
      rec.set_task_id("burnin@" + n);
      v1::Sample* s = rec.mutable_record()->mutable_sample();
      s->set_suite("burnin");
      s->set_metric("gpu_temperature_c");
      s->set_unit("C");
      s->set_value(60 + i);
      (*s->mutable_labels())["gpu"] = "3";
      s->set_time_unix_ns(int64_t{1764451065} * 1000000000 + int64_t{i} * 2000000000 +
                          (n == "node-2" ? 7000000000 : 0));
      d.records.push_back(rec);
    }
  }
  const v1::Scorecard card = BuildScorecard(d);
  const v1::Chart* c = ChartById(card, "burnin:gpu_temperature_c");
  REQUIRE(c != nullptr);
  REQUIRE(c->series_size() == 2);
  CHECK(c->series(1).name() == "node-2 gpu:3");
  CHECK(c->series(1).x(0) == 0);
  CHECK(c->series(1).x(4) == Approx(8));
  CHECK(c->series(1).y(4) == 64);
  CHECK(c->better() == "lower");
}

TEST_CASE("connectivity becomes a heat map with unreachable pairs marked", "[charts]") {
  RunData d = CleanHostcheckRun();
  auto add = [&](const std::string& src, const std::string& dst, double rtt, bool ok) {
    auto r = Meas(src, "connectivity", "reachable", ok ? 1 : 0, "bool", {{"src", src}, {"dst", dst}});
    d.records.push_back(r);
    if (ok) d.records.push_back(Meas(src, "connectivity", "rtt_ms", rtt, "ms", {{"src", src}, {"dst", dst}}));
  };
  add("node-1", "node-2", 0.2, true);
  add("node-2", "node-1", 0.3, true);
  add("node-1", "node-3", 0, false);
  const v1::Scorecard card = BuildScorecard(d);
  const v1::Chart* c = ChartById(card, "connectivity:rtt");
  REQUIRE(c != nullptr);
  CHECK(c->kind() == "heatmap");
  REQUIRE(c->cells_size() == 3);
  int unreachable = 0;
  for (const auto& k : c->cells()) unreachable += k.state() == "unreachable";
  CHECK(unreachable == 1);
  const std::string html = RenderHtml(card);
  CHECK(absl::StrContains(html, "<title>node-1 \u2192 node-3: unreachable</title>"));
}

TEST_CASE("a chart marks as outliers only what the judges name: the declared margin",
          "[charts]") {
  // Six nodes' storage totals around 1000 MB/s and node-6 below: 16% below
  // is inside storage_bandwidth_mbps's declared 25% (no rule names it, so
  // no red bar); 58% below is a straggler, marked.
  auto marked = [](double slow) {
    RunData d = CleanHostcheckRun();
    d.nodes.clear();
    for (int i = 1; i <= 6; ++i) {
      const std::string n = absl::StrCat("node-", i);
      d.nodes.push_back(n);
      d.records.push_back(Meas(n, "storage", "storage_bandwidth_mbps",
                               i == 6 ? slow : 1000.0 + i * 5, "MB/s",
                               {{"job", "all"}, {"pattern", "seq-read"}, {"op", "read"}}));
    }
    const v1::Scorecard card = BuildScorecard(d);
    const v1::Chart* c = ChartById(card, "storage:seq-read read");
    REQUIRE(c != nullptr);
    REQUIRE(c->values_size() == 6);
    std::vector<std::string> out;
    for (const auto& v : c->values()) {
      if (v.outlier()) out.push_back(v.subject());
    }
    return out;
  };
  CHECK(marked(850.0).empty());
  CHECK(marked(420.0) == std::vector<std::string>{"node-6"});
}

TEST_CASE("many subjects are drawn as a histogram with the outliers named", "[charts]") {
  RunData d = CleanHostcheckRun();
  d.nodes.clear();
  for (int i = 0; i < 300; ++i) {
    const std::string n = absl::StrCat("n", i);
    d.nodes.push_back(n);
    d.records.push_back(Meas(n, "storage", "storage_bandwidth_mbps", i == 7 ? 100 : 1000 + i % 10,
                             "MB/s", {{"pattern", "seq_read"}, {"op", "read"}, {"job", "all"}}));
  }
  const v1::Scorecard card = BuildScorecard(d);
  const v1::Chart* c = ChartById(card, "storage:seq_read read");
  REQUIRE(c != nullptr);
  CHECK(c->subjects() == 300);
  REQUIRE(c->bin_counts_size() == static_cast<int>(kHistogramBins));
  CHECK(c->bin_edges_size() == static_cast<int>(kHistogramBins) + 1);
  CHECK(std::accumulate(c->bin_counts().begin(), c->bin_counts().end(), 0) == 300);
  REQUIRE(c->values_size() == 1);
  CHECK(c->values(0).subject() == "n7");
  CHECK(c->values(0).outlier());
  CHECK(absl::StrContains(c->note(), "aggregate"));
}

TEST_CASE("the node x category grid colours each node by its outcome", "[charts]") {
  RunData d = CleanHostcheckRun();
  d.records.push_back(Find("node-2", "audit", "audit.runc", v1::SEVERITY_FAIL, "security", "node",
                           "runc 1.1.11"));
  const v1::Scorecard card = BuildScorecard(d);
  REQUIRE(card.node_grid_size() == 3);
  int security = -1, reliability = -1;
  for (int i = 0; i < card.categories_size(); ++i) {
    if (card.categories(i).name() == "Security") security = i;
    if (card.categories(i).name() == "Reliability") reliability = i;
  }
  REQUIRE(security >= 0);
  const auto& row2 = card.node_grid(1);
  CHECK(row2.node() == "node-2");
  CHECK(row2.outcomes(security) == "fail");
  CHECK(card.node_grid(0).outcomes(security) == "not_measured");
  CHECK(card.node_grid(0).outcomes(reliability) != "not_measured");
  const std::string html = RenderHtml(card);
  CHECK(absl::StrContains(html, "<title>node-2 \u00b7 Security: fail</title>"));
}

// Past kMaxGridRows nodes the grid has a row per pattern of outcomes, worst
// first by OutcomeBadness (outcome_order.h, "partial" as not measured), then
// the most common.
TEST_CASE("a grouped node grid puts the worst patterns first, then the most common",
          "[charts][render]") {
  v1::Scorecard card;
  card.add_categories()->set_name("Security");
  // (outcome, nodes): 70 nodes in all, more than kMaxGridRows.
  const std::vector<std::pair<std::string, int>> patterns = {
      {"pass", 30}, {"not_measured", 2}, {"partial", 20}, {"warn", 10}, {"critical", 3},
      {"fail", 5}};
  int i = 0;
  for (const auto& [outcome, count] : patterns) {
    for (int k = 0; k < count; ++k) {
      v1::NodeCategorySummary* g = card.add_node_grid();
      g->set_node(absl::StrCat("n", i++));
      g->add_outcomes(outcome);
    }
  }
  REQUIRE(card.node_grid_size() > kMaxGridRows);
  const std::string svg = NodeGridFigure(card);
  size_t last = 0;
  for (const char* words : {"critical", "fail", "warn", "measured, something not measured",
                            "not measured", "pass"}) {
    INFO(words);
    const size_t at = svg.find(absl::StrCat(" \u00b7 Security: ", words, "</title>"));
    REQUIRE(at != std::string::npos);
    CHECK(at >= last);
    last = at;
  }
}

TEST_CASE("HTML escapes hostile names in chart titles and tables", "[charts][render]") {
  RunData d = GemmRun();
  const std::string evil = "<img src=x onerror=alert(1)>\"&'";
  d.nodes.push_back(evil);
  d.records.push_back(Meas(evil, "gemm", "gemm_tflops", 705, "TFLOP/s",
                           {{"gpu", "<b>"}, {"dtype", "bf16"}, {"m", "8192"}, {"n", "8192"},
                            {"k", "8192"}}));
  d.records.push_back(Find(evil, "audit", "audit.x", v1::SEVERITY_CRITICAL, "security", "node",
                           "<script>x</script>"));
  const v1::Scorecard card = BuildScorecard(d);
  const std::string html = RenderHtml(card);
  CHECK_FALSE(absl::StrContains(html, "<img"));
  CHECK_FALSE(absl::StrContains(html, "<b>"));
  CHECK_FALSE(absl::StrContains(html, "<script>x"));
  CHECK(absl::StrContains(html, "<title>&lt;img src=x onerror=alert(1)&gt;&quot;&amp;&#39; "
                                "gpu:&lt;b&gt;: 705 TFLOP/s</title>"));
  CHECK(absl::StrContains(html, "data-nodes=\"&lt;img src=x onerror=alert(1)&gt;&quot;&amp;&#39;\""));
  // Self-contained: one inline script, nothing fetched.
  CHECK(Count(html, "<script") == 1);
  CHECK_FALSE(absl::StrContains(html, "<script src"));
  CHECK_FALSE(absl::StrContains(html, "<link"));
  CHECK_FALSE(absl::StrContains(html, "url("));
  CHECK_FALSE(absl::StrContains(html, "@import"));
}

TEST_CASE("findings identical on several nodes share one filterable row", "[charts][render]") {
  RunData d = CleanHostcheckRun();
  for (const std::string n : {"node-1", "node-2", "node-3"}) {
    d.records.push_back(Find(n, "hostcheck", "hostcheck.thp", v1::SEVERITY_WARN, "reliability",
                             "node", "transparent huge pages are always on"));
  }
  // The same not-measured finding from two tasks of node-1: the node once,
  // with how many findings the row holds.
  for (int task = 0; task < 2; ++task) {
    v1::ExportedRecord r = Find("node-1", "gemm", "gpu.no_driver", v1::SEVERITY_INFO, "compute",
                                "node", "not measured: no GPU driver");
    r.set_task_id(absl::StrCat("run-1.", task, ".node-1"));
    r.mutable_record()->mutable_finding()->set_not_measured(true);
    d.records.push_back(r);
  }
  const v1::Scorecard card = BuildScorecard(d);
  {
    const std::string html = RenderHtml(card);
    const size_t row = html.find("data-nodes=\"node-1\"><td class=\"k\"><span class=\"nm\">");
    REQUIRE(row != std::string::npos);
    CHECK(html.compare(html.find("</td><td>", row) + 9, 22, "node-1 (2 findings)</t") == 0);
  }
  const std::string html = RenderHtml(card);
  CHECK(Count(html, "transparent huge pages are always on</strong>") == 1);
  CHECK(absl::StrContains(html, "data-severity=\"warn\" data-rank=\"3\" data-category=\"reliability\" "
                                "data-nodes=\"node-1|node-2|node-3\"><td class=\"k\"><span class=\"warn\">warn"
                                "</span></td><td>3 nodes: "));
  CHECK(absl::StrContains(html, "<section class=\"node\" id=\"node-node-2\">"));
  CHECK(absl::StrContains(html, "id=\"cmax-timing\""));
}

// A small well-formedness check: tags balance, attributes are quoted, every
// '&' starts an entity. Returns "" or what is wrong.
std::string XmlProblem(const std::string& x) {
  std::vector<std::string> stack;
  size_t i = 0;
  while (i < x.size()) {
    if (x[i] == '&') {
      const size_t semi = x.find(';', i);
      const std::string ent = x.substr(i, semi == std::string::npos ? 0 : semi - i + 1);
      if (ent != "&amp;" && ent != "&lt;" && ent != "&gt;" && ent != "&quot;" && ent != "&apos;") {
        return absl::StrCat("bad entity at ", i);
      }
      i = semi + 1;
      continue;
    }
    if (x[i] != '<') {
      if (x[i] == '>') return absl::StrCat("stray > at ", i);
      ++i;
      continue;
    }
    if (x.compare(i, 4, "<!--") == 0) {
      const size_t end = x.find("-->", i + 4);
      if (end == std::string::npos) return "open comment";
      i = end + 3;
      continue;
    }
    if (x.compare(i, 2, "<?") == 0) {
      const size_t end = x.find("?>", i);
      if (end == std::string::npos) return "open declaration";
      i = end + 2;
      continue;
    }
    // A tag: scan to '>' outside quotes.
    size_t j = i + 1;
    bool quoted = false;
    while (j < x.size() && (quoted || x[j] != '>')) {
      if (x[j] == '"') quoted = !quoted;
      if (quoted && x[j] == '<') return absl::StrCat("< in an attribute at ", j);
      ++j;
    }
    if (j >= x.size()) return "open tag";
    std::string tag = x.substr(i + 1, j - i - 1);
    const bool closing = !tag.empty() && tag[0] == '/';
    const bool self = !tag.empty() && tag.back() == '/';
    std::string name = tag.substr(closing ? 1 : 0);
    name = name.substr(0, name.find_first_of(" /\t\n"));
    if (closing) {
      if (stack.empty() || stack.back() != name) return absl::StrCat("unbalanced </", name, ">");
      stack.pop_back();
    } else if (!self) {
      stack.push_back(name);
    }
    i = j + 1;
  }
  return stack.empty() ? "" : absl::StrCat("unclosed <", stack.back(), ">");
}

TEST_CASE("JUnit XML is well formed with a case per node and check", "[charts][junit]") {
  RunData d = CleanHostcheckRun();
  d.records.push_back(Find("node-2", "audit", "audit.runc", v1::SEVERITY_FAIL, "security", "node",
                           "<script>&\"runc\x01 1.1.11"));
  d.records.push_back(Find("node-3", "audit", "audit.key", v1::SEVERITY_CRITICAL, "security",
                           "node", "private key readable"));
  const v1::Scorecard card = BuildScorecard(d);
  const std::string xml = RenderJunit(card);
  INFO(xml);
  CHECK(XmlProblem(xml).empty());
  CHECK(absl::StartsWith(xml, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites "));
  // Three nodes: eight category cases each, plus the rules that fired.
  CHECK(Count(xml, "<testsuite name=\"node-") == 3);
  CHECK(Count(xml, "name=\"category:") == 24);
  CHECK(absl::StrContains(xml, "<testcase classname=\"cmax.node-2\" name=\"category:Security\""));
  // node-2's Security fails (its category case and the rule's case), node-3's
  // is critical (both are errors); nothing else failed.
  CHECK(Count(xml, "<failure ") == 2);
  CHECK(Count(xml, "<error ") == 2);
  CHECK(absl::StrContains(xml, "<testcase classname=\"cmax.node-3\" name=\"audit.key\" time=\"0\">\n"
                               "      <error type=\"critical\""));
  CHECK(absl::StrContains(xml, "<skipped message=\"not measured: "));
  CHECK_FALSE(absl::StrContains(xml, "\x01"));
  const size_t failures_attr = xml.find("failures=\"");
  REQUIRE(failures_attr != std::string::npos);
  const size_t digits = failures_attr + 10;
  CHECK(std::stoul(xml.substr(digits, xml.find('"', digits) - digits)) == Count(xml, "<failure "));
}

}  // namespace
}  // namespace cmax::reports

namespace cmax::reports {
namespace {

TEST_CASE("the SVG writer escapes every text and scales values onto pixels", "[charts][svg]") {
  Svg svg(100, 50, "chart", "a <b> & \"c\"");
  svg.Rect(0, 0, 10, 10, "#000", "node-<1>");
  svg.Text(5, 5, "x < y");
  const std::string out = svg.Finish();
  CHECK(absl::StrContains(out, "aria-label=\"a &lt;b&gt; &amp; &quot;c&quot;\""));
  CHECK(absl::StrContains(out, "<title>node-&lt;1&gt;</title>"));
  CHECK(absl::StrContains(out, ">x &lt; y</text>"));
  CHECK_FALSE(absl::StrContains(out, "<b>"));
  const Scale lin(0, 100, 200, 0);  // a y axis: 0 at the bottom (200 px)
  CHECK(lin(0) == 200);
  CHECK(lin(50) == 100);
  CHECK(lin.Ticks(5) == std::vector<double>{0, 20, 40, 60, 80, 100});
  const Scale log(1024, 1 << 30, 0, 100, true);
  CHECK(log(32768) == Approx(25));
  // 2^10 to 2^30 in steps of 2^5.
  CHECK(log.Ticks(4) == std::vector<double>{1024, 32768, 1048576, 33554432, 1073741824});
  CHECK(FormatBytes(1 << 20) == "1 MiB");
  CHECK(FormatBytes(8.0 * (1 << 30)) == "8 GiB");
}

TEST_CASE("the HTML prints: a print style sheet and folded sections opened", "[charts][render]") {
  const std::string html = RenderHtml(BuildScorecard(CleanHostcheckRun()));
  CHECK(absl::StrContains(html, "@media print{"));
  CHECK(absl::StrContains(html, "addEventListener('beforeprint'"));
}

}  // namespace
}  // namespace cmax::reports

namespace cmax::reports {
namespace {

TEST_CASE("many nodes: a node's reasons alike but for numbers are shown once, tasks in a line",
          "[charts][render]") {
  RunData d = CleanHostcheckRun();
  d.nodes.clear();
  d.tasks.clear();
  for (int i = 0; i < 40; ++i) {
    const std::string n = absl::StrCat("n", i);
    d.nodes.push_back(n);
    d.tasks.push_back(Task(n, "hostcheck", v1::TASK_COMPLETED));
    d.records.push_back(Meas(n, "hostcheck", "gpu_count", 8, "count"));
  }
  for (int gpu = 0; gpu < 5; ++gpu) {
    d.records.push_back(Find("n3", "health", "health.ecc", v1::SEVERITY_WARN, "reliability",
                             absl::StrCat("gpu:", gpu),
                             absl::StrCat("gpu ", gpu, " has ", 10 + gpu, " corrected errors")));
  }
  const v1::Scorecard card = BuildScorecard(d);
  const std::string html = RenderHtml(card);
  const size_t at = html.find("<section class=\"node\" id=\"node-n3\">");
  REQUIRE(at != std::string::npos);
  const std::string n3 = html.substr(at, html.find("</section>", at) - at);
  INFO(n3);
  // The reason once, with its rule and how many more like it; the five
  // findings listed under it.
  CHECK(absl::StrContains(n3, "Reliability warn: gpu 0 has 10 corrected errors (health.ecc, and "
                              "4 more like it)"));
  CHECK(Count(n3, "Reliability warn: gpu ") == 1);
  CHECK(Count(n3, "corrected errors <code>health.ecc</code>") == 5);
  CHECK(absl::StrContains(n3, "1 task completed at the first attempt: hostcheck (0 records)"));
  // The JSON's node verdict is as short; its findings keep each one.
  int reasons = 0, findings = 0;
  for (const auto& n : card.nodes()) {
    if (n.node() != "n3") continue;
    for (const auto& r : n.reasons()) reasons += absl::StrContains(r, "corrected errors") ? 1 : 0;
  }
  for (const auto& c : card.categories()) {
    for (const auto& r : c.rules()) findings += r.node() == "n3" && r.rule_id() == "health.ecc";
  }
  CHECK(reasons == 1);
  CHECK(findings == 5);
}

}  // namespace
}  // namespace cmax::reports
