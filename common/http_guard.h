// What stands between a network peer and cpp-httplib's request parser on
// every HTTP listener of cmax (common/http_server.h): the web view and the
// /metrics endpoints. cpp-httplib 0.11 (Debian bookworm) reads any number of
// header lines, a chunked or length-less body of any size, and gives a slow
// client its thread for as long as it sends a byte every read timeout; all
// of that before a handler could ask for a credential. So the bytes reach it
// only through a guard that enforces, before any credential is checked:
//
//   - a request head (request line and headers) of at most max_head_bytes
//     and max_head_lines lines, else 431;
//   - a body only with a Content-Length of at most max_body_bytes: a
//     Transfer-Encoding, or a POST/PUT/PATCH without a length, is 411, a
//     longer one 413, refused before a byte of the body is read;
//   - one deadline for the whole request (head and body, from its first
//     byte or the end of the previous one), else 408;
//   - at most max_connections connections at once and
//     max_connections_per_peer from one address, else 503 at once;
// and the refused connection is closed. The rules are a plain class
// (HttpHeadGuard) so tests and the fuzz target drive them without sockets.
#ifndef CMAX_COMMON_HTTP_GUARD_H_
#define CMAX_COMMON_HTTP_GUARD_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/strings/string_view.h"

namespace cmax {

struct HttpLimits {
  size_t max_head_bytes = 16 * 1024;
  int max_head_lines = 64;  // the request line and the headers
  size_t max_body_bytes = 4096;
  std::chrono::milliseconds request_deadline{10000};
  int max_connections = 64;
  int max_connections_per_peer = 16;
};

// The byte-level rules for a stream of HTTP/1.1 requests on one
// connection, fed the bytes in the order the parser will read them.
// A head ends with an empty line "\r\n", as cpp-httplib reads it (a line
// ending in a bare "\n" is a line it skips: it counts here as a line).
// Not thread-safe: one per connection.
class HttpHeadGuard {
 public:
  struct Refusal {
    int status = 0;      // 0: none
    std::string reason;  // one line for the response body and the log
  };

  explicit HttpHeadGuard(const HttpLimits& limits) : limits_(limits) {}

  // How many of `bytes` may be passed on: all of them, or fewer when a
  // rule is broken -- then refusal() says which, and nothing more of this
  // connection may reach the parser. A head's last byte is passed only
  // once the head as a whole is accepted.
  size_t Admit(absl::string_view bytes);

  const Refusal& refusal() const { return refusal_; }
  bool refused() const { return refusal_.status != 0; }
  // True between requests: no byte of the next one has been admitted yet.
  bool at_request_start() const { return state_ == State::kHead && head_.empty(); }

 private:
  enum class State { kHead, kBody };
  // Checks the completed head (in head_): sets body_left_ or the refusal.
  void CheckHead();
  void Refuse(int status, std::string reason);

  HttpLimits limits_;
  State state_ = State::kHead;
  std::string head_;  // the current head, at most max_head_bytes
  int lines_ = 0;     // complete lines in head_
  uint64_t body_left_ = 0;
  Refusal refusal_;
};

// The whole answer a refused request gets before its connection closes:
// "HTTP/1.1 <status> <text>", Connection: close, the reason as text/plain.
std::string HttpRefusalResponse(int status, absl::string_view reason);

}  // namespace cmax

#endif  // CMAX_COMMON_HTTP_GUARD_H_
