// The escalation webhook (coordinator/remediation/webhook.h,
// webhook_http.h): its URL and what may be shown of it, and an escalated
// incident POSTed by the real HTTP client to a server on 127.0.0.1: the
// JSON names the incident, node and check; a server answering 500 and one
// not listening are recorded failures, and the incident stays escalated.
#include <httplib.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <sstream>
#include <string>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/logging.h"
#include "coordinator/remediation/incidents.h"
#include "coordinator/remediation/webhook_http.h"
#include "spdlog/sinks/ostream_sink.h"

namespace cmax::remediation {
namespace {

constexpr int64_t kSec = 1'000'000'000;

struct NoFence : Fencer {
  std::string Name() const override { return "none"; }
  absl::StatusOr<FenceState> Inspect(const std::string&) override { return FenceState{}; }
  absl::Status Fence(const std::string&, const std::string&) override { return absl::OkStatus(); }
  absl::Status Lift(const std::string&) override { return absl::OkStatus(); }
};

struct Core : IncidentHooks {
  int FleetSize() override { return 10; }
  bool Connected(const std::string&) override { return true; }
  int GpuCount(const std::string&) override { return 8; }
  bool SendAction(const std::string&, const v1::RemediationAction&) override { return true; }
  absl::StatusOr<std::string> StartVerifyRun(const std::string&, const std::string&) override {
    return absl::UnavailableError("no runs here");
  }
  void Persist(const v1::RemediationIncident&) override {}
};

// An HTTP server on 127.0.0.1 (a free port) answering `status` to POST /hook.
struct HookServer {
  explicit HookServer(int status) {
    server.Post("/hook", [this, status](const httplib::Request& req, httplib::Response& res) {
      absl::MutexLock l(&mu);
      bodies.push_back(req.body);
      content_type = req.get_header_value("Content-Type");
      authorization = req.get_header_value("Authorization");
      token = req.get_param_value("token");
      res.status = status;
    });
    port = server.bind_to_any_port("127.0.0.1");
    thread = std::thread([this] { server.listen_after_bind(); });
    // stop() before the accept loop runs would leave it running for good.
    while (!server.is_running()) absl::SleepFor(absl::Milliseconds(1));
  }
  ~HookServer() {
    server.stop();
    thread.join();
  }
  std::vector<std::string> Bodies() {
    absl::MutexLock l(&mu);
    return bodies;
  }
  httplib::Server server;
  int port = 0;
  std::thread thread;
  absl::Mutex mu;
  std::vector<std::string> bodies;
  std::string content_type, authorization, token;
};

// What the "remediation" logger writes while it lives.
struct LogCapture {
  LogCapture() : sink(std::make_shared<spdlog::sinks::ostream_sink_mt>(out)) {
    GetLogger("remediation")->sinks().push_back(sink);
  }
  ~LogCapture() {
    auto& sinks = GetLogger("remediation")->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink), sinks.end());
  }
  std::string Text() {
    sink->flush();
    return out.str();
  }
  std::ostringstream out;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink;
};

IncidentOptions FastRetry(WebhookPoster poster) {
  IncidentOptions o;
  o.webhook_poster = std::move(poster);
  o.webhook_retry.backoff = absl::Milliseconds(10);
  o.webhook_retry.timeout = absl::Seconds(2);
  return o;
}

// No rule matches: the incident is fenced (fence: none) and escalated at once.
const v1::RemediationIncident& EscalateOne(IncidentManager& m) {
  v1::Finding f;
  f.set_check_id("watch.xid");
  f.set_severity(v1::SEVERITY_FAIL);
  f.set_title("Xid 79 on GPU 3");
  m.OnFinding("n1", f, 5 * kSec, 6 * kSec);
  for (int i = 0; i < 2000 && !m.WorkerIdle(); ++i) {
    m.Tick(7 * kSec);
    absl::SleepFor(absl::Milliseconds(5));
  }
  m.Tick(7 * kSec);
  REQUIRE(m.WorkerIdle());
  REQUIRE(m.incidents().size() == 1);
  return m.incidents().begin()->second;
}

const v1::IncidentStep& WebhookStep(const v1::RemediationIncident& inc) {
  auto it = std::find_if(inc.steps().begin(), inc.steps().end(),
                         [](const v1::IncidentStep& s) { return s.kind() == "webhook"; });
  REQUIRE(it != inc.steps().end());
  return *it;
}

Policy PolicyFor(const std::string& url) {
  auto p = ParsePolicy(absl::StrCat("mode: enforce\nescalate: {webhook: \"", url, "\"}\n"), "p.yaml");
  REQUIRE(p.ok());
  return *p;
}

