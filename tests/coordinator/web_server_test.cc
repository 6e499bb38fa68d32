// The web view's server (coordinator/web/web_server.h) over a fake source and
// over a real core: who gets in (header, sign-in cookie, never a token in a
// URL), what the pages show and escape, scorecard files and the live poll.
#include "coordinator/web/web_server.h"

#include <arpa/inet.h>
#include <httplib.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/subprocess.h"
#include "coordinator/core.h"
#include "coordinator/remediation/fence.h"
#include "coordinator/web/pages.h"
#include "reports/history.h"
#include "reports/scorecard.h"
#include "tests/scratch_dir.h"

namespace cmax::coordinator::web {
namespace {

constexpr char kToken[] = "s3cret-token-for-the-web-test";

// The fault loop's answer for `node`, made by the real incident manager:
// n1 has one escalated incident whose check id and title carry markup;
// "many" (no run ever had it) has 25.
struct NoCore : remediation::IncidentHooks {
  int FleetSize() override { return 10; }
  bool Connected(const std::string&) override { return true; }
  int GpuCount(const std::string&) override { return 8; }
  bool SendAction(const std::string&, const v1::RemediationAction&) override { return true; }
  absl::StatusOr<std::string> StartVerifyRun(const std::string&, const std::string&) override {
    return absl::UnavailableError("no runs");
  }
  void Persist(const v1::RemediationIncident&) override {}
};

v1::RemediationStatus RealIncidents(const std::string& node) {
  constexpr int64_t kSec = 1'000'000'000;
  NoCore core;
  auto policy = remediation::ParsePolicy("mode: enforce\n", "test.yaml");
  REQUIRE(policy.ok());
  remediation::IncidentManager m(&core, *policy, remediation::MakeFencer(*policy));
  const int n = node == "many" ? 25 : node == "n1" ? 1 : 0;
  for (int i = 0; i < n; ++i) {
    v1::Finding f;
    f.set_check_id(n == 1 ? "watch.<script>alert(2)</script>" : absl::StrCat("watch.x", i));
    f.set_severity(v1::SEVERITY_FAIL);
    f.set_title("Xid 79 <img src=x onerror=alert(3)>");
    m.OnFinding(node, f, 1795996800 * kSec + i * 60 * kSec, 1795996802 * kSec + i * 60 * kSec);
  }
  return m.Status(node, /*include_closed=*/true);
}

// Runs r1 (completed, with a scorecard) and r2 (running); agents n1 and n2.
class FakeSource : public WebSource {
 public:
  absl::StatusOr<v1::ListAgentsResponse> Agents() override {
    v1::ListAgentsResponse r;
    auto* a = r.add_agents();
    a->set_node_name("n1");
    a->set_state("connected");
    auto* b = r.add_agents();
    b->set_node_name("n2<b>");
    b->set_state("busy");
    b->set_running_task("r2.0.n2");
    return r;
  }
  absl::StatusOr<v1::ListRunsResponse> Runs(int limit) override {
    last_limit = limit;
    v1::ListRunsResponse r;
    absl::MutexLock lock(&mu);
    *r.add_runs() = run2.run();
    *r.add_runs() = run1.run();
    return r;
  }
  absl::StatusOr<v1::GetRunResponse> Run(const std::string& id) override {
    absl::MutexLock lock(&mu);
    if (id == "r1") return run1;
    if (id == "r2") return run2;
    return absl::NotFoundError("no run '" + id + "'");
  }
  // n1: accepted, rejected (a reason with markup in it), accepted again,
  // with a TFLOP/s figure each time; peers p0-p3 for the fleet band.
  absl::StatusOr<v1::GetHistoryResponse> History(const std::string& node) override {
    // As the core answers when its history threads are full.
    if (node == "busy-node") return absl::ResourceExhaustedError("busy, retry: 2 running");
    std::vector<v1::NodeRunSummary> all;
    const int64_t hour = 3600ll * 1000000000;
    const char* verdicts[] = {"accept", "reject", "accept"};
    for (int i = 0; i < 3; ++i) {
      for (const std::string n : {"n1", "p0", "p1", "p2", "p3"}) {
        v1::NodeRunSummary s;
        s.set_run_id("r" + std::to_string(i));
        s.set_node(n);
        s.set_finished_unix_ns(1795996800ll * 1000000000 + i * 24 * hour);
        s.set_gpus(8);
        s.set_version(reports::kSummaryVersion);
        s.set_verdict(n == "n1" ? verdicts[i] : "accept");
        if (n == "n1" && i == 1) {
          auto* r = s.add_reasons();
          r->set_id("hostcheck.gpu_count");
          r->set_outcome("fail");
          r->set_text("expected 8 GPUs, found 7 <script>alert(1)</script>");
        }
        auto* f = s.add_figures();
        f->set_name("gemm_tflops_per_gpu");
        f->set_unit("TFLOP/s");
        f->set_value(n == "n1" ? 700 - 10 * i : 650 + 10 * (n[1] - '0'));
        all.push_back(s);
      }
    }
    v1::GetHistoryResponse resp;
    if (!node.empty()) {
      *resp.mutable_node() = reports::ComputeNodeHistory(node, all);
      if (resp.node().runs_size() == 0)
        return absl::NotFoundError("no run had node " + node);
    }
    *resp.mutable_fleet() = reports::ComputeReliability(all);
    return resp;
  }
  absl::StatusOr<v1::RemediationStatus> Remediation(const std::string& node) override {
    return RealIncidents(node);
  }
  FakeSource(const std::string& report_root) {
    run1.mutable_run()->set_run_id("r1");
    run1.mutable_run()->set_plan_name("quick");
    run1.mutable_run()->set_state("completed");
    run1.mutable_run()->set_report_dir(report_root + "/r1");
    auto* t = run1.add_tasks();
    t->set_task_id("r1.0.n1");
    t->set_suite("selftest");
    t->set_node("n1");
    t->set_state(v1::TASK_COMPLETED);
    run2.mutable_run()->set_run_id("r2");
    run2.mutable_run()->set_plan_name("<script>alert('x')</script>");
    run2.mutable_run()->set_state("running");
    // n0 runs, n1 crashed, n2 could not run.
    for (int i = 0; i < 3; ++i) {
      auto* u = run2.add_tasks();
      u->set_task_id("r2.0.n" + std::to_string(i));
      u->set_suite("selftest");
      u->set_name("sleepy");
      u->set_node("n" + std::to_string(i));
      u->set_state(i == 0 ? v1::TASK_RUNNING : v1::TASK_FAILED);
      if (i == 1) {
        u->set_exit_code(1);
        u->set_message("exited with code 1");
        u->set_stderr_tail("boom <img src=x onerror=alert(1)>");
      }
      if (i == 2) {
        u->set_exit_code(2);
        u->set_message("could not run");
      }
    }
  }
  // Marks r2's running task completed.
  void Advance() {
    absl::MutexLock lock(&mu);
    run2.mutable_tasks(0)->set_state(v1::TASK_COMPLETED);
  }
  absl::Mutex mu;
  v1::GetRunResponse run1 ABSL_GUARDED_BY(mu);
  v1::GetRunResponse run2 ABSL_GUARDED_BY(mu);
  int last_limit = 0;
};

struct Fixture {
  explicit Fixture(std::string token = kToken, ComparePage compare = nullptr,
                   std::string read_token = "", int64_t max_compare_bytes = 0) {
    std::filesystem::create_directories(dir.path + "/reports/r1");
    std::ofstream(dir.path + "/reports/r1/scorecard.html") << "<html>card r1</html>";
    std::ofstream(dir.path + "/reports/r1/scorecard.md") << "# card r1\n";
    std::ofstream(dir.path + "/reports/r1/scorecard.json")
        << R"({"runId":"r1","tier":"not rated"})";
    auto src = std::make_unique<FakeSource>(dir.path + "/reports");
    source = src.get();
    WebOptions o;
    o.listen = "127.0.0.1:0";
    o.token = token;
    o.read_token = read_token;
    o.report_root = dir.path + "/reports";
    o.compare_page = std::move(compare);
    if (max_compare_bytes > 0) o.max_compare_bytes = max_compare_bytes;
    auto s = WebServer::Start(std::move(o), std::move(src));
    INFO(s.status().ToString());
    REQUIRE(s.ok());
    server = std::move(*s);
    client = std::make_unique<httplib::Client>("127.0.0.1", server->port());
    client->set_read_timeout(10, 0);
  }
  httplib::Result Get(const std::string& path, const httplib::Headers& h = {}) {
    return client->Get(path.c_str(), h);
  }
  httplib::Headers Bearer() const {
    return {{"Authorization", std::string("Bearer ") + kToken}};
  }
  testing::ScratchDir dir;
  FakeSource* source = nullptr;
  std::unique_ptr<WebServer> server;
  std::unique_ptr<httplib::Client> client;
};

std::string SessionCookie(const httplib::Result& r) {
  std::string c = r->get_header_value("Set-Cookie");
  return c.substr(0, c.find(';'));
}

TEST_CASE("the web view answers 401 without the token and leaks nothing", "[web]") {
  Fixture f;
  auto page = f.Get("/");
  REQUIRE(page);
  CHECK(page->status == 401);
  CHECK(page->body.find("<form method=\"post\" action=\"/login\"") != std::string::npos);
  CHECK(page->body.find("n1") == std::string::npos);
  for (const char* path :
       {"/api/runs", "/api/agents", "/runs/r1", "/runs/r1/scorecard.json", "/api/runs/r2",
        "/compare?a=r1&b=r2"}) {
    auto r = f.Get(path);
    REQUIRE(r);
    INFO(path << ": " << r->body);
    CHECK(r->status == 401);
    // Nothing the server knows: plan names, states, nodes, scorecards.
    for (const char* secret : {"quick", "n1", "n2", "card r1", "alert", "sleepy", "boom",
                               "not rated", "could not run"}) {
      INFO(secret);
      CHECK(r->body.find(secret) == std::string::npos);
    }
  }
  auto wrong = f.Get("/api/runs", {{"Authorization", "Bearer not-the-token"}});
  REQUIRE(wrong);
  CHECK(wrong->status == 401);
}

TEST_CASE("the web view serves every page with the bearer header", "[web]") {
  Fixture f;
  auto index = f.Get("/", f.Bearer());
  REQUIRE(index);
  CHECK(index->status == 200);
  CHECK(index->body.find("href=\"/runs/r1\"") != std::string::npos);
  CHECK(index->body.find("n2&lt;b&gt;") != std::string::npos);
  CHECK(index->body.find("n2<b>") == std::string::npos);
  // Self-contained: nothing loaded from elsewhere.
  CHECK(index->body.find("src=\"http") == std::string::npos);
  CHECK(index->body.find("href=\"http") == std::string::npos);
  CHECK(index->get_header_value("Content-Security-Policy").find("default-src 'none'") !=
        std::string::npos);
  CHECK(f.source->last_limit == 200);
  // Only r1 has a scorecard: no comparison form for a single run.
  CHECK(index->body.find("action=\"/compare\"") == std::string::npos);
  auto runs = f.Get("/api/runs", f.Bearer());
  REQUIRE(runs);
  CHECK(runs->status == 200);
  CHECK(runs->get_header_value("Content-Type") == "application/json");
  CHECK(runs->body.find("\"run_id\":\"r2\"") != std::string::npos);
  auto agents = f.Get("/api/agents", f.Bearer());
  REQUIRE(agents);
  CHECK(agents->body.find("\"node_name\":\"n1\"") != std::string::npos);
}

// The CSP source a browser computes for an inline script's text.
std::string Sha256Source(const std::string& script) {
  unsigned char d[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(script.data(), script.size(), d, &n, EVP_sha256(), nullptr);
  return "'sha256-" + absl::Base64Escape(std::string(reinterpret_cast<char*>(d), n)) + "'";
}

// The text between the page's <script> and </script>.
std::string InlineScript(const std::string& page) {
  const size_t a = page.find("<script>");
  const size_t b = page.find("</script>", a);
  if (a == std::string::npos || b == std::string::npos) return "";
  return page.substr(a + 8, b - a - 8);
}

TEST_CASE("only the pages' own inline scripts may run: hashes, never 'unsafe-inline'",
          "[web]") {
  Fixture f;
  auto run = f.Get("/runs/r1", f.Bearer());
  auto card = f.Get("/runs/r1/scorecard.html", f.Bearer());
  REQUIRE(run);
  REQUIRE(card);
  REQUIRE(run->status == 200);
  const std::string csp = run->get_header_value("Content-Security-Policy");
  INFO(csp);
  const size_t at = csp.find("script-src ");
  REQUIRE(at != std::string::npos);
  const std::string scripts = csp.substr(at, csp.find(';', at) - at);
  CHECK(scripts.find("unsafe-inline") == std::string::npos);
  // The run page's script and the scorecard's, as the browser hashes them.
  const std::string run_script = InlineScript(run->body);
  REQUIRE_FALSE(run_script.empty());
  CHECK(scripts.find(Sha256Source(run_script)) != std::string::npos);
  if (card->status == 200 && !InlineScript(card->body).empty()) {
    CHECK(scripts.find(Sha256Source(InlineScript(card->body))) != std::string::npos);
  }
  CHECK(scripts.find(Sha256Source(std::string(cmax::reports::HtmlScript()))) !=
        std::string::npos);
  // Every page carries the same policy.
  auto index = f.Get("/", f.Bearer());
  REQUIRE(index);
  CHECK(index->get_header_value("Content-Security-Policy") == csp);
}

TEST_CASE("node and fleet history pages draw their charts and escape every text",
          "[web]") {
  Fixture f;
  auto node = f.Get("/nodes/n1", f.Bearer());
  REQUIRE(node);
  CHECK(node->status == 200);
  const std::string& page = node->body;
  CHECK(page.find("<h1>Node n1</h1>") != std::string::npos);
  CHECK(page.find("Now: <b>accepted</b>") != std::string::npos);
  CHECK(page.find("<script>alert(1)") == std::string::npos);
  CHECK(page.find("found 7 &lt;script&gt;") != std::string::npos);
  // One chart for the figure: the band, the node's three points, the trend.
  CHECK(page.find("<svg") != std::string::npos);
  CHECK(page.find("fleet p10-p90") != std::string::npos);
  CHECK(page.find("trend -10 TFLOP/s per day") != std::string::npos);
  CHECK(page.find("time to repair") != std::string::npos);
  CHECK(page.find("24.00 h") != std::string::npos);  // rejected, accepted a day later
  auto fleet = f.Get("/fleet", f.Bearer());
  REQUIRE(fleet);
  CHECK(fleet->status == 200);
  CHECK(fleet->body.find("failures per 1,000 GPU-hours by week") != std::string::npos);
  CHECK(fleet->body.find("time to repair median 24.00 h") != std::string::npos);
  CHECK(fleet->body.find("<svg") != std::string::npos);
  auto api = f.Get("/api/nodes/n1", f.Bearer());
  REQUIRE(api);
  CHECK(api->status == 200);
  CHECK(api->get_header_value("Content-Type") == "application/json");
  CHECK(api->body.find("\"incidents\"") != std::string::npos);
  auto unknown = f.Get("/nodes/nobody", f.Bearer());
  REQUIRE(unknown);
  CHECK(unknown->status == 404);
  // The index links each agent to its node page; every page links the fleet's.
  auto index = f.Get("/", f.Bearer());
  REQUIRE(index);
  CHECK(index->body.find("<a href=\"/nodes/n1\">n1</a>") != std::string::npos);
  CHECK(index->body.find("<a href=\"/fleet\">") != std::string::npos);
  auto denied = f.Get("/nodes/n1");
  REQUIRE(denied);
  CHECK(denied->status == 401);
}

TEST_CASE("a node page lists the node's remediation incidents, every text escaped", "[web]") {
  Fixture f;
  auto node = f.Get("/nodes/n1", f.Bearer());
  REQUIRE(node);
  CHECK(node->status == 200);
  const std::string& page = node->body;
  const std::string id = RealIncidents("n1").incidents(0).incident_id();
  CHECK(page.find("<h2 id=\"remediation\">Remediation incidents</h2>") != std::string::npos);
  CHECK(page.find(absl::StrCat("<h3 class=\"remediation-incident\">", id, "</h3>")) !=
        std::string::npos);
  CHECK(page.find("<b class=\"state-escalated\">escalated</b> <b class=\"err\">needs "
                  "hardware</b>") != std::string::npos);
  CHECK(page.find("opened 2026-11-30 00:00:02 UTC") != std::string::npos);
  CHECK(page.find("detect 2.0 s, quarantine 0.0 s, repair <span class=\"muted\">not "
                  "measured</span>") != std::string::npos);
  // The steps: the fence (none) and the escalation, each with its outcome and who.
  CHECK(page.find("<b>fence</b> none (fence: none; the node stays schedulable)</td><td>done"
                  "</td><td>cmax (policy)</td><td class=\"n\">0.0 s</td>") != std::string::npos);
  CHECK(page.find("<b>escalate</b>") != std::string::npos);
  // The check id and title carry markup: shown as text, never as markup.
  CHECK(page.find("<script>alert(2)") == std::string::npos);
  CHECK(page.find("<img src=x") == std::string::npos);
  CHECK(page.find("watch.&lt;script&gt;alert(2)&lt;/script&gt;") != std::string::npos);
  CHECK(page.find("Xid 79 &lt;img src=x onerror=alert(3)&gt;") != std::string::npos);
}

TEST_CASE("a node page shows the newest 20 incidents and counts the rest", "[web]") {
  Fixture f;
  // No run had this node: its page is there for its incidents.
  auto node = f.Get("/nodes/many", f.Bearer());
  REQUIRE(node);
  CHECK(node->status == 200);
  const std::string& page = node->body;
  CHECK(page.find("25 incident(s), newest first; the newest 20 shown, 5 more") !=
        std::string::npos);
  size_t shown = 0;
  for (size_t at = page.find("class=\"remediation-incident\""); at != std::string::npos;
       at = page.find("class=\"remediation-incident\"", at + 1)) {
    ++shown;
  }
  CHECK(shown == 20);
  // Newest first: check x24 is listed, x0..x4 are not.
  CHECK(page.find("watch.x24") < page.find("watch.x23"));
  CHECK(page.find("<b>watch.x4</b>") == std::string::npos);
  CHECK(page.find("<b>watch.x5</b>") != std::string::npos);
}

TEST_CASE("the run page shows progress and failures with every text escaped", "[web]") {
  Fixture f;
  auto page = f.Get("/runs/r2", f.Bearer());
  REQUIRE(page);
  REQUIRE(page->status == 200);
  CHECK(page->body.find("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;") !=
        std::string::npos);
  CHECK(page->body.find("<script>alert") == std::string::npos);
  CHECK(page->body.find("boom &lt;img src=x onerror=alert(1)&gt;") != std::string::npos);
  CHECK(page->body.find("<img src=x") == std::string::npos);
  CHECK(page->body.find("<span id=\"count-running\">1</span>") != std::string::npos);
  CHECK(page->body.find("<span id=\"count-failed\">1</span>") != std::string::npos);
  // Still running: the page reloads itself without script.
  CHECK(page->body.find("<noscript><meta http-equiv=\"refresh\"") != std::string::npos);
  auto done = f.Get("/runs/r1", f.Bearer());
  REQUIRE(done);
  CHECK(done->body.find("http-equiv=\"refresh\"") == std::string::npos);
  CHECK(done->body.find("id=\"scorecard-links\">") != std::string::npos);  // not hidden
}

TEST_CASE("a run page lists the latest 200 failures and counts them all", "[web]") {
  v1::GetRunResponse run;
  run.mutable_run()->set_run_id("big");
  run.mutable_run()->set_state("running");
  for (int i = 0; i < 1000; ++i) {
    auto* t = run.add_tasks();
    t->set_task_id("big.0.n" + std::to_string(i));
    t->set_node("n" + std::to_string(i));
    t->set_state(v1::TASK_LOST);
    t->set_finished_unix_ns(1000 + i);
  }
  RunProgress p = Summarize(run);
  CHECK(p.failed == 1000);
  CHECK(p.failures_total == 1000);
  REQUIRE(p.failures.size() == 200);
  CHECK(p.failures.front().node == "n800");
  CHECK(p.failures.back().node == "n999");
  const std::string page = RunPage(p, false, {});
  CHECK(page.find("<span id=\"failures-total\">1000</span>") != std::string::npos);
  CHECK(page.find(">n799<") == std::string::npos);
}

TEST_CASE("a task that could not run is counted apart, never as failed", "[web]") {
  // What a full plan gives on CPU-only nodes: GPU suites that could not run
  // (exit code 2) beside one that crashed.
  v1::GetRunResponse run;
  run.mutable_run()->set_run_id("cpu");
  run.mutable_run()->set_state("completed");
  run.mutable_run()->set_tasks_failed(1);
  run.mutable_run()->set_tasks_could_not_run(2);
  for (int i = 0; i < 3; ++i) {
    auto* t = run.add_tasks();
    t->set_task_id("cpu.0.n" + std::to_string(i));
    t->set_suite("gemm");
    t->set_node("n" + std::to_string(i));
    t->set_state(v1::TASK_FAILED);
    t->set_exit_code(i < 2 ? 2 : 139);
  }
  RunProgress p = Summarize(run);
  CHECK(p.failed == 1);
  CHECK(p.could_not_run == 2);
  CHECK(p.failures_total == 1);  // the crash alone is listed as a failure
  REQUIRE(p.failures.size() == 1);
  CHECK(p.failures[0].node == "n2");
  // The two that could not run are listed apart, with why.
  REQUIRE(p.not_run.size() == 2);
  CHECK(p.not_run[0].state == "could not run");
  const std::string page = RunPage(p, true, {});
  CHECK(page.find("<h2>Could not run (<span id=\"not-run-total\">2</span>") !=
        std::string::npos);
  const size_t rows = page.find("<tbody id=\"not-run\">");
  REQUIRE(rows != std::string::npos);
  CHECK(page.find("<td class=\"state-could_not_run\">could not run</td>", rows) !=
        std::string::npos);
  CHECK(page.find("<span id=\"count-failed\">1</span> failed") != std::string::npos);
  CHECK(page.find("<span id=\"count-could-not-run\">2</span> could not run") !=
        std::string::npos);
  CHECK(page.find("3 failed") == std::string::npos);
  const std::string json = RunJson(p, true);
  CHECK(json.find("\"could_not_run\":2") != std::string::npos);
  CHECK(json.find("\"not_run\":[{") != std::string::npos);
  v1::ListRunsResponse runs;
  *runs.add_runs() = run.run();
  const std::string index = IndexPage({}, runs, 0, {});
  CHECK(index.find("<th>failed</th><th>could not run</th>") != std::string::npos);
  CHECK(index.find("<td class=\"n\">1</td><td class=\"n\">2</td>") != std::string::npos);
}

TEST_CASE("the index offers to compare runs once two have a scorecard", "[web]") {
  v1::ListRunsResponse runs;
  for (const char* id : {"ra", "rb", "rc"}) {
    auto* r = runs.add_runs();
    r->set_run_id(id);
    r->set_plan_name("p<1>");
    if (std::string(id) != "rc") r->set_report_dir(std::string("/x/") + id);
  }
  const std::string page = IndexPage({}, runs, 0, {});
  CHECK(page.find("action=\"/compare\"") != std::string::npos);
  CHECK(page.find("<option value=\"ra\">ra (p&lt;1&gt;)</option>") != std::string::npos);
  CHECK(page.find("<option value=\"rc\">") == std::string::npos);
  CHECK(page.find("No agent has connected.") != std::string::npos);
}

TEST_CASE("signing in with the form sets a session cookie that is not the token",
          "[web]") {
  Fixture f;
  auto bad = f.client->Post("/login", "token=wrong&next=%2Fruns%2Fr1",
                            "application/x-www-form-urlencoded");
  REQUIRE(bad);
  CHECK(bad->status == 401);
  CHECK(bad->get_header_value("Set-Cookie").empty());
  CHECK(bad->body.find("Wrong token") != std::string::npos);

  auto good =
      f.client->Post("/login", std::string("token=") + kToken + "&next=%2Fruns%2Fr1",
                     "application/x-www-form-urlencoded");
  REQUIRE(good);
  CHECK(good->status == 200);
  const std::string set = good->get_header_value("Set-Cookie");
  INFO(set);
  CHECK(set.find("cmax_session=") == 0);
  CHECK(set.find("HttpOnly") != std::string::npos);
  CHECK(set.find("SameSite=Strict") != std::string::npos);
  CHECK(set.find("Secure") == std::string::npos);  // plain HTTP on loopback
  CHECK(set.find(kToken) == std::string::npos);
  CHECK(good->body.find("url=/runs/r1") != std::string::npos);

  const std::string cookie = SessionCookie(good);
  auto page = f.Get("/runs/r1", {{"Cookie", cookie}});
  REQUIRE(page);
  CHECK(page->status == 200);
  CHECK(page->body.find("Sign out") != std::string::npos);
  auto api = f.Get("/api/runs", {{"Cookie", "other=1; " + cookie}});
  REQUIRE(api);
  CHECK(api->status == 200);

  // A forged or altered cookie is refused.
  std::string forged = cookie;
  forged.back() = forged.back() == '0' ? '1' : '0';
  auto refused = f.Get("/api/runs", {{"Cookie", forged}});
  REQUIRE(refused);
  CHECK(refused->status == 401);
  auto later = f.Get("/api/runs", {{"Cookie", "cmax_session=99999999999.abcd.ef"}});
  REQUIRE(later);
  CHECK(later->status == 401);

  // Signing out ends the session on the server: the same cookie, sent again
  // (a copy kept by another tab, a proxy, a thief), is refused; another
  // session lives on.
  auto second = f.client->Post("/login", std::string("token=") + kToken + "&next=%2F",
                               "application/x-www-form-urlencoded");
  REQUIRE(second);
  const std::string other = SessionCookie(second);
  auto out = f.client->Post("/logout", {{"Cookie", cookie}}, "", "application/x-www-form-urlencoded");
  REQUIRE(out);
  CHECK(out->status == 303);
  CHECK(out->get_header_value("Set-Cookie").find("Max-Age=0") != std::string::npos);
  auto replay = f.Get("/api/runs", {{"Cookie", cookie}});
  REQUIRE(replay);
  CHECK(replay->status == 401);
  auto still = f.Get("/api/runs", {{"Cookie", other}});
  REQUIRE(still);
  CHECK(still->status == 200);

  // A sign-in may only return to a path of this server.
  auto away = f.client->Post("/login",
                             std::string("token=") + kToken + "&next=%2F%2Fevil.example",
                             "application/x-www-form-urlencoded");
  REQUIRE(away);
  CHECK(away->body.find("evil") == std::string::npos);
}

TEST_CASE("the read-only token opens the web view, by header and at the sign-in form",
          "[web][security]") {
  const std::string read_token = "read-only-token-for-the-web-test";
  Fixture f(kToken, nullptr, read_token);
  auto api = f.Get("/api/runs", {{"Authorization", "Bearer " + read_token}});
  REQUIRE(api);
  CHECK(api->status == 200);
  auto main = f.Get("/api/runs", f.Bearer());  // the main token still reads
  REQUIRE(main);
  CHECK(main->status == 200);
  auto signin = f.client->Post("/login", "token=" + read_token + "&next=%2F",
                               "application/x-www-form-urlencoded");
  REQUIRE(signin);
  CHECK(signin->status == 200);
  const std::string cookie = SessionCookie(signin);
  CHECK_FALSE(cookie.empty());
  auto page = f.Get("/runs/r1", {{"Cookie", cookie}});
  REQUIRE(page);
  CHECK(page->status == 200);
  auto wrong = f.Get("/api/runs", {{"Authorization", "Bearer " + read_token + "x"}});
  REQUIRE(wrong);
  CHECK(wrong->status == 401);
}

TEST_CASE("the sign-in form takes a body of a stated length only, and a small one",
          "[web][security]") {
  Fixture f;
  // Raw requests: cpp-httplib's client would add a length itself.
  auto raw = [&](const std::string& request) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(static_cast<uint16_t>(f.server->port()));
    inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
    REQUIRE(::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) == 0);
    REQUIRE(::send(fd, request.data(), request.size(), MSG_NOSIGNAL) ==
            static_cast<ssize_t>(request.size()));
    std::string reply;
    char buf[4096];
    timeval tv{5, 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    for (ssize_t n; (n = ::recv(fd, buf, sizeof(buf), 0)) > 0;) reply.append(buf, n);
    ::close(fd);
    return reply.substr(0, reply.find("\r\n"));
  };
  CHECK(raw("POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: "
            "application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n") ==
        "HTTP/1.1 411 Length Required");
  CHECK(raw("POST /login HTTP/1.1\r\nHost: x\r\n\r\n") == "HTTP/1.1 411 Length Required");
  CHECK(raw("POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 33554432\r\n\r\n") ==
        "HTTP/1.1 413 Payload Too Large");
  // The control: a form of a stated length is read and judged.
  const std::string form = "token=wrong&next=%2F";
  CHECK(raw("POST /login HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: "
            "application/x-www-form-urlencoded\r\nContent-Length: " +
            std::to_string(form.size()) + "\r\n\r\n" + form) ==
        "HTTP/1.1 401 Unauthorized");
}

TEST_CASE("a token in the URL is refused even when it is right", "[web]") {
  Fixture f;
  for (std::string path :
       {std::string("/?token=") + kToken, std::string("/api/runs?access_token=") + kToken,
        std::string("/runs/r1?TOKEN=") + kToken}) {
    auto r = f.Get(path);
    REQUIRE(r);
    INFO(path << ": " << r->body);
    CHECK(r->status == 400);
    CHECK(r->body.find("never accepted in a URL") != std::string::npos);
    CHECK(r->get_header_value("Set-Cookie").empty());
  }
  auto post = f.client->Post((std::string("/login?token=") + kToken).c_str(), "next=%2F",
                             "application/x-www-form-urlencoded");
  REQUIRE(post);
  CHECK(post->status == 400);
  CHECK(post->get_header_value("Set-Cookie").empty());
}

TEST_CASE("bad run ids are 400 and unknown runs 404", "[web]") {
  Fixture f;
  for (const char* path :
       {"/runs/..", "/runs/a%20b", "/runs/x%2F..%2F..%2Fetc", "/api/runs/r1%3Bdrop",
        "/runs/..%2Fr1/scorecard.json", "/compare?a=r1&b=..", "/compare?a=r1"}) {
    auto r = f.Get(path, f.Bearer());
    REQUIRE(r);
    INFO(path << ": " << r->body);
    CHECK(r->status == 400);
  }
  for (const char* path : {"/runs/r9", "/api/runs/r9", "/runs/r9/scorecard"}) {
    auto r = f.Get(path, f.Bearer());
    REQUIRE(r);
    INFO(path);
    CHECK(r->status == 404);
  }
  auto none = f.Get("/runs/r2/scorecard", f.Bearer());  // running: no scorecard yet
  REQUIRE(none);
  CHECK(none->status == 404);
  CHECK(none->body.find("no scorecard yet (state running)") != std::string::npos);
}

TEST_CASE("history queries beyond what the coordinator takes are 503 busy, retry", "[web]") {
  Fixture f;
  for (const char* path : {"/api/nodes/busy-node", "/nodes/busy-node"}) {
    auto r = f.Get(path, f.Bearer());
    REQUIRE(r);
    INFO(path << ": " << r->body);
    CHECK(r->status == 503);
    CHECK(r->get_header_value("Retry-After") == "5");
    CHECK(r->body.find("busy, retry") != std::string::npos);
  }
}

TEST_CASE("scorecards are served as written and the JSON as a download", "[web]") {
  Fixture f;
  auto html = f.Get("/runs/r1/scorecard", f.Bearer());
  REQUIRE(html);
  CHECK(html->status == 200);
  CHECK(html->body == "<html>card r1</html>");
  auto md = f.Get("/runs/r1/scorecard.md", f.Bearer());
  REQUIRE(md);
  CHECK(md->body == "# card r1\n");
  CHECK(md->get_header_value("Content-Type").find("text/markdown") == 0);
  auto json = f.Get("/runs/r1/scorecard.json", f.Bearer());
  REQUIRE(json);
  CHECK(json->status == 200);
  CHECK(json->get_header_value("Content-Disposition") ==
        "attachment; filename=\"cmax-scorecard-r1.json\"");
  CHECK(json->body.find("not rated") != std::string::npos);
}

TEST_CASE("compare is 501 until built in, then renders the two scorecards", "[web]") {
  {
    Fixture f;
    auto r = f.Get("/compare?a=r1&b=r1", f.Bearer());
    REQUIRE(r);
    CHECK(r->status == 501);
    CHECK(r->body.find("comparison not built in") != std::string::npos);
  }
  Fixture f(
      kToken,
      [](const v1::Scorecard& a, const v1::Scorecard& b) -> absl::StatusOr<std::string> {
        return "<p>" + a.run_id() + " vs " + b.run_id() + " " + a.tier() + "</p>";
      });
  auto r = f.Get("/compare?a=r1&b=r1", f.Bearer());
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->body == "<p>r1 vs r1 not rated</p>");
  auto missing = f.Get("/compare?a=r1&b=r2", f.Bearer());  // r2 has no scorecard
  REQUIRE(missing);
  CHECK(missing->status == 404);
}

TEST_CASE("a scorecard larger than many chunks is streamed byte for byte", "[web]") {
  Fixture f;
  // 3 MiB and 17 bytes that differ from chunk to chunk: a chunk sent twice,
  // dropped or out of order shows.
  std::string big;
  for (int i = 0; big.size() < (3u << 20) + 17; ++i) big += absl::StrCat(i, ",");
  big.resize((3u << 20) + 17);
  for (const char* ext : {"json", "html", "md"}) {
    std::ofstream(f.dir.path + "/reports/r1/scorecard." + ext, std::ios::binary) << big;
  }
  for (const char* path :
       {"/runs/r1/scorecard.json", "/runs/r1/scorecard", "/runs/r1/scorecard.md"}) {
    INFO(path);
    auto r = f.Get(path, f.Bearer());
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK(r->get_header_value("Content-Length") == std::to_string(big.size()));
    CHECK(r->body.size() == big.size());
    CHECK(r->body == big);
  }
  // An empty file is an empty answer, not an error.
  std::ofstream(f.dir.path + "/reports/r1/scorecard.md", std::ios::trunc);
  auto empty = f.Get("/runs/r1/scorecard.md", f.Bearer());
  REQUIRE(empty);
  CHECK(empty->status == 200);
  CHECK(empty->body.empty());
}

TEST_CASE("compare refuses a scorecard past its limit, naming it, and sees a rewritten one",
          "[web]") {
  ComparePage page = [](const v1::Scorecard& a,
                        const v1::Scorecard& b) -> absl::StatusOr<std::string> {
    return a.run_id() + " " + a.tier() + " vs " + b.run_id() + " " + b.tier();
  };
  Fixture f(kToken, page, "", /*max_compare_bytes=*/1000);
  const std::string card = f.dir.path + "/reports/r1/scorecard.json";
  auto ok = f.Get("/compare?a=r1&b=r1", f.Bearer());
  REQUIRE(ok);
  CHECK(ok->status == 200);
  CHECK(ok->body == "r1 not rated vs r1 not rated");
  // Rewritten (another size): read again, not the card parsed before.
  std::ofstream(card, std::ios::trunc) << R"({"runId":"r1","tier":"Gold"})";
  auto again = f.Get("/compare?a=r1&b=r1", f.Bearer());
  REQUIRE(again);
  CHECK(again->body == "r1 Gold vs r1 Gold");
  // Past the limit: refused before it is read, the page naming both sizes.
  std::ofstream(card, std::ios::trunc)
      << R"({"runId":"r1","tier":"Gold")" << std::string(2000, ' ') << "}";
  auto big = f.Get("/compare?a=r1&b=r1", f.Bearer());
  REQUIRE(big);
  INFO(big->body);
  CHECK(big->status == 500);
  CHECK(big->body.find("is 2028 bytes, more than the 1000 bytes the web view reads to "
                       "compare runs") != std::string::npos);
  CHECK(big->body.find("/runs/r1/scorecard.json") != std::string::npos);
}

TEST_CASE("the run API waits for a change when given the fingerprint it has", "[web]") {
  Fixture f;
  auto first = f.Get("/api/runs/r2", f.Bearer());
  REQUIRE(first);
  REQUIRE(first->status == 200);
  CHECK(first->body.find("\"running\":1") != std::string::npos);
  CHECK(first->body.find("\"final\":false") != std::string::npos);
  const size_t at = first->body.find("\"fingerprint\":\"") + 15;
  const std::string fp = first->body.substr(at, first->body.find('"', at) - at);
  REQUIRE(fp.size() == 16);
  // Unchanged: the answer comes after about a second, with the same fingerprint.
  auto t0 = std::chrono::steady_clock::now();
  auto same = f.Get("/api/runs/r2?since=" + fp, f.Bearer());
  auto waited = std::chrono::steady_clock::now() - t0;
  REQUIRE(same);
  CHECK(waited >= std::chrono::milliseconds(900));
  CHECK(waited < std::chrono::milliseconds(3000));
  CHECK(same->body.find(fp) != std::string::npos);
  // A change during the wait answers at once with the new state.
  std::thread advance([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    f.source->Advance();
  });
  t0 = std::chrono::steady_clock::now();
  auto changed = f.Get("/api/runs/r2?since=" + fp, f.Bearer());
  waited = std::chrono::steady_clock::now() - t0;
  advance.join();
  REQUIRE(changed);
  CHECK(changed->body.find(fp) == std::string::npos);
  CHECK(changed->body.find("\"running\":0") != std::string::npos);
  CHECK(waited < std::chrono::milliseconds(900));
}

TEST_CASE("the web view refuses to listen beyond loopback without TLS or a token",
          "[web]") {
  testing::ScratchDir dir;
  WebOptions o;
  o.listen = "0.0.0.0:0";
  o.token = kToken;
  auto plain = WebServer::Start(o, std::make_unique<FakeSource>(dir.path));
  REQUIRE_FALSE(plain.ok());
  CHECK(plain.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(std::string(plain.status().message()).find("is not loopback") !=
        std::string::npos);
  o.token = "";
  o.tls_cert_file = dir.path + "/cert.pem";
  o.tls_key_file = dir.path + "/key.pem";
  auto no_token = WebServer::Start(o, std::make_unique<FakeSource>(dir.path));
  REQUIRE_FALSE(no_token.ok());
  CHECK(std::string(no_token.status().message()).find("needs a token") !=
        std::string::npos);
  o.listen = "localhost:http";
  auto bad = WebServer::Start(o, std::make_unique<FakeSource>(dir.path));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("under TLS the web view speaks HTTPS and its session cookie is Secure",
          "[web]") {
  testing::ScratchDir dir;
  auto certs = RunCommand({std::string(CMAX_SOURCE_DIR) + "/deploy/gen-certs.sh",
                           dir.path + "/tls", "127.0.0.1,localhost"},
                          std::chrono::seconds(60));
  REQUIRE(certs.ok());
  INFO(certs->err);
  REQUIRE(certs->exit.code == 0);
  WebOptions o;
  o.listen = "127.0.0.1:0";
  o.token = kToken;
  o.tls_cert_file = dir.path + "/tls/server.pem";
  o.tls_key_file = dir.path + "/tls/server.key";
  o.report_root = dir.path + "/reports";
  auto server = WebServer::Start(o, std::make_unique<FakeSource>(dir.path + "/reports"));
  INFO(server.status().ToString());
  REQUIRE(server.ok());
  CHECK((*server)->tls());
  httplib::SSLClient c("127.0.0.1", (*server)->port());
  c.set_ca_cert_path((dir.path + "/tls/ca.pem").c_str());
  c.enable_server_certificate_verification(true);
  auto login = c.Post("/login", std::string("token=") + kToken + "&next=%2F",
                      "application/x-www-form-urlencoded");
  REQUIRE(login);
  CHECK(login->status == 200);
  const std::string set = login->get_header_value("Set-Cookie");
  INFO(set);
  CHECK(set.find("; Secure") != std::string::npos);
  auto page = c.Get("/", {{"Cookie", set.substr(0, set.find(';'))}});
  REQUIRE(page);
  CHECK(page->status == 200);
  // Plain HTTP to the HTTPS port gets no page.
  httplib::Client plain("127.0.0.1", (*server)->port());
  plain.set_read_timeout(3, 0);
  auto r = plain.Get("/", {{"Authorization", std::string("Bearer ") + kToken}});
  CHECK((!r || r->status != 200));
}

TEST_CASE("without a token (no-token coordinator) the web view asks nothing", "[web]") {
  Fixture f("");
  auto r = f.Get("/api/runs");
  REQUIRE(r);
  CHECK(r->status == 200);
  auto q = f.Get("/?token=x");  // still never in a URL
  REQUIRE(q);
  CHECK(q->status == 400);
}

TEST_CASE("the web view reads runs from a real core", "[web]") {
  testing::ScratchDir dir;
  {
    auto store = Store::Open(dir.path + "/cmax.db");
    REQUIRE(store.ok());
    RunRow run;
    run.info.set_run_id("r1");
    run.info.set_plan_name("seeded");
    run.info.set_state("completed");
    run.nodes = {"n1"};
    REQUIRE((*store)->PutRun(run).ok());
  }
  CoreOptions co;
  co.data_dir = dir.path;
  auto core = CoordinatorCore::Create(co);
  REQUIRE(core.ok());
  (*core)->Start();
  WebOptions o;
  o.listen = "127.0.0.1:0";
  o.token = kToken;
  o.report_root = dir.path + "/reports";
  auto server = WebServer::Start(o, MakeCoreWebSource(core->get(), absl::Seconds(5)));
  REQUIRE(server.ok());
  httplib::Client c("127.0.0.1", (*server)->port());
  httplib::Headers h = {{"Authorization", std::string("Bearer ") + kToken}};
  auto runs = c.Get("/api/runs", h);
  REQUIRE(runs);
  CHECK(runs->body.find("\"plan_name\":\"seeded\"") != std::string::npos);
  auto page = c.Get("/runs/r1", h);
  REQUIRE(page);
  CHECK(page->status == 200);
  CHECK(page->body.find("seeded") != std::string::npos);
  auto unknown = c.Get("/runs/r404", h);
  REQUIRE(unknown);
  CHECK(unknown->status == 404);
  CHECK((*core)->SnapshotRun("../r1", absl::Seconds(5)).status().code() ==
        absl::StatusCode::kInvalidArgument);
  auto agents = c.Get("/api/agents", h);
  REQUIRE(agents);
  CHECK(agents->status == 200);
  (*server)->Stop();
  (*core)->Stop();
}

TEST_CASE("an open incident's row says which failed checks no run has measured again",
          "[web][history]") {
  // The field report: a full run rejected the node for no scheduler, a
  // quick run without the orchestration suite accepted it.
  std::vector<v1::NodeRunSummary> all(2);
  for (int i = 0; i < 2; ++i) {
    all[i].set_run_id(i == 0 ? "full-1" : "quick-1");
    all[i].set_node("local-0");
    all[i].set_finished_unix_ns(1795996800ll * 1000000000 + i * 360ll * 1000000000);
    all[i].set_version(reports::kSummaryVersion);
    all[i].add_measured_suites("hostcheck");
  }
  all[0].set_verdict(reports::kVerdictReject);
  all[0].add_measured_suites("orchestration");
  auto* r = all[0].add_reasons();
  r->set_id("orchestration.scheduler<b>");
  r->set_outcome("fail");
  r->set_suite("orchestration");
  all[1].set_verdict(reports::kVerdictAccept);
  const std::string page =
      NodeHistoryPage(reports::ComputeNodeHistory("local-0", all), PageContext{});
  CHECK(page.find("<span class=\"err\">open</span>: waiting for a run that measures again "
                  "and passes orchestration.scheduler&lt;b&gt;") != std::string::npos);
  CHECK(page.find("0.10 h") == std::string::npos);
}

}  // namespace
}  // namespace cmax::coordinator::web
