// libFuzzer target: the HTTP request path of cmax's listeners, from the
// first byte a peer sends to the handler's answer. The bytes go through the
// guard (common/http_guard.h) as a connection's do, then into cpp-httplib's
// parser and the /metrics endpoint's own routes (common/metrics_routes.h:
// the bearer check before routing, GET /metrics), up to 8 requests a
// connection.
//
// Properties beyond "no crash" (ASan and UBSan watch the guard and the
// routes; cpp-httplib is Debian's, not instrumented):
//   - every answer starts with a status line;
//   - no answer is 200 unless the input carried one of the two tokens in an
//     Authorization header: nothing gets past the credential check.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "common/http_guard.h"
#include "common/metrics_routes.h"
#include "tests/fuzz/http_input.h"

namespace {

constexpr char kToken[] = "fuzz-token-0123456789";
constexpr char kReadToken[] = "fuzz-read-token-abcdef";

cmax::fuzz::FuzzServer* Server() {
  static cmax::fuzz::FuzzServer* server = [] {
    auto* s = new cmax::fuzz::FuzzServer();
    s->set_payload_max_length(cmax::HttpLimits{}.max_body_bytes);
    cmax::AddMetricsRoutes(*s, kToken, kReadToken,
                           [] { return absl::StatusOr<std::string>("cmax_up 1\n"); });
    return s;
  }();
  return server;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string out = cmax::fuzz::ServeInput(*Server(), data, size, 8);
  if (!out.empty() && !absl::StartsWith(out, "HTTP/1.1 ")) std::abort();
  if (absl::StrContains(out, "HTTP/1.1 200")) {
    const std::string in(reinterpret_cast<const char*>(data), size);
    if (!absl::StrContains(in, kToken) && !absl::StrContains(in, kReadToken)) std::abort();
  }
  return 0;
}
