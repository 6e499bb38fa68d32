#include "common/metrics_http.h"

#include "absl/strings/str_cat.h"
#include "common/http_server.h"
#include "common/metrics_routes.h"

namespace cmax {

struct MetricsHttpServer::Impl {
  std::unique_ptr<HttpListener> listener;
};

void AddMetricsRoutes(httplib::Server& srv, const std::string& token,
                      const std::string& read_token,
                      std::function<absl::StatusOr<std::string>()> render) {
  srv.set_pre_routing_handler([token, read_token](const httplib::Request& req,
                                                  httplib::Response& res) {
    if (token.empty() || BearerTokenMatches(req, token) || BearerTokenMatches(req, read_token)) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    res.status = 401;
    res.set_header("WWW-Authenticate", "Bearer");
    res.set_content("401 unauthorized: a bearer token is required\n", "text/plain");
    return httplib::Server::HandlerResponse::Handled;
  });
  srv.Get("/metrics", [render = std::move(render)](const httplib::Request&,
                                                   httplib::Response& res) {
    absl::StatusOr<std::string> text = render();
    if (!text.ok()) {
      res.status = 503;
      res.set_content(absl::StrCat("503 metrics unavailable: ", text.status().message(), "\n"),
                      "text/plain");
      return;
    }
    res.set_content(*text, "text/plain; version=0.0.4; charset=utf-8");
  });
}

absl::Status ParseListen(const std::string& listen, std::string* host, int* port) {
  return ParseHttpListen(listen, "--metrics-listen", host, port);
}

absl::StatusOr<std::unique_ptr<MetricsHttpServer>> MetricsHttpServer::Start(
    const MetricsHttpOptions& options, Render render) {
  HttpListenOptions lo;
  lo.name = "metrics";
  lo.flag = "--metrics-listen";
  lo.listen = options.listen;
  lo.tls_cert_file = options.tls_cert_file;
  lo.tls_key_file = options.tls_key_file;
  lo.allow_insecure = options.allow_insecure;
  // A scraper or two: one connection each, now and then.
  lo.limits.max_connections = 16;
  lo.limits.max_connections_per_peer = 4;
  auto listener = HttpListener::Start(lo, [&](httplib::Server& srv) {
    AddMetricsRoutes(srv, options.token, options.read_token, std::move(render));
  });
  if (!listener.ok()) return listener.status();
  auto out = std::unique_ptr<MetricsHttpServer>(new MetricsHttpServer());
  out->host_ = (*listener)->host();
  out->port_ = (*listener)->port();
  out->tls_ = (*listener)->tls();
  out->impl_ = std::make_unique<Impl>();
  out->impl_->listener = std::move(*listener);
  return out;
}

MetricsHttpServer::~MetricsHttpServer() { Stop(); }

void MetricsHttpServer::Stop() {
  if (!impl_) return;
  impl_->listener->Stop();
  impl_.reset();
}

}  // namespace cmax
