// What a user reads in the three renderings of a scorecard.
#include <google/protobuf/util/json_util.h>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "reports/judge_util.h"
#include "reports/scorecard.h"
#include "tests/reports/scorecard_test_util.h"

namespace cmax::reports {
namespace {

using testing::CleanHostcheckRun;
using testing::Find;
using testing::Meas;
using testing::Task;

RunData RunWithProblems() {
  RunData d = CleanHostcheckRun();
  auto f = Find("node-2", "audit", "audit.runc", v1::SEVERITY_FAIL, "security", "node",
                "<script>alert(\"x\")</script> runc 1.1.11 & older",
                "CVE-2024-21626 is fixed in 1.1.12");
  f.mutable_record()->mutable_finding()->add_links("https://nvd.nist.gov/vuln/detail/CVE-2024-21626");
  f.mutable_record()->mutable_finding()->add_links("javascript:alert(1)");
  f.mutable_record()->mutable_finding()->set_action("upgrade runc to 1.1.12 or later");
  d.records.push_back(f);
  d.tasks.push_back(Task("node-3", "selftest", v1::TASK_FAILED, 139, "killed by signal 11",
                         "Segmentation fault at <0x0>\n`boom`"));
  return d;
}

// A failed advisory finding as the audit writes it: the advisory's page
// first, hostile URLs among the references, the upgrade page last.
RunData RunWithAdvisory() {
  RunData d = CleanHostcheckRun();
  auto f = Find("node-2", "audit", "audit.advisory.NVIDIA-5659", v1::SEVERITY_CRITICAL, "security",
                "component:container_toolkit", "FAIL: NVIDIA Container Toolkit: NVIDIA-5659",
                "found 1.17.7; required >= 1.17.8");
  v1::Finding* finding = f.mutable_record()->mutable_finding();
  finding->add_links("https://nvidia.custhelp.com/app/answers/detail/a_id/5659");
  finding->add_links("https://evil.example/\"onmouseover=\"alert(1)");
  finding->add_links("javascript:alert(document.cookie)");
  finding->add_links("https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/");
  (*finding->mutable_labels())["advisory"] = "NVIDIA-5659";
  d.records.push_back(f);
  return d;
}

TEST_CASE("the advisory's page is linked by its id, hostile URLs are not linked",
          "[render]") {
  const v1::Scorecard card = BuildScorecard(RunWithAdvisory());
  const std::string md = RenderMarkdown(card);
  CHECK(absl::StrContains(md, "[NVIDIA-5659](https://nvidia.custhelp.com/app/answers/detail/a_id/5659)"));
  CHECK(absl::StrContains(md, "[https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/]"
                              "(https://docs.nvidia.com/datacenter/cloud-native/container-toolkit/)"));
  // The Security section's rule links the same pages.
  CHECK(absl::StrContains(md, "- Links: [https://nvidia.custhelp.com/app/answers/detail/a\\_id/5659]"
                              "(https://nvidia.custhelp.com/app/answers/detail/a_id/5659)"));
  CHECK_FALSE(absl::StrContains(md, "](https://evil"));
  CHECK_FALSE(absl::StrContains(md, "](javascript:"));

  const std::string html = RenderHtml(card);
  CHECK(absl::StrContains(html, "<a href=\"https://nvidia.custhelp.com/app/answers/detail/a_id/5659\" "
                                "rel=\"noopener noreferrer\">NVIDIA-5659</a>"));
  CHECK(absl::StrContains(html, "<a href=\"https://docs.nvidia.com/datacenter/cloud-native/"
                                "container-toolkit/\""));
  CHECK_FALSE(absl::StrContains(html, "href=\"https://evil"));
  CHECK_FALSE(absl::StrContains(html, "href=\"javascript:"));
  CHECK_FALSE(absl::StrContains(html, "\"onmouseover"));
  CHECK(absl::StrContains(html, "https://evil.example/&quot;onmouseover=&quot;alert(1)"));
}

TEST_CASE("only http(s) URLs with a host and no quotes, spaces or controls are links",
          "[render]") {
  CHECK(IsSafeWebLink("https://github.com/opencontainers/runc/security/advisories/GHSA-xr7r"));
  CHECK(IsSafeWebLink("HTTP://example.com/a?b=c&d=(e)"));
  CHECK_FALSE(IsSafeWebLink("javascript:alert(1)"));
  CHECK_FALSE(IsSafeWebLink("https://"));
  CHECK_FALSE(IsSafeWebLink("https:///etc/passwd"));
  CHECK_FALSE(IsSafeWebLink("https://a.example/\"x"));
  CHECK_FALSE(IsSafeWebLink("https://a.example/'x"));
  CHECK_FALSE(IsSafeWebLink("https://a.example/ x"));
  CHECK_FALSE(IsSafeWebLink("https://a.example/<x>"));
  CHECK_FALSE(IsSafeWebLink("https://a.example/\nx"));
  CHECK_FALSE(IsSafeWebLink("data:text/html,hi"));
}

TEST_CASE("JSON has the scorecard fields by their proto names", "[render]") {
  const v1::Scorecard card = BuildScorecard(RunWithProblems());
  const std::string json = RenderJson(card);
  for (const char* key : {"\"run_id\"", "\"plan\"", "\"started\"", "\"finished\"", "\"tier\"",
                          "\"tier_reason\"", "\"categories\"", "\"nodes\"", "\"findings\"",
                          "\"measured\": false", "\"verdict\""}) {
    INFO(key);
    CHECK(absl::StrContains(json, key));
  }
  v1::Scorecard back;
  REQUIRE(google::protobuf::util::JsonStringToMessage(json, &back).ok());
  CHECK(back.run_id() == "run-1");
  CHECK(back.categories_size() == 8);
  CHECK(back.categories(4).name() == "Security");
  CHECK(back.categories(4).grade() == "D");  // its one measured node fails
  CHECK(back.started() == "2025-11-29T21:17:45.123Z");
}

TEST_CASE("Markdown shows the header, category table, nodes, rules, findings, tasks",
          "[render]") {
  const v1::Scorecard card = BuildScorecard(RunWithProblems());
  const std::string md = RenderMarkdown(card);
  CHECK(absl::StrContains(md, "# cmax scorecard: run-1"));
  CHECK(absl::StrContains(md, "| Plan | quick |"));
  CHECK(absl::StrContains(md, "| Started | 2025-11-29T21:17:45.123Z |"));
  CHECK(absl::StrContains(md, "| Tier | **" + card.tier() + "** |"));
  CHECK(absl::StrContains(md, "| Category | Grade | Evaluated on | Summary |\n|---|---|---|---|\n"));
  CHECK(absl::StrContains(md, "| Compute | not measured | 0 of 3 nodes | not measured"));
  CHECK(absl::StrContains(md, "| Security | **D** | 1 of 3 nodes | 1 failure: node-2: "));
  CHECK(absl::StrContains(md, "| Tier | **not rated** |"));
  CHECK(absl::StrContains(md, "| Missing for a tier | Compute: the plan has no suite of this "
                              "category<br>"));
  // No tier of the measured part beside "not rated": it read as a rating.
  CHECK_FALSE(absl::StrContains(md, "Measured part"));
  CHECK_FALSE(absl::StrContains(md, "Bronze"));
  CHECK(absl::StrContains(md, "evaluated on 1 of 3 nodes"));
  CHECK(absl::StrContains(md, "| node-2 | **FAIL** | Security fail: "));
  CHECK(absl::StrContains(md, "### Security: D"));
  // Markup in data is escaped; web links are clickable, others are not.
  CHECK_FALSE(absl::StrContains(md, "<script>"));
  CHECK(absl::StrContains(md, "\\<script\\>"));
  CHECK(absl::StrContains(md, "[https://nvd.nist.gov/vuln/detail/CVE-2024-21626]"
                     "(https://nvd.nist.gov/vuln/detail/CVE-2024-21626)"));
  CHECK_FALSE(absl::StrContains(md, "](javascript:"));
  CHECK(absl::StrContains(md, "upgrade runc to 1.1.12 or later"));
  // Task table with exit code, and the stderr tail in a code block whose
  // fence outlasts the backticks inside.
  CHECK(absl::StrContains(md, "### node-3"));
  CHECK(absl::StrContains(md, "| selftest | failed | 139 |"));
  CHECK(absl::StrContains(md, "```text\nSegmentation fault at <0x0>\n`boom`\n```"));
  CHECK_FALSE(absl::StrContains(md, "SIMULATED"));
}

TEST_CASE("HTML is self-contained and escapes everything", "[render]") {
  const v1::Scorecard card = BuildScorecard(RunWithProblems());
  const std::string html = RenderHtml(card);
  CHECK(absl::StrContains(html, "<!DOCTYPE html>"));
  CHECK(absl::StrContains(html, "<style>"));
  // One inline script (the findings filter), nothing loaded from elsewhere.
  CHECK_FALSE(absl::StrContains(html, "<script src"));
  CHECK_FALSE(absl::StrContains(html, "<script>alert"));
  CHECK_FALSE(absl::StrContains(html, "<link"));
  CHECK_FALSE(absl::StrContains(html, "src="));
  CHECK(absl::StrContains(html, "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; runc 1.1.11 &amp; older"));
  CHECK(absl::StrContains(html, "<a href=\"https://nvd.nist.gov/vuln/detail/CVE-2024-21626\""));
  CHECK_FALSE(absl::StrContains(html, "href=\"javascript:"));
  CHECK(absl::StrContains(html, "<pre>Segmentation fault at &lt;0x0&gt;\n`boom`</pre>"));
  CHECK(absl::StrContains(html, "<th>Category</th><th>Grade</th>"));
  CHECK(absl::StrContains(
      html, "<td class=\"k\">Security</td><td class=\"k\"><span class=\"badge gD\">D</span>"));
  // Every category has its row and its column in the nodes-by-category grid,
  // Orchestration and Monitoring included (not measured here).
  for (const char* name : {"Orchestration", "Monitoring"}) {
    INFO(name);
    CHECK(absl::StrContains(html, std::string("<td class=\"k\">") + name + "</td><td class=\"k\">"));
    CHECK(absl::StrContains(html, std::string(">") + name + "</text>"));
  }
  CHECK(absl::StrContains(html, "<span class=\"tier\">" + card.tier() + "</span>"));
  CHECK(absl::StrContains(html, "<th>Missing for a tier</th><td><ul><li>Compute: the plan has no "
                                "suite of this category</li>"));
  CHECK(absl::StrContains(html, "<td class=\"k\">Security</td><td class=\"k\"><span "
                                "class=\"badge gD\">D</span></td><td class=\"k\">1 of 3 nodes</td>"));
  CHECK_FALSE(absl::StrContains(html, "SIMULATED"));
}

TEST_CASE("renderings show history, barrier starts and not-measured findings", "[render]") {
  RunData d = RunWithProblems();
  v1::ExportedRecord nm = Find("node-1", "gemm", "gpu.no_driver", v1::SEVERITY_INFO, "compute",
                               "node", "no GPU driver", "libcuda.so.1 not found");
  nm.mutable_record()->mutable_finding()->set_not_measured(true);
  nm.set_attempt(2);  // the task's last attempt (below)
  d.records.push_back(nm);
  v1::TaskInfo retried = Task("node-1", "gemm", v1::TASK_COMPLETED);
  retried.set_attempt(2);
  auto* a = retried.add_earlier_attempts();
  a->set_attempt(1);
  a->set_state(v1::TASK_LOST);
  d.tasks.push_back(retried);
  v1::SuiteSpec* s = d.plan.add_suites();
  s->set_suite("burnin");
  s->set_name("burnin-fleet");
  s->set_scope(v1::SCOPE_BARRIER);
  v1::TaskInfo fleet = Task("node-1,node-2,node-3", "burnin", v1::TASK_COMPLETED);
  fleet.set_suite_index(d.plan.suites_size() - 1);
  d.tasks.push_back(fleet);
  const v1::Scorecard card = BuildScorecard(d);
  const std::string md = RenderMarkdown(card);
  CHECK(absl::StrContains(md, "history (not judged): gemm: attempt 1 lost, attempt 2 completed"));
  CHECK(absl::StrContains(md, "## Barrier starts"));
  CHECK(absl::StrContains(md, "| burnin-fleet | 0 | 0 ms |"));
  CHECK(absl::StrContains(md, "| NOT MEASURED | node-1 |"));
  const std::string html = RenderHtml(card);
  CHECK(absl::StrContains(html, "<p>History (not judged):</p><ul><li>gemm: attempt 1 lost"));
  CHECK(absl::StrContains(html, "<h2>Barrier starts</h2>"));
  CHECK(absl::StrContains(html, "<span class=\"nm\">not measured</span></td><td>node-1</td>"));
}

TEST_CASE("simulated data shows a banner in every rendering", "[render]") {
  RunData d = CleanHostcheckRun();
  auto rec = Meas("node-1", "gemm", "gemm_tflops", 790, "TFLOP/s", {{"gpu", "0"}});
  rec.mutable_record()->mutable_measurement()->set_simulated(true);
  d.records.push_back(rec);
  const v1::Scorecard card = BuildScorecard(d);
  REQUIRE(card.simulated());
  const std::string banner = kSimulatedBanner;
  CHECK(banner == "SIMULATED DATA \u2014 not a measurement");
  const std::string json = RenderJson(card);
  CHECK(absl::StrContains(json, "\"simulated\": true"));
  CHECK(absl::StrContains(json, banner));
  const std::string md = RenderMarkdown(card);
  CHECK(absl::StrContains(md, "> **\u26a0 " + banner + "**"));
  CHECK(md.find(banner) < md.find("## Categories"));  // at the top
  const std::string html = RenderHtml(card);
  CHECK(absl::StrContains(html, "<div class=\"banner\">\u26a0 " + banner));
  CHECK(html.find(banner) < html.find("<h2>Categories</h2>"));
}

}  // namespace
}  // namespace cmax::reports

