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
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "absl/strings/match.h"
#include "common/http_guard.h"
#include "common/metrics_routes.h"

namespace {

constexpr char kToken[] = "fuzz-token-0123456789";
constexpr char kReadToken[] = "fuzz-read-token-abcdef";

// Exposes the request loop of cpp-httplib's server for one stream.
class FuzzServer : public httplib::Server {
 public:
  bool Serve(httplib::Stream& s, bool last) {
    bool closed = false;
    return process_request(s, last, closed, nullptr) && !closed;
  }
};

// The input as a connection: reads pass the guard, writes are kept.
class InputStream : public httplib::Stream {
 public:
  InputStream(const uint8_t* data, size_t size, const cmax::HttpLimits& limits)
      : data_(reinterpret_cast<const char*>(data)), size_(size), guard_(limits) {}

  bool is_readable() const override { return pos_ < size_ && !guard_.refused(); }
  bool is_writable() const override { return true; }
  ssize_t read(char* ptr, size_t size) override {
    if (guard_.refused() || pos_ >= size_) return guard_.refused() ? -1 : 0;
    const size_t want = std::min(size, size_ - pos_);
    const size_t ok = guard_.Admit(absl::string_view(data_ + pos_, want));
    if (ok == 0) return -1;
    std::memcpy(ptr, data_ + pos_, ok);
    pos_ += ok;
    return static_cast<ssize_t>(ok);
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (out_.size() < (1u << 20)) out_.append(ptr, size);
    return static_cast<ssize_t>(size);
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 40000;
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    ip = "127.0.0.1";
    port = 8470;
  }
  socket_t socket() const override { return -1; }

  bool done() const { return pos_ >= size_ || guard_.refused(); }
  const std::string& out() const { return out_; }

 private:
  const char* data_;
  size_t size_;
  size_t pos_ = 0;
  cmax::HttpHeadGuard guard_;
  std::string out_;
};

FuzzServer* Server() {
  static FuzzServer* server = [] {
    auto* s = new FuzzServer();
    s->set_payload_max_length(cmax::HttpLimits{}.max_body_bytes);
    cmax::AddMetricsRoutes(*s, kToken, kReadToken,
                           [] { return absl::StatusOr<std::string>("cmax_up 1\n"); });
    return s;
  }();
  return server;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const cmax::HttpLimits limits;
  InputStream stream(data, size, limits);
  for (int i = 0; i < 8 && !stream.done(); ++i) {
    if (!Server()->Serve(stream, i == 7)) break;
  }
  const std::string& out = stream.out();
  if (!out.empty() && !absl::StartsWith(out, "HTTP/1.1 ")) std::abort();
  if (absl::StrContains(out, "HTTP/1.1 200")) {
    const std::string in(reinterpret_cast<const char*>(data), size);
    if (!absl::StrContains(in, kToken) && !absl::StrContains(in, kReadToken)) std::abort();
  }
  return 0;
}
