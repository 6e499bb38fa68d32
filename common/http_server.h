// What the HTTP endpoints of cmax share (the /metrics endpoint of the
// coordinator and the agent, common/metrics_http.h, and the coordinator's
// web view, coordinator/web/web_server.h): a cpp-httplib server (Debian's
// libcpp-httplib) bound on a listen address with the loopback/TLS rule, run
// on a thread of its own, every connection admitted and read through the
// guard of common/http_guard.h, and the constant-time bearer token check.
//
// Only the .cc files of those endpoints include this header (it pulls in
// httplib.h); their own headers stay free of it.
#ifndef CMAX_COMMON_HTTP_SERVER_H_
#define CMAX_COMMON_HTTP_SERVER_H_

#include <httplib.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "common/http_guard.h"

namespace cmax {

struct HttpListenOptions {
  std::string name;  // in messages: "metrics", "web"
  std::string flag;  // in messages: "--metrics-listen", "--http-listen"
  // HOST:PORT, [V6]:PORT, or a bare PORT (then 127.0.0.1). Port 0: any free one.
  std::string listen;
  std::string tls_cert_file;  // PEM; both or neither
  std::string tls_key_file;
  // Beyond loopback without TLS. The web view never sets it.
  bool allow_insecure = false;
  // What the refusal beyond loopback without TLS suggests.
  std::string insecure_hint = "(the same ones as the gRPC listener), or --allow-insecure";
  // What a peer may send and hold before any credential is checked
  // (common/http_guard.h): head and body sizes, the request deadline,
  // connections in all and from one address.
  HttpLimits limits;
  int io_timeout_s = 5;
  // How long an idle keep-alive connection holds its thread.
  int keep_alive_timeout_s = 5;
};

// A bound server serving on its own thread until Stop() (or destruction).
class HttpListener {
 public:
  // Parses and checks the listen address, loads TLS, calls `routes` to add
  // the handlers, binds and starts serving. Errors: INVALID_ARGUMENT (listen
  // address), FAILED_PRECONDITION (beyond loopback without TLS, TLS files
  // unusable), UNAVAILABLE (cannot bind).
  static absl::StatusOr<std::unique_ptr<HttpListener>> Start(
      const HttpListenOptions& options,
      const std::function<void(httplib::Server&)>& routes);
  ~HttpListener();  // Stop()
  void Stop();
  int port() const { return port_; }
  const std::string& host() const { return host_; }
  bool tls() const { return tls_; }

 private:
  HttpListener() = default;
  std::unique_ptr<httplib::Server> server_;
  std::thread thread_;
  std::string host_;
  int port_ = 0;
  bool tls_ = false;
};

// Splits a listen address into host and port (a bare port means 127.0.0.1);
// `flag` names it in errors.
absl::Status ParseHttpListen(const std::string& listen, const std::string& flag,
                             std::string* host, int* port);

// True when the request carries "Authorization: Bearer <token>" matching
// `token` (compared in constant time). False for an empty `token`: whether
// one is asked at all is the caller's decision.
bool BearerTokenMatches(const httplib::Request& req, const std::string& token);

}  // namespace cmax

#endif  // CMAX_COMMON_HTTP_SERVER_H_
