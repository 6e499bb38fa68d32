// The /metrics endpoint where cpp-httplib cannot be carried: the node
// tarball's cmax-agent (deploy/node-bundle.sh). Debian's libcpp-httplib
// needs GLIBCXX_3.4.30, above the floor the tarball keeps (glibc 2.34,
// GLIBCXX_3.4.29: RHEL/Rocky 9, Ubuntu 22.04), and Debian ships no archive
// of it. --metrics-listen is then refused at start-up with the reason and
// what to do instead; nothing else of the agent changes.
#include "absl/status/status.h"
#include "common/metrics_http.h"

namespace cmax {

struct MetricsHttpServer::Impl {};

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const MetricsHttpOptions& options, Render) {
  return absl::FailedPreconditionError(
      "--metrics-listen " + options.listen +
      ": this cmax-agent is the node tarball's, built without the HTTP endpoint (Debian's "
      "cpp-httplib needs GLIBCXX_3.4.30, above the tarball's floor). The coordinator's "
      "/metrics tells whether this agent is connected and busy; on a Debian 12 node the "
      "cmax-agent package serves the agent's own");
}

MetricsHttpServer::~MetricsHttpServer() = default;

void MetricsHttpServer::Stop() { impl_.reset(); }

}  // namespace cmax
