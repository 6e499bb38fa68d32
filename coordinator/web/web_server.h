// The coordinator's web view (--http-listen): the agents with their states,
// the runs, a live page per run, every scorecard (HTML, Markdown, the JSON
// export as a download) and, when built in, the comparison of two runs.
// Served by cpp-httplib (common/http_server.h) on threads of its own; data
// comes from the core thread through WebSource (CoreWebSource: Post and
// wait, like RenderMetrics), scorecard files are read from the report
// directory on the server's threads.
//
// The routes, who may ask and the sessions: coordinator/web/web_routes.h.
#ifndef CMAX_COORDINATOR_WEB_WEB_SERVER_H_
#define CMAX_COORDINATOR_WEB_WEB_SERVER_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "coordinator/web/web_routes.h"

namespace cmax::coordinator {
class CoordinatorCore;
}

namespace cmax::coordinator::web {

// The core's snapshots (CoordinatorCore::Snapshot*), each waiting at most `timeout`.
std::unique_ptr<WebSource> MakeCoreWebSource(CoordinatorCore* core,
                                             absl::Duration timeout);

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
