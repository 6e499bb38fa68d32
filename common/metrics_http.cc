#include "common/metrics_http.h"

#include <httplib.h>

#include <chrono>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/net_address.h"
#include "common/secrets.h"

namespace cmax {

struct MetricsHttpServer::Impl {
  std::unique_ptr<httplib::Server> server;
  std::thread thread;
};

absl::Status ParseListen(const std::string& listen, std::string* host, int* port) {
  std::string h;
  std::string p = listen;
  if (!listen.empty() && listen.front() == '[') {
    const size_t close = listen.find(']');
    if (close == std::string::npos || close + 1 >= listen.size() || listen[close + 1] != ':') {
      return absl::InvalidArgumentError(absl::StrCat("--metrics-listen '", listen,
                                                     "': expected [V6]:PORT"));
    }
    h = listen.substr(1, close - 1);
    p = listen.substr(close + 2);
  } else if (const size_t colon = listen.rfind(':'); colon != std::string::npos) {
    h = listen.substr(0, colon);
    p = listen.substr(colon + 1);
    if (h.find(':') != std::string::npos) {
      return absl::InvalidArgumentError(absl::StrCat("--metrics-listen '", listen,
                                                     "': write IPv6 addresses as [V6]:PORT"));
    }
  }
  int n = -1;
  if (!absl::SimpleAtoi(p, &n) || n < 0 || n > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat("--metrics-listen '", listen, "': expected HOST:PORT or PORT"));
  }
  *host = h.empty() ? "127.0.0.1" : h;
  *port = n;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const MetricsHttpOptions& options, Render render) {
  std::string host;
  int port = 0;
  if (absl::Status s = ParseListen(options.listen, &host, &port); !s.ok()) return s;
  const bool tls = !options.tls_cert_file.empty() || !options.tls_key_file.empty();
  if (tls && (options.tls_cert_file.empty() || options.tls_key_file.empty())) {
    return absl::FailedPreconditionError("metrics TLS needs both a certificate and a key");
  }
  const std::string target = host.find(':') != std::string::npos
                                 ? absl::StrCat("[", host, "]:", port)
                                 : absl::StrCat(host, ":", port);
  if (!IsLoopbackTarget(target) && !tls && !options.allow_insecure) {
    return absl::FailedPreconditionError(absl::StrCat(
        "--metrics-listen ", target, " is not loopback: give a TLS certificate and key "
        "(the same ones as the gRPC listener), or --allow-insecure"));
  }
  auto out = std::unique_ptr<MetricsHttpServer>(new MetricsHttpServer());
  out->impl_ = std::make_unique<Impl>();
  if (tls) {
    auto ssl = std::make_unique<httplib::SSLServer>(options.tls_cert_file.c_str(),
                                                    options.tls_key_file.c_str());
    if (!ssl->is_valid()) {
      return absl::FailedPreconditionError(
          absl::StrCat("metrics TLS: cannot load ", options.tls_cert_file, " and ",
                       options.tls_key_file));
    }
    out->impl_->server = std::move(ssl);
  } else {
    out->impl_->server = std::make_unique<httplib::Server>();
  }
  httplib::Server& srv = *out->impl_->server;
  // Two threads are plenty for a scraper or two; slow clients time out.
  srv.new_task_queue = [] { return new httplib::ThreadPool(2); };
  srv.set_read_timeout(5, 0);
  srv.set_write_timeout(5, 0);
  srv.set_keep_alive_max_count(16);
  srv.set_payload_max_length(4096);
  const std::string token = options.token;
  srv.set_pre_routing_handler([token](const httplib::Request& req, httplib::Response& res) {
    if (token.empty()) return httplib::Server::HandlerResponse::Unhandled;
    const std::string header = req.get_header_value("Authorization");
    constexpr absl::string_view kBearer = "Bearer ";
    const bool ok = absl::StartsWith(header, kBearer) &&
                    SameSecret(header.substr(kBearer.size()), token);
    if (ok) return httplib::Server::HandlerResponse::Unhandled;
    res.status = 401;
    res.set_header("WWW-Authenticate", "Bearer");
    res.set_content("401 unauthorized: a bearer token is required\n", "text/plain");
    return httplib::Server::HandlerResponse::Handled;
  });
  srv.Get("/metrics", [render](const httplib::Request&, httplib::Response& res) {
    absl::StatusOr<std::string> text = render();
    if (!text.ok()) {
      res.status = 503;
      res.set_content(absl::StrCat("503 metrics unavailable: ", text.status().message(), "\n"),
                      "text/plain");
      return;
    }
    res.set_content(*text, "text/plain; version=0.0.4; charset=utf-8");
  });
  const int bound = port == 0 ? srv.bind_to_any_port(host) : (srv.bind_to_port(host, port) ? port : -1);
  if (bound <= 0) {
    return absl::UnavailableError(absl::StrCat("metrics: cannot listen on ", target));
  }
  out->host_ = host;
  out->port_ = bound;
  out->tls_ = tls;
  out->impl_->thread = std::thread([&srv] { srv.listen_after_bind(); });
  // Stop() before the loop runs would not stop it: wait until it does.
  for (int i = 0; i < 500 && !srv.is_running(); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return out;
}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

void MetricsHttpServer::Stop() {
  if (!impl_) return;
  impl_->server->stop();
  if (impl_->thread.joinable()) impl_->thread.join();
  impl_.reset();
}

}  // namespace cmax