namespace cmax::reports {
namespace {

TEST_CASE("a task that could not run reads 'could not run' in every format, never failed",
          "[render]") {
  RunData d = RunWithProblems();
  // A GPU suite on a CPU-only node, and a retried attempt that could not run.
  v1::TaskInfo t;
  t.set_task_id("run-1.9.node-1");
  t.set_run_id("run-1");
  t.set_suite("gemm");
  t.set_node("node-1");
  t.set_state(v1::TASK_FAILED);
  t.set_exit_code(2);
  t.set_attempt(2);
  t.set_message("could not run: no GPU driver");
  auto* a = t.add_earlier_attempts();
  a->set_attempt(1);
  a->set_state(v1::TASK_FAILED);
  a->set_exit_code(2);
  a->set_message("no GPU driver");
  d.tasks.push_back(t);
  const v1::Scorecard card = BuildScorecard(d);
  const std::string md = RenderMarkdown(card);
  const std::string html = RenderHtml(card);
  INFO(md);
  CHECK(absl::StrContains(md, "| run-1.9.node-1 | gemm | could not run | 2 |"));
  CHECK(absl::StrContains(html, "<td>gemm</td><td>could not run</td><td>2</td>"));
  CHECK(absl::StrContains(md, "attempt 1 could not run (exit code 2): no GPU driver"));
  CHECK_FALSE(absl::StrContains(md, "attempt 1 failed (exit code 2)"));
  CHECK_FALSE(absl::StrContains(md, "| gemm | failed | 2 |"));
}

}  // namespace
}  // namespace cmax::reports
