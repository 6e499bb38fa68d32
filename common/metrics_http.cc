#include "common/metrics_http.h"

#include "absl/strings/str_cat.h"
#include "common/http_server.h"

namespace cmax {

struct MetricsHttpServer::Impl {
  std::unique_ptr<HttpListener> listener;
};

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
  const std::string token = options.token;
  auto listener = HttpListener::Start(lo, [&](httplib::Server& srv) {
    srv.set_pre_routing_handler([token](const httplib::Request& req, httplib::Response& res) {
      if (token.empty() || BearerTokenMatches(req, token)) {
        return httplib::Server::HandlerResponse::Unhandled;
      }
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
