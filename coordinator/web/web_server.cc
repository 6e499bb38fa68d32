#include "coordinator/web/web_server.h"

#include "absl/strings/str_cat.h"
#include "common/http_server.h"
#include "common/net_address.h"
#include "common/secrets.h"

namespace cmax::coordinator::web {

struct WebServer::Impl {
  std::unique_ptr<WebRoutes> routes;
  // Stopped before `routes` goes: its handlers point into it.
  std::unique_ptr<HttpListener> listener;
};

absl::StatusOr<std::unique_ptr<WebServer>> WebServer::Start(
    WebOptions options, std::unique_ptr<WebSource> source) {
  HttpListenOptions lo;
  lo.name = "web";
  lo.flag = "--http-listen";
  lo.listen = options.listen;
  lo.tls_cert_file = options.tls_cert_file;
  lo.tls_key_file = options.tls_key_file;
  lo.allow_insecure = false;
  lo.insecure_hint =
      "(--tls-cert and --tls-key, the gRPC listener's); --allow-insecure does not "
      "apply to the web view";
  // Each connection has a thread until it closes, and a browser keeps up to
  // 6 open; a waiting /api/runs/ID holds one up to poll_hold. So: room for
  // a few browsers from one address and some more in all, idle connections
  // closed soon; the sign-in form's body is far under the 4 KiB a body may
  // have (common/http_guard.h).
  lo.limits.max_connections = 64;
  lo.limits.max_connections_per_peer = 16;
  lo.keep_alive_timeout_s = 2;
  // Beyond loopback a token is asked as well (checked before binding).
  {
    std::string host;
    int port = 0;
    if (auto s = ParseHttpListen(options.listen, lo.flag, &host, &port); !s.ok())
      return s;
    const std::string target = host.find(':') != std::string::npos
                                   ? absl::StrCat("[", host, "]:", port)
                                   : absl::StrCat(host, ":", port);
    if (!IsLoopbackTarget(target) && options.token.empty()) {
      return absl::FailedPreconditionError(
          absl::StrCat("--http-listen ", target,
                       " is not loopback: the web view needs a token there "
                       "(--token-file), not --no-token"));
    }
  }
  auto key = RandomHex(32);
  if (!key.ok())
    return absl::InternalError(absl::StrCat("session key: ", key.status().message()));
  const bool tls = !options.tls_cert_file.empty() || !options.tls_key_file.empty();
  auto out = std::unique_ptr<WebServer>(new WebServer());
  out->impl_ = std::make_unique<Impl>();
  Impl* impl = out->impl_.get();
  impl->routes =
      std::make_unique<WebRoutes>(std::move(options), std::move(source), *key, tls);
  auto listener = HttpListener::Start(
      lo, [routes = impl->routes.get()](httplib::Server& srv) { routes->Install(srv); });
  if (!listener.ok()) return listener.status();
  impl->listener = std::move(*listener);
  return out;
}

WebServer::~WebServer() { Stop(); }

void WebServer::Stop() {
  if (impl_ && impl_->listener) impl_->listener->Stop();
}

int WebServer::port() const { return impl_->listener->port(); }
const std::string& WebServer::host() const { return impl_->listener->host(); }
bool WebServer::tls() const { return impl_->listener->tls(); }

}  // namespace cmax::coordinator::web
