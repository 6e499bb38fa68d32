// The coordinator's web view (--http-listen): the agents with their states,
// the runs, a live page per run, every scorecard (HTML, Markdown, the JSON
// export as a download) and, when built in, the comparison of two runs.
// Served by cpp-httplib (common/http_server.h) on threads of its own; data
// comes from the core thread through WebSource (CoreWebSource: Post and
// wait, like RenderMetrics), scorecard files are read from the report
// directory on the server's threads.
//
// Access: loopback unless configured; beyond loopback only with TLS and a
// token (no --allow-insecure here). With a token every request but the
// sign-in form needs either "Authorization: Bearer <token>" or the session
// cookie that POST /login sets after checking the token (HttpOnly,
// SameSite=Strict, Secure under TLS; its value is an expiry, a random nonce
// and their HMAC-SHA256 under a key made at start, never the token). The
// token is never taken from a URL: a query with a token parameter is
// refused (400). Wrong or missing credentials: 401 (the sign-in form for
// pages, plain text for /api/), and nothing else.
//
// Routes (GET unless said):
//   /                         agents and the latest runs (at most max_runs)
//   /runs/ID                  live page of a run (polls /api/runs/ID)
//   /runs/ID/scorecard        scorecard.html as the coordinator wrote it
//   /runs/ID/scorecard.md     scorecard.md (text/markdown)
//   /runs/ID/scorecard.json   scorecard.json as a download
//   /compare?a=RUN&b=RUN      ComparePage of the two scorecards; 501 unset
//   /api/agents, /api/runs    ListAgents / ListRuns as JSON (proto field names)
//   /api/runs/ID[?since=FP]   the run page's data; with since= the answer
//                             waits up to poll_hold while nothing changed
//   /login (GET form, POST)   /logout (POST)
// Bad run ids (IsSafeRunId): 400. Unknown runs: 404. Core busy: 503.
#ifndef CMAX_COORDINATOR_WEB_WEB_SERVER_H_
#define CMAX_COORDINATOR_WEB_WEB_SERVER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "cmax/v1/scorecard.pb.h"
#include "cmax/v1/service.pb.h"

namespace cmax::coordinator {
class CoordinatorCore;
}

namespace cmax::coordinator::web {

// Where the web view's data comes from (a seam: tests give a fake).
class WebSource {
 public:
  virtual ~WebSource() = default;
  virtual absl::StatusOr<v1::ListAgentsResponse> Agents() = 0;
  virtual absl::StatusOr<v1::ListRunsResponse> Runs(int limit) = 0;
  // NOT_FOUND for an unknown run.
  virtual absl::StatusOr<v1::GetRunResponse> Run(const std::string& run_id) = 0;
};

// The core's snapshots (CoordinatorCore::Snapshot*), each waiting at most `timeout`.
std::unique_ptr<WebSource> MakeCoreWebSource(CoordinatorCore* core,
                                             absl::Duration timeout);

// Renders the comparison page of two scorecards (a first, b second).
using ComparePage = std::function<absl::StatusOr<std::string>(const v1::Scorecard&,
                                                              const v1::Scorecard&)>;

struct WebOptions {
  // HOST:PORT, [V6]:PORT, or a bare PORT (then 127.0.0.1). Port 0: any free one.
  std::string listen;
  std::string token;          // empty: nothing asked (the coordinator's --no-token)
  // Also accepted, as a bearer token or at the sign-in form
  // (--read-token-file): the view only reads. Empty: only `token`.
  std::string read_token;
  std::string tls_cert_file;  // PEM; both or neither; then HTTPS
  std::string tls_key_file;
  // <data dir>/reports: scorecards are <report_root>/<run>/scorecard.{html,md,json}.
  std::string report_root;
  int max_runs = 200;        // runs listed by / and /api/runs
  ComparePage compare_page;  // unset: /compare answers 501
  absl::Duration session_lifetime = absl::Hours(12);
  absl::Duration poll_hold = absl::Seconds(1);
};

class WebServer {
 public:
  // Errors: INVALID_ARGUMENT (listen address), FAILED_PRECONDITION (beyond
  // loopback without TLS or without a token, TLS files unusable),
  // UNAVAILABLE (cannot bind), INTERNAL (no randomness for the session key).
  static absl::StatusOr<std::unique_ptr<WebServer>> Start(
      WebOptions options, std::unique_ptr<WebSource> source);
  ~WebServer();  // Stop()
  void Stop();
  int port() const;
  const std::string& host() const;
  bool tls() const;

 private:
  struct Impl;
  WebServer() = default;
  std::unique_ptr<Impl> impl_;
};

}  // namespace cmax::coordinator::web

#endif  // CMAX_COORDINATOR_WEB_WEB_SERVER_H_
