// The web view (--http-listen) on a real cluster of three namespaced agents,
// opened by Debian's headless Chromium where the coordinator runs (its
// namespace's loopback): a run page that updates while the run goes on, no
// console errors, the scorecard page and the JSON download, 401 without the
// token. Screenshots (run-page.png, index.png) and the run page's DOM go to
// <build>/test-output/web/ (CMAX_TEST_OUTPUT_DIR/web/ when set). Without chromium the
// test fails: a browser test that did not run is not a pass.
#include <signal.h>
#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/subprocess.h"
#include "tests/integration/cluster.h"

namespace cmax::testing {
namespace {

using namespace std::chrono_literals;

std::string OutputDir() {
  const char* e = getenv("CMAX_TEST_OUTPUT_DIR");
  std::string dir =
      e && *e ? std::string(e) + "/web" : Cluster::BinDir() + "/../test-output/web";
  std::filesystem::create_directories(dir);
  return std::filesystem::weakly_canonical(dir).string();
}

// Headless Chromium with nothing but the page to talk to: no proxy, no
// background fetches, a fresh profile each time.
std::vector<std::string> Chromium(const std::string& profile,
                                  std::vector<std::string> args) {
  std::vector<std::string> argv = {"chromium",
                                   "--headless",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--no-proxy-server",
                                   "--disable-background-networking",
                                   "--disable-component-update",
                                   "--disable-sync",
                                   "--no-first-run",
                                   "--no-default-browser-check",
                                   "--disable-default-apps",
                                   "--disable-domain-reliability",
                                   "--enable-logging=stderr",
                                   "--v=0",
                                   "--user-data-dir=" + profile};
  argv.insert(argv.end(), args.begin(), args.end());
  return argv;
}

// The lines Chromium logs for the page's console (INFO:CONSOLE ...).
std::vector<std::string> ConsoleLines(const std::string& err) {
  std::vector<std::string> out;
  for (absl::string_view line : absl::StrSplit(err, '\n')) {
    if (absl::StrContains(line, ":CONSOLE")) out.emplace_back(line);
  }
  return out;
}

// A local page that signs in with the form, as a user would, and goes on to
// `next`: the browser then holds the session cookie, never the token in a URL.
std::string WriteSignIn(const Cluster& c, const std::string& name,
                        const std::string& token, const std::string& next) {
  const std::string path = absl::StrCat(c.dir(), "/", name, ".html");
  std::ofstream(path)
      << "<!DOCTYPE html><html><body><form method=\"post\" action=\"http://"
      << c.web_address() << "/login\"><input name=\"token\" value=\"" << token
      << "\"><input name=\"next\" value=\"" << next
      << "\"></form><script>document.forms[0].submit()</script></body></html>\n";
  return "file://" + path;
}

// GETs a URL from the hub with python3's urllib (no proxy); with the token
// file, as "Authorization: Bearer". Returns "STATUS\nCONTENT-DISPOSITION\n"
// and writes the body to `body_path`.
std::string Fetch(Cluster& c, const std::string& url, const std::string& token_file,
                  const std::string& body_path) {
  static const char kScript[] = R"py(
import sys, urllib.request, urllib.error
url, token_file, out = sys.argv[1:4]
opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
req = urllib.request.Request(url)
if token_file != '-':
    req.add_header('Authorization', 'Bearer ' + open(token_file).read().strip())
try:
    r = opener.open(req, timeout=20); status, headers, body = r.status, r.headers, r.read()
except urllib.error.HTTPError as e:
    status, headers, body = e.code, e.headers, e.read()
open(out, 'wb').write(body)
print(status); print(headers.get('Content-Disposition', ''))
)py";
  const std::string script = c.dir() + "/fetch.py";
  std::ofstream(script) << kScript;
  CommandResult r = c.OnHub({"python3", script, url, token_file, body_path}, 30s);
  INFO(r.err);
  return r.out;
}

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

TEST_CASE("the web view follows a run live in headless Chromium", "[integration][web]") {
  REQUIRE_FALSE(
      FindExecutable("chromium").empty());  // deploy/install-deps.sh --with-tests
  Cluster c("wb1", {.agents = 3, .coordinator_args = {"--http-listen", "127.0.0.1:0"}});
  REQUIRE(c.Start().ok());
  REQUIRE_FALSE(c.web_address().empty());
  const std::string base = "http://" + c.web_address();
  const std::string token =
      Slurp(c.token_file()).substr(0, Slurp(c.token_file()).find('\n'));
  const std::string out_dir = OutputDir();

  // Three entries on every node, ending at different times over several
  // seconds; the last cannot run (exit 2), so failures arrive while the page
  // is open.
  std::string plan = c.WritePlan("web", R"(name: web
suites:
  - suite: selftest
    name: first
    params: {mode: ok, records: 7, seconds: 7}
  - suite: selftest
    name: second
    params: {mode: ok, records: 6, seconds: 6}
  - suite: selftest
    name: broken
    params: {mode: error}
)");
  auto submit = c.Ctl({"run", "--plan", plan, "--no-wait"});
  INFO(submit.out << submit.err);
  REQUIRE(submit.exit.code == 0);
  const std::string run_id = Cluster::RunIdFrom(submit.out);
  REQUIRE_FALSE(run_id.empty());

  // The first entry's processes are held (SIGSTOP) until the browser has
  // signed in, so the page finds the run going on however long Chromium
  // takes to start: on CI's busy 2-core machine it once took longer than
  // the whole run.
  std::vector<pid_t> held;
  for (int i = 0; i < 3; ++i) {
    pid_t p = -1;
    for (auto until = std::chrono::steady_clock::now() + 30s;
         p < 0 && std::chrono::steady_clock::now() < until;) {
      p = c.SuiteProcessOf(i, "--seconds=7");
      if (p < 0) std::this_thread::sleep_for(50ms);
    }
    INFO("the first entry's process on " << c.node(i));
    REQUIRE(p > 0);
    REQUIRE(kill(p, SIGSTOP) == 0);
    held.push_back(p);
  }

  // The browser opens the run page while the run goes on. The page's script
  // follows /api/runs/ID (each answer held up to 1 s while nothing changes,
  // so Chromium's virtual time keeps pace with the run) and notes every
  // state it saw in #update-log; the run ends well within the budget.
  CommandResult dom;
  std::thread browser([&] {
    dom = c.OnHub(Chromium(c.dir() + "/profile-live",
                           {"--virtual-time-budget=40000", "--dump-dom",
                            WriteSignIn(c, "live", token, "/runs/" + run_id)}),
                  150s);
  });
  // The coordinator logs each sign-in; a moment later the page is following.
  bool signed_in = false;
  for (auto until = std::chrono::steady_clock::now() + 120s;
       !signed_in && std::chrono::steady_clock::now() < until;) {
    signed_in = absl::StrContains(Slurp(c.dir() + "/coordinator.log"),
                                  "signed in a browser session from 127.0.0.1");
    if (!signed_in) std::this_thread::sleep_for(100ms);
  }
  if (signed_in) std::this_thread::sleep_for(2s);
  for (pid_t p : held) kill(p, SIGCONT);
  browser.join();
  REQUIRE(signed_in);
  INFO("chromium stderr: " << dom.err.substr(0, 4000));
  REQUIRE(dom.exit.code == 0);
  std::ofstream(out_dir + "/run-page.dom.html") << dom.out;
  CHECK(ConsoleLines(dom.err).empty());
  REQUIRE(dom.out.find("id=\"update-log\"") != std::string::npos);
  // Each noted state: <li data-state="..." data-done="N" ...>.
  std::regex li(
      R"re(<li data-state="([a-z]+)" data-done="(\d+)" data-running="(\d+)" data-failed="(\d+)" data-could-not-run="(\d+)")re");
  std::vector<std::string> states;
  std::set<std::string> running_done;  // tasks done, as seen while the run was running
  for (auto it = std::sregex_iterator(dom.out.begin(), dom.out.end(), li);
       it != std::sregex_iterator(); ++it) {
    states.push_back((*it)[1].str() + " done " + (*it)[2].str() + " failed " +
                     (*it)[4].str() + " could not run " + (*it)[5].str());
    if ((*it)[1].str() == "running") running_done.insert((*it)[2].str());
  }
  INFO("states seen: " << absl::StrJoin(states, "; "));
  REQUIRE(states.size() >= 3);
  CHECK(absl::StartsWith(states.front(), "running"));
  // Progress seen changing while the run went on, not only one state and
  // the end: done 0 while the first entry was held, done 3 after it.
  CHECK(running_done.size() >= 2);
  // The broken entry could not run (exit 2): counted apart, never failed.
  CHECK(states.back() == "completed done 6 failed 0 could not run 3");
  CHECK(dom.out.find("data-final=\"1\"") != std::string::npos);
  // They arrived with their node and stderr, in the table of their own.
  const size_t not_run = dom.out.find("<tbody id=\"not-run\">");
  REQUIRE(not_run != std::string::npos);
  const std::string not_run_rows = dom.out.substr(not_run, dom.out.find("</tbody>", not_run) - not_run);
  CHECK(not_run_rows.find("asked to fail to run") != std::string::npos);
  CHECK(not_run_rows.find("node-2") != std::string::npos);
  CHECK(dom.out.find("<span id=\"failures-total\">0</span>") != std::string::npos);

  // Refused without the token: the API, the page (the sign-in form) and the scorecard.
  // (Checked after the live page: on a busy machine they took the seconds the
  // browser needed to see the run going on.)
  CHECK(absl::StartsWith(Fetch(c, base + "/api/runs", "-", c.dir() + "/anon.txt"),
                         "401\n"));
  CHECK(Slurp(c.dir() + "/anon.txt").find(run_id) == std::string::npos);
  CHECK(absl::StartsWith(Fetch(c, base + "/runs/" + run_id, "-", c.dir() + "/anon.html"),
                         "401\n"));
  CHECK(Slurp(c.dir() + "/anon.html").find("action=\"/login\"") != std::string::npos);
  CHECK(absl::StartsWith(
      Fetch(c, base + "/runs/" + run_id + "?token=" + token, "-", c.dir() + "/inurl.txt"),
      "400\n"));

  // The ended run: agents and runs on "/", the scorecard page, the JSON download.
  auto index = Fetch(c, base + "/", c.token_file(), c.dir() + "/index.html");
  CHECK(absl::StartsWith(index, "200\n"));
  const std::string index_html = Slurp(c.dir() + "/index.html");
  CHECK(index_html.find("href=\"/runs/" + run_id + "\"") != std::string::npos);
  for (int i = 0; i < 3; ++i) CHECK(index_html.find(c.node(i)) != std::string::npos);
  auto json = Fetch(c, base + "/runs/" + run_id + "/scorecard.json", c.token_file(),
                    c.dir() + "/card.json");
  CHECK(json ==
        absl::StrCat("200\nattachment; filename=\"cmax-scorecard-", run_id, ".json\"\n"));
  CHECK(Slurp(c.dir() + "/card.json").find(run_id) != std::string::npos);
  CHECK(Slurp(c.dir() + "/card.json") ==
        Slurp(absl::StrCat(c.data_dir(), "/reports/", run_id, "/scorecard.json")));

  // The comparison page (reports/compare.h, wired in coordinator/main.cc):
  // the run against itself moved nothing.
  auto cmp = Fetch(c, base + "/compare?a=" + run_id + "&b=" + run_id, c.token_file(),
                   c.dir() + "/compare.html");
  CHECK(absl::StartsWith(cmp, "200\n"));
  const std::string cmp_html = Slurp(c.dir() + "/compare.html");
  CHECK(cmp_html.find("<title>cmax compare " + run_id + " vs " + run_id) != std::string::npos);
  CHECK(absl::StartsWith(Fetch(c, base + "/compare?a=" + run_id + "&b=" + run_id, "-",
                               c.dir() + "/compare-anon.html"),
                         "401\n"));

  // Every page reads without scrolling sideways on a 1,280 px screen (issue
  // 46, item 7): the served HTML laid out by Chromium, a measuring script
  // added to a local copy (the served pages' policy runs their own scripts
  // alone).
  const std::vector<std::string> pages = {"/", "/runs/" + run_id, "/runs/" + run_id + "/scorecard",
                                          "/fleet", "/nodes/" + c.node(0),
                                          "/compare?a=" + run_id + "&b=" + run_id};
  for (size_t i = 0; i < pages.size(); ++i) {
    INFO(pages[i]);
    const std::string copy = absl::StrCat(c.dir(), "/layout-", i, ".html");
    REQUIRE(absl::StartsWith(Fetch(c, base + pages[i], c.token_file(), copy), "200\n"));
    std::string html = Slurp(copy);
    const size_t end = html.rfind("</body>");
    html.insert(end == std::string::npos ? html.size() : end,
                "<script>addEventListener('load',function(){document.documentElement.setAttribute("
                "'data-laid-out',document.documentElement.scrollWidth+'x'+"
                "document.documentElement.scrollHeight)})</script>");
    std::ofstream(copy) << html;
    auto laid = c.OnHub(Chromium(absl::StrCat(c.dir(), "/profile-layout-", i),
                                 {"--window-size=1280,1000", "--virtual-time-budget=2000",
                                  "--dump-dom", "file://" + copy}),
                        90s);
    REQUIRE(laid.exit.code == 0);
    std::smatch m;
    static const std::regex size(R"re(data-laid-out="(\d+)x(\d+)")re");
    REQUIRE(std::regex_search(laid.out, m, size));
    const int width = std::stoi(m[1].str()), height = std::stoi(m[2].str());
    std::printf("web page %s laid out at 1280 px: %d x %d px\n", pages[i].c_str(), width, height);
    CHECK(width <= 1280);
  }

  auto card =
      c.OnHub(Chromium(c.dir() + "/profile-card",
                       {"--virtual-time-budget=5000", "--dump-dom",
                        WriteSignIn(c, "card", token, "/runs/" + run_id + "/scorecard")}),
              90s);
  INFO("chromium stderr: " << card.err.substr(0, 4000));
  REQUIRE(card.exit.code == 0);
  CHECK(ConsoleLines(card.err).empty());
  CHECK(card.out.find(run_id) != std::string::npos);
  CHECK(card.out.find("action=\"/login\"") == std::string::npos);

  const std::string shot = out_dir + "/run-page.png";
  std::filesystem::remove(shot);
  auto png = c.OnHub(Chromium(c.dir() + "/profile-shot",
                              {"--virtual-time-budget=5000", "--window-size=1280,1000",
                               "--screenshot=" + shot,
                               WriteSignIn(c, "shot", token, "/runs/" + run_id)}),
                     90s);
  INFO("chromium stderr: " << png.err.substr(0, 4000));
  CHECK(png.exit.code == 0);
  CHECK(ConsoleLines(png.err).empty());
  CHECK(std::filesystem::exists(shot));
  CHECK(std::filesystem::file_size(shot) > 10000);
  const std::string index_shot = out_dir + "/index.png";
  std::filesystem::remove(index_shot);
  auto png2 = c.OnHub(
      Chromium(c.dir() + "/profile-index",
               {"--virtual-time-budget=5000", "--window-size=1280,800",
                "--screenshot=" + index_shot, WriteSignIn(c, "index", token, "/")}),
      90s);
  INFO("chromium stderr: " << png2.err.substr(0, 4000));
  CHECK(png2.exit.code == 0);
  CHECK(ConsoleLines(png2.err).empty());
  CHECK(std::filesystem::exists(index_shot));
  printf("web view screenshots: %s, %s\n", shot.c_str(), index_shot.c_str());
}

TEST_CASE("the coordinator refuses a web view beyond loopback without TLS",
          "[integration][web]") {
  char tmpl[] = "/tmp/cmax-it-wb2-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const std::string dir = tmpl;
  std::ofstream(dir + "/token") << "a-token-for-this-test\n";
  chmod((dir + "/token").c_str(), 0600);
  const std::string tls_hint = "give a TLS certificate and key";
  const std::string token_hint = "the web view needs a token there";
  for (const auto& [extra, hint] :
       std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"--token-file", dir + "/token", "--http-listen", "0.0.0.0:0"}, tls_hint},
           {{"--token-file", dir + "/token", "--http-listen", "0.0.0.0:0",
             "--allow-insecure"},
            tls_hint},
           {{"--no-token", "--http-listen", "0.0.0.0:0"}, token_hint}}) {
    std::vector<std::string> argv = {Cluster::BinDir() + "/cmax-coordinator",
                                     "--data-dir", dir, "--listen", "127.0.0.1:0"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    auto r = RunCommand(argv, 30s);
    REQUIRE(r.ok());
    INFO(absl::StrJoin(extra, " ") << ": " << r->err);
    CHECK(r->exit.exited);
    CHECK(r->exit.code == 2);
    CHECK(r->err.find("--http-listen 0.0.0.0:0 is not loopback") != std::string::npos);
    CHECK(r->err.find(hint) != std::string::npos);
    CHECK(r->out.find("listening on") == std::string::npos);
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace cmax::testing
