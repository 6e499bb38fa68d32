// HTML rendering of a scorecard: one self-contained file (inline CSS, inline
// SVG charts, one small inline script; no external script, style sheet,
// font or image). It shows before it tells: tier, category cards and node
// counts first, then the charts (reports/charts.h), the node x category grid,
// the node verdicts grouped by reason, the findings table (sortable and
// filterable with the script, readable without it), and one anchored section
// per node. Every text from the data is escaped (svg.h HtmlEscape); only
// http(s) links become anchors.
#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/plural.h"
#include "reports/html/chart_svg.h"
#include "reports/cost.h"
#include "reports/coverage.h"
#include "reports/judge_util.h"
#include "reports/outcome_order.h"
#include "reports/scorecard.h"
#include "reports/svg.h"

namespace cmax::reports {
namespace {

std::string H(const std::string& text) { return HtmlEscape(text); }

// Above this many nodes, reasons shared by several nodes are written once
// (Node verdicts) and referred to from each node's section.
constexpr int kInlineReasonsUpTo = 32;
// Figures listed in a node's section.
constexpr int kFiguresPerNode = 40;
// Reasons shown open in a node's section; the rest are folded.
constexpr int kReasonsShown = 4;
// Findings listed in a node's section (all of them are in the table).
constexpr size_t kFindingsPerNode = 10;
// Reasons shown open in the node verdicts (worst first); the rest folded.
constexpr size_t kVerdictReasonsShown = 8;
// A category's rule results shown open; more are folded behind their counts.
constexpr int kRulesShown = 3;

// One text from the data is shown up to this many bytes (a judge's evidence
// can list every pair of a large fleet); the JSON export keeps it whole.
constexpr size_t kMaxTextBytes = 2000;
// Evidence lines shown per rule or finding.
constexpr int kMaxEvidenceLines = 20;

// `text`, cut at kMaxTextBytes (on a UTF-8 boundary) with what was left out.
std::string Clip(const std::string& text) {
  if (text.size() <= kMaxTextBytes) return text;
  size_t cut = kMaxTextBytes;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return absl::StrCat(text.substr(0, cut), " \u2026 (", text.size() - cut,
                      " more bytes; the JSON scorecard has the whole text)");
}

// <a href> for a web link IsSafeWebLink accepts (text: the URL unless given),
// escaped; anything else as escaped text.
std::string Link(const std::string& url, const std::string& text = "") {
  if (!IsSafeWebLink(url)) return H(url);
  return absl::StrCat("<a href=\"", H(url), "\" rel=\"noopener noreferrer\">",
                      H(text.empty() ? url : text), "</a>");
}

// A CSS class name from a fixed set, never from the data.
std::string GradeClass(const std::string& grade) {
  if (grade == "A" || grade == "B" || grade == "C" || grade == "D" || grade == "F") {
    return absl::StrCat("g", grade);
  }
  return "gNM";
}

std::string OutcomeClass(const std::string& outcome) {
  if (outcome == "pass") return "pass";
  if (outcome == "warn") return "warn";
  if (outcome == "fail" || outcome == "critical") return "fail";
  return "nm";
}

std::string NodeLink(const std::string& node) {
  return absl::StrCat("<a href=\"#", NodeAnchor(node), "\">", H(node), "</a>");
}

// "a, b, c, ... (12 more)" with links, at most `max` names.
std::string NodeList(const std::vector<std::string>& nodes, size_t max = 20) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < nodes.size() && i < max; ++i) parts.push_back(NodeLink(nodes[i]));
  std::string out = absl::StrJoin(parts, ", ");
  if (nodes.size() > max) absl::StrAppend(&out, ", \u2026 (", nodes.size() - max, " more)");
  return out;
}

