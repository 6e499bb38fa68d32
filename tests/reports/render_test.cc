// What a user reads in the three renderings of a scorecard.
#include <google/protobuf/util/json_util.h>

#include <catch2/catch.hpp>

#include "reports/scorecard.h"
#include "tests/reports/scorecard_test_util.h"

namespace cmax::reports {
namespace {

using testing::CleanHostcheckRun;
using testing::Find;
using testing::Meas;
using testing::Task;

bool Contains(const std::string& hay, const std::string& needle) {
  return hay.find(needle) != std::string::npos;
}

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

TEST_CASE("JSON has the scorecard fields by their proto names", "[render]") {
  const v1::Scorecard card = BuildScorecard(RunWithProblems());
  const std::string json = RenderJson(card);
  for (const char* key : {"\"run_id\"", "\"plan\"", "\"started\"", "\"finished\"", "\"tier\"",
                          "\"tier_reason\"", "\"categories\"", "\"nodes\"", "\"findings\"",
                          "\"measured\": false", "\"verdict\""}) {
    INFO(key);
    CHECK(Contains(json, key));
  }
  v1::Scorecard back;
  REQUIRE(google::protobuf::util::JsonStringToMessage(json, &back).ok());
  CHECK(back.run_id() == "run-1");
  CHECK(back.categories_size() == 6);
  CHECK(back.categories(4).name() == "Security");
  CHECK(back.categories(4).grade() == "C");
  CHECK(back.started() == "2025-11-29T21:17:45.123Z");
}

TEST_CASE("Markdown shows the header, category table, nodes, rules, findings, tasks",
          "[render]") {
  const v1::Scorecard card = BuildScorecard(RunWithProblems());
  const std::string md = RenderMarkdown(card);
  CHECK(Contains(md, "# cmax scorecard: run-1"));
  CHECK(Contains(md, "| Plan | quick |"));
  CHECK(Contains(md, "| Started | 2025-11-29T21:17:45.123Z |"));
  CHECK(Contains(md, "| Tier | **" + card.tier() + "** |"));
  CHECK(Contains(md, "| Category | Grade | Summary |\n|---|---|---|\n"));
  CHECK(Contains(md, "| Compute | not measured | not measured"));
  CHECK(Contains(md, "| Security | **C** | 1 node measured; 1 failure"));
  CHECK(Contains(md, "| node-2 | **FAIL** | Security fail: "));
  CHECK(Contains(md, "### Security: C"));
  // Markup in data is escaped; web links are clickable, others are not.
  CHECK_FALSE(Contains(md, "<script>"));
  CHECK(Contains(md, "\\<script\\>"));
  CHECK(Contains(md, "[https://nvd.nist.gov/vuln/detail/CVE-2024-21626]"
                     "(https://nvd.nist.gov/vuln/detail/CVE-2024-21626)"));
  CHECK_FALSE(Contains(md, "](javascript:"));
  CHECK(Contains(md, "upgrade runc to 1.1.12 or later"));
  // Task table with exit code, and the stderr tail in a code block whose
  // fence outlasts the backticks inside.
  CHECK(Contains(md, "### node-3"));
  CHECK(Contains(md, "| selftest | failed | 139 |"));
  CHECK(Contains(md, "```text\nSegmentation fault at <0x0>\n`boom`\n```"));
  CHECK_FALSE(Contains(md, "SIMULATED"));
}

TEST_CASE("HTML is self-contained and escapes everything", "[render]") {
  const v1::Scorecard card = BuildScorecard(RunWithProblems());
  const std::string html = RenderHtml(card);
  CHECK(Contains(html, "<!DOCTYPE html>"));
  CHECK(Contains(html, "<style>"));
  CHECK_FALSE(Contains(html, "<script"));
  CHECK_FALSE(Contains(html, "<link"));
  CHECK_FALSE(Contains(html, "src="));
  CHECK(Contains(html, "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; runc 1.1.11 &amp; older"));
  CHECK(Contains(html, "<a href=\"https://nvd.nist.gov/vuln/detail/CVE-2024-21626\""));
  CHECK_FALSE(Contains(html, "href=\"javascript:"));
  CHECK(Contains(html, "<pre>Segmentation fault at &lt;0x0&gt;\n`boom`</pre>"));
  CHECK(Contains(html, "<th>Category</th><th>Grade</th>"));
  CHECK(Contains(html, "<td>Security</td><td><span class=\"badge gC\">C</span>"));
  CHECK(Contains(html, "<span class=\"tier\">" + card.tier() + "</span>"));
  CHECK_FALSE(Contains(html, "SIMULATED"));
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
  CHECK(Contains(json, "\"simulated\": true"));
  CHECK(Contains(json, banner));
  const std::string md = RenderMarkdown(card);
  CHECK(Contains(md, "> **\u26a0 " + banner + "**"));
  CHECK(md.find(banner) < md.find("## Categories"));  // at the top
  const std::string html = RenderHtml(card);
  CHECK(Contains(html, "<div class=\"banner\">\u26a0 " + banner));
  CHECK(html.find(banner) < html.find("<h2>Categories</h2>"));
}

}  // namespace
}  // namespace cmax::reports
