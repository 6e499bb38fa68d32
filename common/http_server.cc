#include "common/http_server.h"

#include <sys/socket.h>

#include <chrono>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/http_connection.h"
#include "common/logging.h"
#include "common/net_address.h"
#include "common/secrets.h"

namespace cmax {

absl::Status ParseHttpListen(const std::string& listen, const std::string& flag,
                             std::string* host, int* port) {
  std::string h;
  std::string p = listen;
  if (!listen.empty() && listen.front() == '[') {
    const size_t close = listen.find(']');
    if (close == std::string::npos || close + 1 >= listen.size() ||
        listen[close + 1] != ':') {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, " '", listen, "': expected [V6]:PORT"));
    }
    h = listen.substr(1, close - 1);
    p = listen.substr(close + 2);
  } else if (const size_t colon = listen.rfind(':'); colon != std::string::npos) {
    h = listen.substr(0, colon);
    p = listen.substr(colon + 1);
    if (h.find(':') != std::string::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat(flag, " '", listen, "': write IPv6 addresses as [V6]:PORT"));
    }
  }
  int n = -1;
  if (!absl::SimpleAtoi(p, &n) || n < 0 || n > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(flag, " '", listen, "': expected HOST:PORT or PORT"));
  }
  *host = h.empty() ? "127.0.0.1" : h;
  *port = n;
  return absl::OkStatus();
}

bool BearerTokenMatches(const httplib::Request& req, const std::string& token) {
  if (token.empty()) return false;
  const std::string header = req.get_header_value("Authorization");
  constexpr absl::string_view kBearer = "Bearer ";
  return absl::StartsWith(header, kBearer) &&
         SameSecret(header.substr(kBearer.size()), token);
}

absl::StatusOr<std::unique_ptr<HttpListener>> HttpListener::Start(
    const HttpListenOptions& options,
    const std::function<void(httplib::Server&)>& routes) {
  std::string host;
  int port = 0;
  if (absl::Status s = ParseHttpListen(options.listen, options.flag, &host, &port);
      !s.ok()) {
    return s;
  }
  const bool tls = !options.tls_cert_file.empty() || !options.tls_key_file.empty();
  if (tls && (options.tls_cert_file.empty() || options.tls_key_file.empty())) {
    return absl::FailedPreconditionError(
        absl::StrCat(options.name, " TLS needs both a certificate and a key"));
  }
  const std::string target = host.find(':') != std::string::npos
                                 ? absl::StrCat("[", host, "]:", port)
                                 : absl::StrCat(host, ":", port);
  if (!IsLoopbackTarget(target) && !tls && !options.allow_insecure) {
    return absl::FailedPreconditionError(absl::StrCat(
        options.flag, " ", target, " is not loopback: give a TLS certificate and key ",
        options.insecure_hint));
  }
  if (!IsLoopbackTarget(target) && !tls) {
    // Allowed, and said as loudly as the gRPC listener says it.
    GetLogger(options.name)
        ->warn("INSECURE: --allow-insecure: {} {} serves plain HTTP beyond loopback; the "
               "bearer token and every answer cross the network in clear text",
               options.flag, target);
  }
  GuardedServerOptions so;
  so.name = options.name;
  so.limits = options.limits;
  so.io_timeout_s = options.io_timeout_s;
  so.keep_alive_timeout_s = options.keep_alive_timeout_s;
  so.tls_cert_file = options.tls_cert_file;
  so.tls_key_file = options.tls_key_file;
  auto server = NewGuardedServer(so);
  if (!server.ok()) return server.status();
  auto out = std::unique_ptr<HttpListener>(new HttpListener());
  out->server_ = std::move(*server);
  httplib::Server& srv = *out->server_;
  routes(srv);
  // SO_REUSEADDR alone: cpp-httplib's default also sets SO_REUSEPORT, with
  // which a second daemon binds the same port and the kernel splits the
  // connections between the two.
  srv.set_socket_options([](socket_t sock) {
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  });
  const int bound =
      port == 0 ? srv.bind_to_any_port(host) : (srv.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    const std::string why = port == 0 ? "" : DescribeBindFailure(host, port);
    return absl::UnavailableError(absl::StrCat(options.name, ": cannot listen on ", target,
                                               why.empty() ? "" : ": ", why));
  }
  out->host_ = host;
  out->port_ = bound;
  out->tls_ = tls;
  out->thread_ = std::thread([&srv] { srv.listen_after_bind(); });
  // Stop() before the loop runs would not stop it: wait until it does.
  for (int i = 0; i < 500 && !srv.is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return out;
}

HttpListener::~HttpListener() { Stop(); }

void HttpListener::Stop() {
  if (!server_) return;
  server_->stop();
  if (thread_.joinable()) thread_.join();
  server_.reset();
}

}  // namespace cmax
