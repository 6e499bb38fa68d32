// The /metrics endpoint of the coordinator and the agent (--metrics-listen),
// served by cpp-httplib on a thread of its own.
//
// The same rules as the gRPC listener: loopback unless configured otherwise;
// beyond loopback only with TLS (a certificate and key) or an explicit
// allow_insecure; and the bearer token ("Authorization: Bearer <token>",
// compared in constant time) on every request whenever a token is
// configured (or the read-only token, when one is) -- Prometheus sends it
// with `authorization: {credentials_file:}`.
// GET /metrics only: anything else is 404 or 405; a wrong or missing token
// is 401 with no detail; a render that fails is 503 with its message.
#ifndef CMAX_COMMON_METRICS_HTTP_H_
#define CMAX_COMMON_METRICS_HTTP_H_

#include <functional>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace cmax {

struct MetricsHttpOptions {
  // HOST:PORT, [V6]:PORT, or a bare PORT (then 127.0.0.1). Port 0: any free one.
  std::string listen;
  std::string token;         // empty: no token asked (only with --no-token)
  // A second token accepted here, and only for reading (--read-token-file):
  // what a scrape config holds, so its secret cannot submit runs or connect
  // as an agent. Empty: only `token`.
  std::string read_token;
  std::string tls_cert_file;  // PEM; both or neither
  std::string tls_key_file;
  bool allow_insecure = false;  // beyond loopback without TLS
};

class MetricsHttpServer {
 public:
  using Render = std::function<absl::StatusOr<std::string>()>;
  // Binds and starts serving. Errors: INVALID_ARGUMENT (listen address),
  // FAILED_PRECONDITION (beyond loopback without TLS, TLS files unusable),
  // UNAVAILABLE (cannot bind).
  static absl::StatusOr<std::unique_ptr<MetricsHttpServer>> Start(const MetricsHttpOptions& options,
                                                                  Render render);
  ~MetricsHttpServer();  // Stop()
  void Stop();
  int port() const { return port_; }
  const std::string& host() const { return host_; }
  bool tls() const { return tls_; }

 private:
  struct Impl;
  MetricsHttpServer() = default;
  std::unique_ptr<Impl> impl_;
  std::string host_;
  int port_ = 0;
  bool tls_ = false;
};

// Splits --metrics-listen into host and port (a bare port means 127.0.0.1).
absl::Status ParseListen(const std::string& listen, std::string* host, int* port);

}  // namespace cmax

#endif  // CMAX_COMMON_METRICS_HTTP_H_