constexpr char kStyle[] = R"css(
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:2rem auto;max-width:80rem;padding:0 1rem;color:#1b1f24;line-height:1.4}
h1{font-size:1.6rem}h2{margin-top:2rem;border-bottom:1px solid #d0d7de;padding-bottom:.2rem}
table{border-collapse:collapse;width:100%;margin:.5rem 0 1rem}
th,td{border:1px solid #d0d7de;padding:.3rem .5rem;text-align:left;vertical-align:top;overflow-wrap:anywhere}
th{background:#f6f8fa;white-space:nowrap}
td.k{white-space:nowrap}
pre{background:#f6f8fa;border:1px solid #d0d7de;padding:.5rem;overflow-x:auto;white-space:pre-wrap;font-size:.85rem}
code{font-size:.85rem}
nav.toc a{margin-right:1rem}
.banner{background:#fff3cd;border:3px solid #d39e00;color:#5c3c00;font-weight:700;font-size:1.3rem;padding:1rem;margin:1rem 0;text-align:center}
.tier{font-size:1.4rem;font-weight:700}
.tierbox{border:2px solid #d0d7de;border-radius:.5rem;padding:.8rem 1rem;margin:1rem 0}
.tierbox .tier{font-size:2rem}
.cards{display:flex;flex-wrap:wrap;gap:.6rem;margin:.6rem 0}
.card{border:1px solid #d0d7de;border-radius:.5rem;padding:.5rem .7rem;width:12rem}
.card h3{margin:0 0 .3rem;font-size:1rem}
.card .kf{font-size:.85rem;color:#57606a}
.counts span{margin-right:1.2rem;font-size:1.1rem}
.badge{display:inline-block;min-width:2.2rem;text-align:center;border-radius:.3rem;padding:.1rem .4rem;font-weight:700}
.gA{background:#1a7f37;color:#fff}.gB{background:#4c9a2a;color:#fff}.gC{background:#bf8700;color:#fff}
.gD{background:#d1242f;color:#fff}.gF{background:#82071e;color:#fff}.gNM{background:#eaeef2;color:#57606a}
.pass{color:#1a7f37;font-weight:700}.warn{color:#9a6700;font-weight:700}.fail{color:#cf222e;font-weight:700}.nm{color:#57606a;font-weight:700}
.sim{color:#9a6700;font-weight:700}
ul.ev{margin:.2rem 0 .6rem 1rem}
figure.chart-fig{margin:1rem 0;break-inside:avoid}
svg.chart{max-width:100%;height:auto;font-family:inherit;background:#fff}
svg .iqr{fill-opacity:.15}
ul.legend{list-style:none;padding:0;margin:.2rem 0;font-size:.85rem}ul.legend li{display:inline-block;margin-right:1rem}
.sw{display:inline-block;width:.8rem;height:.8rem;margin-right:.3rem;vertical-align:middle}
.notm{color:#57606a}
.filters{margin:.4rem 0}.filters label{margin-right:1rem}
th[data-sort]{cursor:pointer}
section.node{border-top:1px solid #d0d7de;margin-top:1rem;content-visibility:auto;contain-intrinsic-size:auto 14rem}
@media print{
 body{max-width:none;margin:0;font-size:10pt}
 nav.toc,.filters,#cmax-timing{display:none}
 h2{break-after:avoid}
 tr,.card,figure{break-inside:avoid}
 section.node{content-visibility:visible}
 a{color:inherit;text-decoration:none}
}
)css";

// The inline script: findings sort and filter (also from the URL hash,
// "#filter=severity:critical,category:Security,node:node-2"), details opened
// for printing, and the page's own load timing written into #cmax-timing.
// No data is interpolated into it.
constexpr char kScript[] = R"js(
(function(){
'use strict';
var t=document.getElementById('findings');
var f={severity:'',category:'',node:''};
function rows(){return t?Array.prototype.slice.call(t.tBodies[0].rows):[];}
function apply(){
 var shown=0;
 rows().forEach(function(r){
  var ok=(!f.severity||r.getAttribute('data-severity')===f.severity)&&
   (!f.category||r.getAttribute('data-category')===f.category)&&
   (!f.node||('|'+r.getAttribute('data-nodes')+'|').indexOf('|'+f.node+'|')>=0);
  if(ok){r.removeAttribute('hidden');shown++;}else{r.setAttribute('hidden','');}
 });
 var c=document.getElementById('findings-shown');
 if(c)c.textContent=t?(shown+' of '+rows().length+' rows shown'):'';
}
function fromHash(){
 var h=decodeURIComponent(location.hash||'');
 var m=/filter=([^&]*)/.exec(h);
 f={severity:'',category:'',node:''};
 if(m){m[1].split(',').forEach(function(p){var i=p.indexOf(':');if(i>0){var k=p.slice(0,i);if(k in f)f[k]=p.slice(i+1);}});}
 ['severity','category','node'].forEach(function(k){var e=document.getElementById('f-'+k);if(e)e.value=f[k];});
 apply();
}
if(t){
 var bar=document.getElementById('findings-filters');
 if(bar)bar.removeAttribute('hidden');
 ['severity','category','node'].forEach(function(k){
  var e=document.getElementById('f-'+k);
  if(e)e.addEventListener(k==='node'?'input':'change',function(){f[k]=e.value.trim();apply();});
 });
 Array.prototype.forEach.call(t.tHead.rows[0].cells,function(th,i){
  var key=th.getAttribute('data-sort');if(!key)return;
  th.addEventListener('click',function(){
   var dir=th.getAttribute('data-dir')==='asc'?-1:1;th.setAttribute('data-dir',dir>0?'asc':'desc');
   var rs=rows();
   rs.sort(function(a,b){
    var x=key==='severity'?+a.getAttribute('data-rank'):a.cells[i].textContent;
    var y=key==='severity'?+b.getAttribute('data-rank'):b.cells[i].textContent;
    return (x<y?-1:x>y?1:0)*dir;});
   rs.forEach(function(r){t.tBodies[0].appendChild(r);});
  });
 });
 window.addEventListener('hashchange',fromHash);
 fromHash();
}
window.addEventListener('beforeprint',function(){Array.prototype.forEach.call(document.querySelectorAll('details'),function(d){d.open=true;});});
var tm=document.getElementById('cmax-timing');
if(tm){
 tm.setAttribute('data-script-ms',performance.now().toFixed(1));
 tm.setAttribute('data-svg-count',String(document.querySelectorAll('svg').length));
 window.addEventListener('load',function(){
  var ms=performance.now();
  var nav=performance.getEntriesByType?performance.getEntriesByType('navigation')[0]:null;
  tm.setAttribute('data-load-ms',ms.toFixed(1));
  if(nav)tm.setAttribute('data-dom-complete-ms',nav.domComplete.toFixed(1));
  // The laid-out page: wider than the window means it scrolls sideways.
  tm.setAttribute('data-page-width',String(document.documentElement.scrollWidth));
  tm.setAttribute('data-page-height',String(document.documentElement.scrollHeight));
  // Where the verdict (tier, categories, node verdicts) ends: the findings.
  var fs=document.getElementById('findings-section');
  if(fs)tm.setAttribute('data-findings-top',String(fs.offsetTop));
  tm.textContent='page loaded in '+ms.toFixed(0)+' ms (this browser, performance.now())';
 });
}
})();
)js";

void Header(const v1::Scorecard& card, std::string* out) {
  absl::StrAppend(out, "<h1>cmax scorecard: ", H(card.run_id()), "</h1>\n");
  if (card.simulated()) {
    std::vector<std::string> cats;
    for (const auto& c : card.categories()) {
      if (c.simulated()) cats.push_back(c.name());
    }
    absl::StrAppend(out, "<div class=\"banner\">\u26a0 ", H(kSimulatedBanner),
                    "<br><small>some values come from the simulated backend (",
                    H(absl::StrJoin(cats, ", ")), ")</small></div>\n");
  }
  absl::StrAppend(out,
                  "<nav class=\"toc\"><a href=\"#overview\">Overview</a><a href=\"#charts\">"
                  "Charts</a><a href=\"#grid\">Nodes by category</a><a href=\"#verdicts\">Node "
                  "verdicts</a><a href=\"#findings-section\">Findings</a><a href=\"#rules\">"
                  "Rules</a><a href=\"#nodes\">Nodes</a></nav>\n");
}

// The key figure of a category: its widest chart's median, else its first
// evidence line.
std::string KeyFigure(const v1::Scorecard& card, const v1::CategoryGrade& c) {
  // Per-subject charts first (a figure per GPU or node), then the others.
  const v1::Chart* best = nullptr;
  auto better = [](const v1::Chart& a, const v1::Chart* b) {
    if (!b) return true;
    const bool pa = a.kind() == "per_subject", pb = b->kind() == "per_subject";
    if (pa != pb) return pa;
    return a.stats().n() > b->stats().n();
  };
  for (const auto& ch : card.charts()) {
    if (ch.section() != c.name() || ch.stats().n() == 0) continue;
    if (better(ch, best)) best = &ch;
  }
  if (best) {
    return absl::StrCat(best->title(), ": median ", FormatValue(best->stats().median(), best->unit()),
                        " (", best->stats().n(), " values)");
  }
  if (!c.evidence().empty()) return c.evidence(0);
  return "";
}

void Overview(const v1::Scorecard& card, std::string* out) {
  absl::StrAppend(out, "<section id=\"overview\">\n<div class=\"tierbox\"><span class=\"tier\">",
                  H(card.tier()), "</span>");
  absl::StrAppend(out, "<p>", H(card.tier_reason()), "</p>");
  int selected = 0, evaluated_any = 0;
  for (const auto& c : card.categories()) selected = std::max(selected, c.nodes_selected());
  for (const auto& c : card.categories()) evaluated_any = std::max(evaluated_any, c.nodes_evaluated());
  int measured = 0;
  for (const auto& c : card.categories()) measured += c.measured() ? 1 : 0;
  absl::StrAppend(out, "<p>Coverage: ", measured, " of ", card.categories_size(),
                  " categories measured; the widest evaluated ",
                  CountedOf(evaluated_any, selected, "selected node", "selected nodes"),
                  ".</p></div>\n");
  int pass = 0, warn = 0, fail = 0;
  for (const auto& n : card.nodes()) {
    if (n.verdict() == "pass") ++pass;
    else if (n.verdict() == "fail") ++fail;
    else ++warn;
  }
  absl::StrAppend(out, "<p class=\"counts\"><span class=\"pass\">", pass,
                  " accepted</span><span class=\"warn\">", warn,
                  " warned</span><span class=\"fail\">", fail, " rejected</span> of ",
                  card.nodes_size(), " nodes</p>\n<div class=\"cards\">\n");
  for (const auto& c : card.categories()) {
    absl::StrAppend(out, "<div class=\"card\"><h3>", H(c.name()), " <span class=\"badge ",
                    GradeClass(c.grade()), "\">", H(c.grade()), "</span></h3>",
                    c.simulated() ? "<div class=\"sim\">simulated</div>" : "",
                    "<div>", H(EvaluatedOnText(c)), IsFleetOnly(c) ? "" : " evaluated",
                    "</div><div class=\"kf\">", H(KeyFigure(card, c)),
                    "</div></div>\n");
  }
  absl::StrAppend(out, "</div>\n");
  // The details table (the same facts in words).
  absl::StrAppend(out, "<table class=\"meta\">\n");
  auto row = [&](const std::string& k, const std::string& v_html) {
    absl::StrAppend(out, "<tr><th>", k, "</th><td>", v_html, "</td></tr>\n");
  };
  row("Run", H(card.run_id()));
  row("Plan", H(card.plan()));
  row("Started", H(card.started()));
  row("Finished", H(card.finished()));
  row("State", H(card.state()));
  row("Tier", absl::StrCat("<span class=\"tier\">", H(card.tier()), "</span>"));
  if (!card.missing().empty()) {
    std::vector<std::string> items;
    for (const auto& m : card.missing()) items.push_back(absl::StrCat("<li>", H(m), "</li>"));
    row("Missing for a tier", absl::StrCat("<ul>", absl::StrJoin(items, ""), "</ul>"));
  }
  // No "Why" row: the tier box above says the tier reason once.
  row("Generated", absl::StrCat(H(card.generated()), " by cmax ", H(card.cmax_version())));
  absl::StrAppend(out, "</table>\n</section>\n");
}

void Categories(const v1::Scorecard& card, std::string* out) {
  absl::StrAppend(out, "<h2>Categories</h2>\n<table>\n<tr><th>Category</th><th>Grade</th>"
                       "<th>Evaluated on</th><th>Summary</th></tr>\n");
  for (const auto& c : card.categories()) {
    absl::StrAppend(out, "<tr><td class=\"k\">", H(c.name()),
                    c.simulated() ? " <span class=\"sim\">(simulated)</span>" : "",
                    "</td><td class=\"k\"><span class=\"badge ", GradeClass(c.grade()), "\">",
                    H(c.grade()), "</span></td><td class=\"k\">", H(EvaluatedOnText(c)),
                    "</td><td>", H(c.summary()),
                    "</td></tr>\n");
  }
  absl::StrAppend(out, "</table>\n");
}

void Charts(const v1::Scorecard& card, std::string* out) {
  absl::StrAppend(out, "<h2 id=\"charts\">Charts</h2>\n<p>Drawn from this run's own records. "
                       "Lines: fleet median (solid blue), Tukey fences at 1.5 IQR (dashed "
                       "orange), datasheet peak or plan floor (dashed purple); outliers in "
                       "red.</p>\n");
  std::string section;
  for (const auto& c : card.charts()) {
    if (c.section() != section) {
      section = c.section();
      absl::StrAppend(out, "<h3>", H(section), "</h3>\n");
    }
    absl::StrAppend(out, ChartFigure(c));
  }
  if (!card.charts_not_measured().empty()) {
    absl::StrAppend(out, "<ul class=\"notm\">");
    for (const auto& line : card.charts_not_measured()) {
      absl::StrAppend(out, "<li>", H(line), "</li>");
    }
    absl::StrAppend(out, "</ul>\n");
  }
}

void Grid(const v1::Scorecard& card, std::string* out) {
  absl::StrAppend(out, "<h2 id=\"grid\">Nodes by category</h2>\n");
  const std::string grid = NodeGridFigure(card);
  absl::StrAppend(out, grid.empty() ? "<p>No nodes.</p>\n" : grid);
}

// Reasons, each with the nodes that share it, most shared first.
std::vector<std::pair<std::string, std::vector<std::string>>> GroupedReasons(
    const v1::Scorecard& card) {
  std::map<std::string, std::vector<std::string>> by;
  std::vector<std::string> order;
  for (const auto& n : card.nodes()) {
    for (const auto& r : n.reasons()) {
      auto [it, inserted] = by.try_emplace(r);
      if (inserted) order.push_back(r);
      it->second.push_back(n.node());
    }
  }
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const auto& r : order) out.emplace_back(r, by[r]);
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  return out;
}

void Verdicts(const v1::Scorecard& card,
              const std::vector<std::pair<std::string, std::vector<std::string>>>& reasons,
              std::string* out) {
  absl::StrAppend(out, "<h2 id=\"verdicts\">Node verdicts</h2>\n");
  std::map<std::string, std::vector<std::string>> by_verdict;
  for (const auto& n : card.nodes()) by_verdict[n.verdict()].push_back(n.node());
  absl::StrAppend(out, "<table>\n<tr><th>Verdict</th><th>Nodes</th></tr>\n");
  for (const char* v : {"fail", "warn", "pass"}) {
    auto it = by_verdict.find(v);
    if (it == by_verdict.end()) continue;
    absl::StrAppend(out, "<tr><td><span class=\"", OutcomeClass(v), "\">", v, "</span></td><td>",
                    it->second.size(), " node", it->second.size() == 1 ? "" : "s", ": ",
                    NodeList(it->second, 50), "</td></tr>\n");
  }
  absl::StrAppend(out, "</table>\n");
  if (reasons.empty()) return;
  // Many nodes: a reason of one node alone is shown in that node's section
  // only (it is not repeated here).
  const bool shared_only = card.nodes_size() > kInlineReasonsUpTo;
  size_t single = 0, shown = 0;
  const size_t listed = std::count_if(reasons.begin(), reasons.end(), [&](const auto& r) {
    return !(shared_only && r.second.size() == 1);
  });
  const char* kHead = "<table>\n<tr><th>Reason</th><th>Nodes</th></tr>\n";
  absl::StrAppend(out, kHead);
  for (size_t i = 0; i < reasons.size(); ++i) {
    const auto& [text, nodes] = reasons[i];
    if (shared_only && nodes.size() == 1) {
      ++single;
      continue;
    }
    // The worst first (scorecard.cc); beyond kVerdictReasonsShown folded.
    if (shown++ == kVerdictReasonsShown && listed > kVerdictReasonsShown + 1) {
      absl::StrAppend(out, "</table>\n<details><summary>", listed - kVerdictReasonsShown,
                      " more reasons</summary>", kHead);
    }
    absl::StrAppend(out, "<tr id=\"reason-", i + 1, "\"><td>", H(Clip(text)), "</td><td>",
                    nodes.size(), " node", nodes.size() == 1 ? "" : "s", ": ", NodeList(nodes),
                    "</td></tr>\n");
  }
  absl::StrAppend(out, "</table>\n", listed > kVerdictReasonsShown + 1 ? "</details>\n" : "");
  if (single > 0) {
    absl::StrAppend(out, "<p>", single, " more reason", single == 1 ? "" : "s",
                    " of one node each: in the node's section below.</p>\n");
  }
}

void BarrierStarts(const v1::Scorecard& card, std::string* out) {
  if (card.barrier_starts().empty()) return;
  absl::StrAppend(out, "<h2>Barrier starts</h2>\n<p>When the nodes of each <code>scope: barrier"
                       "</code> entry really started, against the instant the coordinator gave "
                       "them (node clocks, shifted by the offsets estimated from heartbeats).</p>"
                       "\n<table>\n<tr><th>Entry</th><th>Nodes reporting</th><th>Start skew</th>"
                       "<th>Lag behind the instant</th><th>Without a start record</th></tr>\n");
  for (const auto& b : card.barrier_starts()) {
    absl::StrAppend(out, "<tr><td>", H(b.entry()), "</td><td>", b.nodes(), "</td><td>",
                    H(FormatValue(b.skew_ms(), "ms")), "</td><td>",
                    H(FormatNumber(b.min_lag_ms())), " to ", H(FormatValue(b.max_lag_ms(), "ms")),
                    "</td><td>", H(absl::StrJoin(b.missing(), ", ")), "</td></tr>\n");
  }
  absl::StrAppend(out, "</table>\n");
}

void Rule(const v1::RuleResult& r, std::string* out) {
  absl::StrAppend(out, "<li><span class=\"", OutcomeClass(r.outcome()), "\">",
                  H(OutcomeLabel(r.outcome())), "</span> <code>", H(r.rule_id()), "</code>");
  if (!r.node().empty()) absl::StrAppend(out, " on ", H(r.node()));
  absl::StrAppend(out, ": ", H(Clip(r.message())), "\n<ul class=\"ev\">");
  int shown = 0;
  for (const auto& full : r.evidence()) {
    if (shown++ == kMaxEvidenceLines) {
      absl::StrAppend(out, "<li>\u2026 ", r.evidence_size() - kMaxEvidenceLines,
                      " more evidence lines in the JSON scorecard</li>");
      break;
    }
    const std::string e = Clip(full);
    const size_t nl = e.find('\n');
    if (nl == std::string::npos) {
      absl::StrAppend(out, "<li>", H(e), "</li>");
    } else {
      absl::StrAppend(out, "<li>", H(e.substr(0, nl)), "<pre>", H(e.substr(nl + 1)),
                      "</pre></li>");
    }
  }
  if (!r.action().empty()) absl::StrAppend(out, "<li>Action: ", H(r.action()), "</li>");
  if (!r.links().empty()) {
    std::vector<std::string> links;
    for (const auto& l : r.links()) links.push_back(Link(l));
    absl::StrAppend(out, "<li>Links: ", absl::StrJoin(links, ", "), "</li>");
  }
  absl::StrAppend(out, "</ul></li>\n");
}

void Rules(const v1::Scorecard& card, std::string* out) {
  absl::StrAppend(out, "<h2 id=\"rules\">Rules by category</h2>\n");
  for (const auto& c : card.categories()) {
    absl::StrAppend(out, "<h3>", H(c.name()), " <span class=\"badge ", GradeClass(c.grade()),
                    "\">", H(c.grade()), "</span></h3>\n");
    if (c.simulated()) {
      absl::StrAppend(out, "<div class=\"banner\">", H(kSimulatedBanner), "</div>\n");
    }
    // Its coverage in full: the summary cell above names three reasons at most.
    if (!c.coverage().empty()) {
      absl::StrAppend(out, "<p class=\"cov\">Coverage: ", H(c.coverage()), "</p>\n");
    }
    if (!c.evidence().empty()) {
      absl::StrAppend(out, "<ul>");
      for (const auto& e : c.evidence()) absl::StrAppend(out, "<li>", H(e), "</li>");
      absl::StrAppend(out, "</ul>\n");
    }
    if (c.rules().empty()) {
      absl::StrAppend(out, "<p>", c.measured() ? "No rule fired." : "Not measured.", "</p>\n");
      continue;
    }
    // More than a few rules: folded, with their count by outcome (the
    // summary, the node verdicts and the findings table above show them).
    const bool fold = c.rules_size() > kRulesShown;
    if (fold) {
      std::map<std::string, int> by_outcome;
      for (const auto& r : c.rules()) ++by_outcome[r.outcome()];
      std::vector<std::string> counts;
      for (const char* o : {"critical", "fail", "warn", "not_measured", "pass"}) {
        if (by_outcome[o] > 0) absl::StrAppend(&counts.emplace_back(), by_outcome[o], " ", OutcomeLabel(o));
      }
      absl::StrAppend(out, "<details><summary>", c.rules_size(), " rule results: ",
                      absl::StrJoin(counts, ", "), "</summary>\n");
    }
    absl::StrAppend(out, "<ul>\n");
    for (const auto& r : c.rules()) Rule(r, out);
    absl::StrAppend(out, "</ul>\n", fold ? "</details>\n" : "");
  }
}

std::string SeverityKey(const v1::Finding& f) {
  return f.not_measured() ? "not_measured" : SeverityName(f.severity());
}

// The findings table's order and data-rank: outcome_order.h's badness.
int SeverityRank(const std::string& key) { return OutcomeBadness(key); }

std::string SeverityClass(const std::string& key) {
  if (key == "warn") return "warn";
  if (key == "fail" || key == "critical") return "fail";
  return "nm";
}

// Identical findings on several nodes become one row with the node list.
struct FindingRow {
  const v1::Finding* f;
  std::vector<std::string> nodes;  // each node once, in first-seen order
  int findings = 0;                // findings in the row (a node may have several)
  bool simulated = false;
};

std::vector<FindingRow> GroupFindings(const v1::Scorecard& card) {
  std::map<std::string, size_t> index;
  std::vector<FindingRow> rows;
  for (const auto& f : card.findings()) {
    std::string key = absl::StrCat(SeverityKey(f), "\x1f", f.check_id(), "\x1f", f.category(),
                                   "\x1f", f.subject(), "\x1f", f.title(), "\x1f", f.detail(),
                                   "\x1f", f.action(), "\x1f", absl::StrJoin(f.evidence(), "\x1e"),
                                   "\x1f", absl::StrJoin(f.links(), "\x1e"));
    auto [it, inserted] = index.emplace(std::move(key), rows.size());
    if (inserted) rows.push_back({&f, {}, 0, false});
    FindingRow& r = rows[it->second];
    ++r.findings;
    // The same finding from several tasks of one node (one per entry that
    // could not run there) names the node once.
    const std::string node = LabelValue(f.labels(), "node");
    if (!node.empty() && std::find(r.nodes.begin(), r.nodes.end(), node) == r.nodes.end()) {
      r.nodes.push_back(node);
    }
    r.simulated = r.simulated || f.simulated();
  }
  std::stable_sort(rows.begin(), rows.end(), [](const FindingRow& a, const FindingRow& b) {
    return SeverityRank(SeverityKey(*a.f)) > SeverityRank(SeverityKey(*b.f));
  });
  return rows;
}

void Findings(const v1::Scorecard& card, std::string* out) {
  absl::StrAppend(out, "<h2 id=\"findings-section\">Findings</h2>\n");
  if (card.findings().empty()) {
    absl::StrAppend(out, "<p>No findings.</p>\n");
    return;
  }
  const std::vector<FindingRow> rows = GroupFindings(card);
  absl::StrAppend(out, "<p>", card.findings_size(), " findings in ", rows.size(),
                  " rows (identical findings on several nodes share a row). Filter with the "
                  "controls or the address, e.g. <code>#filter=severity:critical</code>, "
                  "<code>#filter=category:security,node:node-2</code>. "
                  "<span id=\"findings-shown\"></span></p>\n");
  absl::StrAppend(
      out,
      "<div class=\"filters\" id=\"findings-filters\" hidden><label>Severity <select "
      "id=\"f-severity\"><option value=\"\">any</option>");
  for (const char* s : {"critical", "fail", "warn", "info", "not_measured"}) {
    absl::StrAppend(out, "<option value=\"", s, "\">", OutcomeLabel(s), "</option>");
  }
  absl::StrAppend(out, "</select></label><label>Category <select id=\"f-category\"><option "
                       "value=\"\">any</option>");
  std::set<std::string> cats;
  for (const auto& f : card.findings()) cats.insert(f.category());
  for (const auto& c : cats) {
    absl::StrAppend(out, "<option value=\"", H(c), "\">", H(c), "</option>");
  }
  absl::StrAppend(out, "</select></label><label>Node <input id=\"f-node\" size=\"16\" "
                       "placeholder=\"exact node name\"></label></div>\n");
  absl::StrAppend(out, "<table id=\"findings\">\n<thead><tr><th data-sort=\"severity\">Severity"
                       "</th><th data-sort=\"node\">Node</th><th data-sort=\"subject\">Subject"
                       "</th><th data-sort=\"category\">Category</th><th>Finding (a click: detail, evidence, "
                       "links)</th><th>Action</th></tr></thead>\n<tbody>\n");
  for (const auto& row : rows) {
    const v1::Finding& f = *row.f;
    const std::string sev = SeverityKey(f);
    std::vector<std::string> links;
    const std::string advisory = LabelValue(f.labels(), "advisory");
    for (const auto& l : f.links()) links.push_back(Link(l, links.empty() ? advisory : ""));
    // The title at a glance; the detail and evidence (CVE paragraphs,
    // per-GPU lines) folded under it, a click away.
    const bool folded = !f.detail().empty() || !f.evidence().empty() || !f.links().empty();
    std::string text = absl::StrCat(folded ? "<details><summary>" : "", "<strong>", H(f.title()),
                                    "</strong>", folded ? "</summary>" : "");
    if (!f.detail().empty()) absl::StrAppend(&text, H(Clip(f.detail())));
    if (!f.evidence().empty()) {
      absl::StrAppend(&text, "<ul class=\"ev\">");
      int shown = 0;
      for (const auto& full : f.evidence()) {
        if (shown++ == kMaxEvidenceLines) {
          absl::StrAppend(&text, "<li>\u2026 ", f.evidence_size() - kMaxEvidenceLines,
                          " more evidence lines in the JSON scorecard</li>");
          break;
        }
        const std::string e = Clip(full);
        if (e.find('\n') == std::string::npos) {
          absl::StrAppend(&text, "<li>", H(e), "</li>");
        } else {
          absl::StrAppend(&text, "<li><pre>", H(e), "</pre></li>");
        }
      }
      absl::StrAppend(&text, "</ul>");
    }
    if (!links.empty()) absl::StrAppend(&text, "<p>", absl::StrJoin(links, "<br>"), "</p>");
    if (folded) absl::StrAppend(&text, "</details>");
    absl::StrAppend(&text, folded ? "" : "<br>", "<code>", H(f.check_id()), "</code>",
                    row.simulated ? " <span class=\"sim\">(simulated)</span>" : "");
    std::string nodes_cell =
        row.nodes.size() <= 1 ? (row.nodes.empty() ? "" : H(row.nodes[0]))
                              : absl::StrCat(row.nodes.size(), " nodes: ", NodeList(row.nodes));
    if (row.findings > static_cast<int>(std::max<size_t>(row.nodes.size(), 1))) {
      absl::StrAppend(&nodes_cell, " (", row.findings, " findings)");
    }
    absl::StrAppend(out, "<tr data-severity=\"", sev, "\" data-rank=\"", SeverityRank(sev),
                    "\" data-category=\"", H(f.category()), "\" data-nodes=\"",
                    H(absl::StrJoin(row.nodes, "|")), "\"><td class=\"k\"><span class=\"",
                    SeverityClass(sev), "\">", H(OutcomeLabel(sev)), "</span></td><td>",
                    nodes_cell, "</td><td>", H(f.subject()), "</td><td class=\"k\">", H(f.category()),
                    "</td><td>", text, "</td><td>", H(f.action()), "</td></tr>\n");
  }
  absl::StrAppend(out, "</tbody></table>\n");
}

// `text` with every run of digits (and the dots between them) as '#'.
std::string NumbersOut(const std::string& text) {
  std::string out;
  bool in_number = false;
  for (char ch : text) {
    const bool digit = ch >= '0' && ch <= '9';
    if (digit || (in_number && ch == '.')) {
      if (!in_number) out.push_back('#');
      in_number = true;
    } else {
      in_number = false;
      out.push_back(ch);
    }
  }
  return out;
}

void NodeSections(const v1::Scorecard& card,
                  const std::vector<std::pair<std::string, std::vector<std::string>>>& reasons,
                  std::string* out) {
  absl::StrAppend(out, "<h2 id=\"nodes\">Nodes</h2>\n");
  std::map<std::string, size_t> reason_index;
  for (size_t i = 0; i < reasons.size(); ++i) reason_index[reasons[i].first] = i;
  const bool inline_reasons = card.nodes_size() <= kInlineReasonsUpTo;
  const bool compact = !inline_reasons;
  std::map<std::string, std::vector<const v1::Measurement*>> figures;
  for (const auto& m : card.measurements()) {
    auto& v = figures[LabelValue(m.labels(), "node")];
    if (static_cast<int>(v.size()) < kFiguresPerNode) v.push_back(&m);
  }
  std::map<std::string, std::vector<const v1::Finding*>> node_findings;
  for (const auto& f : card.findings()) node_findings[LabelValue(f.labels(), "node")].push_back(&f);
  for (const auto& n : card.nodes()) {
    absl::StrAppend(out, "<section class=\"node\" id=\"", NodeAnchor(n.node()), "\">\n<h3>",
                    H(n.node()), " <span class=\"", OutcomeClass(n.verdict()), "\">",
                    H(n.verdict()), "</span></h3>\n");
    if (!n.reasons().empty()) {
      // Many nodes: reasons of this node that differ only in their numbers
      // ("gpu:3 ... 696.5 TFLOP/s") are shown once, with how many are like it.
      std::map<std::string, int> like;
      if (compact) {
        for (const auto& r : n.reasons()) like[NumbersOut(r)]++;
      }
      std::set<std::string> shown_like;
      std::vector<std::string> items;
      for (const auto& r : n.reasons()) {
        if (compact) {
          const std::string key = NumbersOut(r);
          if (like[key] > 2) {
            if (!shown_like.insert(key).second) continue;
            items.push_back(absl::StrCat("<li>", H(Clip(r)), " <em>(and ", like[key] - 1,
                                         " more like it on this node, differing in numbers; "
                                         "the JSON scorecard has each)</em></li>"));
            continue;
          }
        }
        const size_t i = reason_index[r];
        const size_t shared = reasons[i].second.size();
        if (inline_reasons || shared == 1) {
          items.push_back(absl::StrCat("<li>", H(Clip(r)), "</li>"));
        } else {
          items.push_back(absl::StrCat("<li><a href=\"#reason-", i + 1, "\">reason ", i + 1,
                                       "</a> (shared by ", shared, " nodes)</li>"));
        }
      }
      // The worst first (scorecard.cc sorts them); beyond kReasonsShown folded.
      absl::StrAppend(out, "<ul>");
      const bool fold = items.size() > static_cast<size_t>(kReasonsShown) + 1;
      for (size_t j = 0; j < items.size(); ++j) {
        if (fold && j == static_cast<size_t>(kReasonsShown)) {
          absl::StrAppend(out, "</ul><details><summary>", items.size() - kReasonsShown,
                          " more reasons</summary><ul>");
        }
        absl::StrAppend(out, items[j]);
      }
      absl::StrAppend(out, "</ul>", fold ? "</details>" : "", "\n");
    }
    if (!n.history().empty()) {
      absl::StrAppend(out, "<p>History (not judged):</p><ul>");
      for (const auto& h : n.history()) absl::StrAppend(out, "<li>", H(h), "</li>");
      absl::StrAppend(out, "</ul>\n");
    }
    if (auto it = node_findings.find(n.node()); it != node_findings.end()) {
      const auto& fs = it->second;
      // Folded: the reasons above say what matters; a click lists them.
      absl::StrAppend(out, "<details><summary>", fs.size(), " finding", fs.size() == 1 ? "" : "s",
                      "</summary><p><a href=\"#filter=node:", H(n.node()),
                      "\">the findings table, filtered</a></p><ul>");
      for (size_t i = 0; i < fs.size() && i < kFindingsPerNode; ++i) {
        const std::string sev = SeverityKey(*fs[i]);
        absl::StrAppend(out, "<li><span class=\"", SeverityClass(sev), "\">", H(OutcomeLabel(sev)),
                        "</span> ", H(Clip(fs[i]->title())), " <code>", H(fs[i]->check_id()),
                        "</code></li>");
      }
      if (fs.size() > kFindingsPerNode) {
        absl::StrAppend(out, "<li>\u2026 ", fs.size() - kFindingsPerNode, " more</li>");
      }
      absl::StrAppend(out, "</ul></details>\n");
    }
    absl::StrAppend(out, "<details><summary>Inventory, tasks and figures</summary>\n");
    if (!n.inventory().empty()) {
      std::map<std::string, std::string> inv(n.inventory().begin(), n.inventory().end());
      absl::StrAppend(out, "<table class=\"inv\">");
      for (const auto& [k, v] : inv) {
        absl::StrAppend(out, "<tr><th>", H(k), "</th><td>", H(v), "</td></tr>");
      }
      absl::StrAppend(out, "</table>\n");
    }
    // Many nodes: tasks that completed at their first attempt without a
    // message are one line; the others keep their row.
    std::vector<const v1::TaskSummary*> rows;
    std::vector<std::string> plain;
    for (const auto& t : n.tasks()) {
      if (compact && t.state() == "completed" && t.attempt() <= 1 && t.message().empty() &&
          t.stderr_tail().empty()) {
        plain.push_back(absl::StrCat(H(t.name().empty() ? t.suite() : t.name()), " (",
                                     Counted(t.records(), "record", "records"), ")"));
      } else {
        rows.push_back(&t);
      }
    }
    if (!plain.empty()) {
      absl::StrAppend(out, "<p>", plain.size(), " task", plain.size() == 1 ? "" : "s",
                      " completed at the first attempt: ", absl::StrJoin(plain, ", "), "</p>\n");
    }
    if (n.tasks().empty()) {
      absl::StrAppend(out, "<p>No tasks.</p>\n");
    } else if (!rows.empty()) {
      absl::StrAppend(out, "<table>\n<tr><th>Task</th><th>Suite</th><th>State</th><th>Exit "
                           "code</th><th>Attempt</th><th>Records</th><th>Message</th></tr>\n");
      for (const auto* tp : rows) {
        const v1::TaskSummary& t = *tp;
        absl::StrAppend(out, "<tr><td>", H(t.task_id()), "</td><td>",
                        H(t.name().empty() ? t.suite() : t.name()), "</td><td>", H(TaskStateShown(t)),
                        "</td><td>", t.exit_code(), "</td><td>", t.attempt(), "</td><td>",
                        t.records(), "</td><td>", H(t.message()));
        if (!t.stderr_tail().empty()) {
          absl::StrAppend(out, "<pre>", H(t.stderr_tail()), "</pre>");
        }
        absl::StrAppend(out, "</td></tr>\n");
      }
      absl::StrAppend(out, "</table>\n");
    }
    if (auto it = figures.find(n.node()); it != figures.end()) {
      absl::StrAppend(out, "<table>\n<tr><th>Suite</th><th>Metric</th><th>Value</th><th>Labels"
                           "</th></tr>\n");
      for (const auto* m : it->second) {
        std::map<std::string, std::string> labels(m->labels().begin(), m->labels().end());
        labels.erase("node");
        absl::StrAppend(out, "<tr><td>", H(m->suite()), "</td><td>", H(m->metric()), "</td><td>",
                        H(FormatValue(m->value(), m->unit())),
                        m->simulated() ? " <span class=\"sim\">(simulated)</span>" : "",
                        "</td><td>", H(absl::StrJoin(labels, ", ", absl::PairFormatter("="))),
                        "</td></tr>\n");
      }
      absl::StrAppend(out, "</table>\n");
    }
    absl::StrAppend(out, "</details>\n</section>\n");
  }
}

}  // namespace

absl::string_view HtmlScript() { return kScript; }

std::string RenderHtml(const v1::Scorecard& card) {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  absl::StrAppend(&out, "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
                  "<title>cmax scorecard ", H(card.run_id()), "</title>\n<style>", kStyle,
                  "</style>\n</head>\n<body>\n");
  const auto reasons = GroupedReasons(card);
  // The verdict first (tier, categories, nodes, findings), then the
  // evidence behind it (charts, cost, barrier starts, rules, each node).
  Header(card, &out);
  Overview(card, &out);
  Categories(card, &out);
  Grid(card, &out);
  Verdicts(card, reasons, &out);
  Findings(card, &out);
  Charts(card, &out);
  out += RenderCostHtml(card);  // cost section (reports/cost.h)
  BarrierStarts(card, &out);
  Rules(card, &out);
  NodeSections(card, reasons, &out);
  absl::StrAppend(&out, "<p id=\"cmax-timing\"></p>\n<script>", HtmlScript(),
                  "</script>\n</body>\n</html>\n");
  return out;
}

}  // namespace cmax::reports
