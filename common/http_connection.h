// The connection side of the HTTP guard (common/http_guard.h): a
// cpp-httplib server whose connections are admitted, read and written by
// cmax rather than by cpp-httplib, so that every byte its parser sees has
// passed HttpHeadGuard and every read has the request's deadline. TLS is
// done here too (OpenSSL), in place of httplib::SSLServer, so the same
// guard stands in front of HTTPS.
//
// Each admitted connection has a thread of its own, at most
// HttpLimits::max_connections of them; a connection over either cap is
// answered 503 (plain HTTP; under TLS it is closed) without a thread.
// Only common/http_server.cc includes this header.
#ifndef CMAX_COMMON_HTTP_CONNECTION_H_
#define CMAX_COMMON_HTTP_CONNECTION_H_

#include <httplib.h>
#include <openssl/ssl.h>

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "common/http_guard.h"

namespace cmax {

struct GuardedServerOptions {
  std::string name;  // the logger's component: "web", "metrics"
  HttpLimits limits;
  int io_timeout_s = 5;  // one read or write that makes no progress
  int keep_alive_timeout_s = 5;  // idle between two requests
  int keep_alive_max = 16;       // requests on one connection
  // PEM files; both empty: plain HTTP.
  std::string tls_cert_file;
  std::string tls_key_file;
};

// A server to add routes to and bind, like httplib::Server. Errors:
// FAILED_PRECONDITION when the TLS certificate or key cannot be used.
absl::StatusOr<std::unique_ptr<httplib::Server>> NewGuardedServer(
    const GuardedServerOptions& options);

}  // namespace cmax

#endif  // CMAX_COMMON_HTTP_CONNECTION_H_
