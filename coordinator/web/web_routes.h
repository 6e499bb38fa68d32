// The web view's handlers, apart from the listener that serves them
// (coordinator/web/web_server.h): what each route answers, who may ask,
// the sign-in sessions. WebRoutes::Install puts them on any cpp-httplib
// server, so the fuzz target (tests/fuzz/web_view_fuzz.cc) drives the
// same handlers the coordinator serves, without a socket or a core.
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
//                             (the three scorecard files: streamed)
//   /runs/ID/scorecard.md     scorecard.md (text/markdown)
//   /runs/ID/scorecard.json   scorecard.json as a download
//   /compare?a=RUN&b=RUN      ComparePage of the two scorecards; 501 unset
//   /nodes/NAME               the node's history with charts (NodeHistoryPage)
//                             and its remediation incidents (remediation_section.h)
//   /fleet                    the fleet's history (FleetPage)
//   /api/nodes/NAME, /api/fleet  GetHistory as JSON
//   /api/agents, /api/runs    ListAgents / ListRuns as JSON (proto field names)
//   /api/runs/ID[?since=FP]   the run page's data; with since= the answer
//                             waits up to poll_hold while nothing changed
//   /login (GET form, POST)   /logout (POST)
// Bad run ids (IsSafeRunId): 400. Unknown runs: 404. Core busy, or too many
// history queries at once (RESOURCE_EXHAUSTED, "busy, retry"): 503 with
// Retry-After.
#ifndef CMAX_COORDINATOR_WEB_WEB_ROUTES_H_
#define CMAX_COORDINATOR_WEB_WEB_ROUTES_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "cmax/v1/incident.pb.h"
#include "cmax/v1/scorecard.pb.h"
#include "cmax/v1/service.pb.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace cmax::coordinator::web {

// Where the web view's data comes from (a seam: tests give a fake).
class WebSource {
 public:
  virtual ~WebSource() = default;
  virtual absl::StatusOr<v1::ListAgentsResponse> Agents() = 0;
  virtual absl::StatusOr<v1::ListRunsResponse> Runs(int limit) = 0;
  // NOT_FOUND for an unknown run.
  virtual absl::StatusOr<v1::GetRunResponse> Run(const std::string& run_id) = 0;
  // A node's history (`node` empty: the fleet's; docs/history.md).
  // NOT_FOUND for a node no run had. Default: UNIMPLEMENTED (501).
  virtual absl::StatusOr<v1::GetHistoryResponse> History(const std::string& node) {
    (void)node;
    return absl::UnimplementedError("history is not available here");
  }
  // The fault loop's incidents on `node`, closed ones too (GetRemediation).
  // Default: UNIMPLEMENTED (the node page says they are not available).
  virtual absl::StatusOr<v1::RemediationStatus> Remediation(const std::string& node) {
    (void)node;
    return absl::UnimplementedError("remediation incidents are not available here");
  }
};

// Renders the comparison page of two scorecards (a first, b second).
using ComparePage = std::function<absl::StatusOr<std::string>(const v1::Scorecard&,
                                                              const v1::Scorecard&)>;

struct WebOptions {
  // HOST:PORT, [V6]:PORT, or a bare PORT (then 127.0.0.1). Port 0: any free one.
  std::string listen;
  std::string token;  // empty: nothing asked (the coordinator's --no-token)
  // Also accepted, as a bearer token or at the sign-in form
  // (--read-token-file): the view only reads. Empty: only `token`.
  std::string read_token;
  std::string tls_cert_file;  // PEM; both or neither; then HTTPS
  std::string tls_key_file;
  // <data dir>/reports: scorecards are <report_root>/<run>/scorecard.{html,md,json}.
  std::string report_root;
  int max_runs = 200;        // runs listed by / and /api/runs
  ComparePage compare_page;  // unset: /compare answers 501
  // /compare parses each scorecard.json in memory: a larger one is refused
  // (500, naming this limit and the download). Parsed cards are kept, the
  // latest 8 and at most twice this many bytes of JSON, while their files
  // are unchanged. Scorecard downloads are streamed, a chunk at a time,
  // whatever their size.
  int64_t max_compare_bytes = int64_t{64} << 20;
  absl::Duration session_lifetime = absl::Hours(12);
  absl::Duration poll_hold = absl::Seconds(1);
  // How long a wrong token at the sign-in form holds its answer (that
  // connection's thread only), to slow guessing down.
  absl::Duration wrong_token_pause = absl::Milliseconds(250);
};

struct PageContext;

class WebRoutes {
 public:
  // session_key: the secret that signs session cookies (made at start,
  // never stored); tls: cookies get the Secure attribute.
  WebRoutes(WebOptions options, std::unique_ptr<WebSource> source,
            std::string session_key, bool tls);
  WebRoutes(const WebRoutes&) = delete;
  WebRoutes& operator=(const WebRoutes&) = delete;

  // The pre-routing check, the error handler and every route above. The
  // server must not outlive this object.
  void Install(httplib::Server& srv);

  const WebOptions& options() const { return options_; }

 private:
  std::string Mac(absl::string_view data) const;
  absl::StatusOr<std::string> NewSession();
  std::string SessionNonce(const httplib::Request& req) const;
  bool ValidSession(const httplib::Request& req) const;
  std::string CookieAttributes() const;
  PageContext Context(const httplib::Request& req) const;
  void Error(const httplib::Request& req, httplib::Response& res, const absl::Status& s,
             bool page) const;
  bool LoadRun(const httplib::Request& req, httplib::Response& res, const std::string& id,
               bool page, v1::GetRunResponse* out);
  void NodePage(const httplib::Request& req, httplib::Response& res, const std::string& node);
  // The run's parsed scorecard.json, from the cache while its file's size
  // and mtime are unchanged. NOT_FOUND: none yet; RESOURCE_EXHAUSTED: larger
  // than options_.max_compare_bytes; INTERNAL: unreadable or not a card.
  absl::StatusOr<std::shared_ptr<const v1::Scorecard>> LoadScorecard(const std::string& run_id);

  const WebOptions options_;
  const std::unique_ptr<WebSource> source_;
  const std::string session_key_;  // hex of 32 random bytes
  const bool tls_;
  // The sessions signed in and not yet signed out: nonce -> expiry (unix s).
  // A cookie is honoured only while its nonce is here, so /logout ends it
  // for good, not just in the browser that sent it. At most kMaxSessions
  // (the ones that expire first go when a new one needs room).
  static constexpr size_t kMaxSessions = 4096;
  mutable absl::Mutex sessions_mu_;
  std::map<std::string, int64_t> sessions_ ABSL_GUARDED_BY(sessions_mu_);
  // Parsed scorecards for /compare, by file path (LoadScorecard).
  struct CachedCard {
    int64_t size = 0, mtime_ns = 0;
    std::shared_ptr<const v1::Scorecard> card;
    int64_t used = 0;  // cards_clock_ at the last use
  };
  static constexpr size_t kMaxCachedCards = 8;
  absl::Mutex cards_mu_;
  std::map<std::string, CachedCard> cards_ ABSL_GUARDED_BY(cards_mu_);
  int64_t cards_clock_ ABSL_GUARDED_BY(cards_mu_) = 0;
};

}  // namespace cmax::coordinator::web

#endif  // CMAX_COORDINATOR_WEB_WEB_ROUTES_H_