TEST_CASE("a webhook URL shows only scheme, host, port and path") {
  auto u = ParseWebhookUrl("https://bot:s3cret@pager.example.com/hooks/gpu?token=abc#frag");
  REQUIRE(u.ok());
  CHECK(u->Redacted() == "https://pager.example.com:443/hooks/gpu");
  CHECK(u->Target() == "/hooks/gpu?token=abc");
  CHECK(u->userinfo == "bot:s3cret");
  auto v6 = ParseWebhookUrl("http://[::1]:8080");
  REQUIRE(v6.ok());
  CHECK(v6->Redacted() == "http://[::1]:8080/");
  auto bare = ParseWebhookUrl("http://h?x=1");
  REQUIRE(bare.ok());
  CHECK(bare->Redacted() == "http://h:80/");
  CHECK(bare->Target() == "/?x=1");
  CHECK_FALSE(ParseWebhookUrl("ftp://h/x").ok());
  CHECK_FALSE(ParseWebhookUrl("http:///x").ok());
  CHECK_FALSE(ParseWebhookUrl("http://h:0/x").ok());
  CHECK_FALSE(ParseWebhookUrl("http://h x/").ok());
}

TEST_CASE("an escalated incident is POSTed as JSON to the webhook, its secrets never logged") {
  HookServer hook(200);
  REQUIRE(hook.port > 0);
  LogCapture log;
  Core core;
  IncidentManager m(&core,
                    PolicyFor(absl::StrCat("http://bot:s3cret@127.0.0.1:", hook.port,
                                           "/hook?token=t0ken")),
                    std::make_unique<NoFence>(), FastRetry(HttpWebhookPoster()));
  const v1::RemediationIncident& inc = EscalateOne(m);
  CHECK(inc.state() == v1::INCIDENT_ESCALATED);
  REQUIRE(hook.Bodies().size() == 1);
  const std::string body = hook.Bodies()[0];
  CHECK_THAT(body, Catch::Contains(inc.incident_id()));
  CHECK_THAT(body, Catch::Contains("\"n1\""));
  CHECK_THAT(body, Catch::Contains("\"watch.xid\""));
  CHECK(hook.content_type == "application/json");
  CHECK(hook.token == "t0ken");
  CHECK_THAT(hook.authorization, Catch::StartsWith("Basic "));
  const v1::IncidentStep& step = WebhookStep(inc);
  CHECK(step.outcome() == "done");
  CHECK(step.message() == "delivered: HTTP 200 (try 1 of 3)");
  CHECK(step.detail() == absl::StrCat("POST the incident to http://127.0.0.1:", hook.port, "/hook"));
  const std::string text = log.Text();
  CHECK_THAT(text, Catch::Contains("delivered: HTTP 200"));
  CHECK_THAT(text, !Catch::Contains("s3cret") && !Catch::Contains("t0ken"));
}

TEST_CASE("a webhook answering 500 is tried three times and recorded as not delivered") {
  HookServer hook(500);
  Core core;
  IncidentManager m(&core, PolicyFor(absl::StrCat("http://127.0.0.1:", hook.port, "/hook")),
                    std::make_unique<NoFence>(), FastRetry(HttpWebhookPoster()));
  const v1::RemediationIncident& inc = EscalateOne(m);
  CHECK(hook.Bodies().size() == 3);
  CHECK(inc.state() == v1::INCIDENT_ESCALATED);
  const v1::IncidentStep& step = WebhookStep(inc);
  CHECK(step.outcome() == "failed");
  CHECK(step.message() == "not delivered: HTTP 500 (3 tries)");
  CHECK(step.ended_unix_ns() == 7 * kSec);
}

TEST_CASE("a webhook nobody listens on is recorded as not delivered") {
  int port = 0;
  {
    HookServer gone(200);
    port = gone.port;
  }
  Core core;
  IncidentManager m(&core, PolicyFor(absl::StrCat("http://127.0.0.1:", port, "/hook")),
                    std::make_unique<NoFence>(), FastRetry(HttpWebhookPoster()));
  const v1::RemediationIncident& inc = EscalateOne(m);
  CHECK(inc.state() == v1::INCIDENT_ESCALATED);
  const v1::IncidentStep& step = WebhookStep(inc);
  CHECK(step.outcome() == "failed");
  CHECK_THAT(step.message(), Catch::StartsWith("not delivered: no answer: "));
  CHECK_THAT(step.message(), Catch::EndsWith("(3 tries)"));
}

TEST_CASE("a coordinator without an HTTP client records the webhook as not sent") {
  Core core;
  IncidentManager m(&core, PolicyFor("http://127.0.0.1:9/hook"), std::make_unique<NoFence>(),
                    FastRetry(nullptr));
  const v1::RemediationIncident& inc = EscalateOne(m);
  CHECK(inc.state() == v1::INCIDENT_ESCALATED);
  CHECK(WebhookStep(inc).outcome() == "failed");
  CHECK_THAT(WebhookStep(inc).message(), Catch::Contains("no HTTP client"));
}

}  // namespace
}  // namespace cmax::remediation
