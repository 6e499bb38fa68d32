// The /metrics endpoint's routes on a cpp-httplib server: the bearer token
// check before routing and GET /metrics (see common/metrics_http.h for the
// rules). Apart from MetricsHttpServer, the HTTP fuzz target
// (tests/fuzz/http_request_fuzz.cc) serves them.
#ifndef CMAX_COMMON_METRICS_ROUTES_H_
#define CMAX_COMMON_METRICS_ROUTES_H_

#include <httplib.h>

#include <functional>
#include <string>

#include "absl/status/statusor.h"

namespace cmax {

// `token` empty: nothing asked. `read_token` (may be empty) is accepted
// besides `token`.
void AddMetricsRoutes(httplib::Server& srv, const std::string& token,
                      const std::string& read_token,
                      std::function<absl::StatusOr<std::string>()> render);

}  // namespace cmax

#endif  // CMAX_COMMON_METRICS_ROUTES_H_
