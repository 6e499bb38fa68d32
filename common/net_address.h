// Deciding whether a gRPC target or listen address stays on this host.
//
// The decision parses the address; it never compares string prefixes
// ("127.evil.com:1" is a name, not 127.0.0.0/8) and never asks DNS (a
// resolver could answer anything, and tests must send no traffic off the
// host). Loopback means: an IPv4 literal in 127.0.0.0/8, the IPv6 literal
// ::1 (or ::ffff:127.x.y.z), the name "localhost" itself (RFC 6761 section
// 6.3: it always resolves to loopback), or a Unix-domain socket target
// ("unix:PATH", "unix-abstract:NAME"). Everything else -- other names
// included -- counts as remote.
#ifndef CMAX_COMMON_NET_ADDRESS_H_
#define CMAX_COMMON_NET_ADDRESS_H_

#include <string>

#include "absl/status/status.h"

namespace cmax {

// `target`: HOST:PORT, [V6]:PORT, a bare host, or a gRPC URI with the
// schemes dns:///, ipv4:, ipv6: or unix:. True only when every address it
// names is loopback (see above).
bool IsLoopbackTarget(const std::string& target);

// The host part of HOST:PORT or [V6]:PORT ("" when there is none).
std::string HostOfTarget(const std::string& target);

// Sending a bearer token without TLS: OK when there is no token, TLS is on,
// or `target` is loopback; otherwise OK only with `allow_insecure` (the
// caller then logs a loud warning), else FAILED_PRECONDITION naming the
// target and the flags that fix it. `who` names the program in the message.
absl::Status CheckTokenTransport(const std::string& who, const std::string& target,
                                 bool has_token, bool tls, bool allow_insecure);

// Why a listener on `host`:`port` could not bind, in bind(2)'s words, for the
// error a daemon exits with after its server library said only "failed":
// "127.0.0.1:8470 is in use (another cmax daemon, or another program,
// listens there)" for EADDRINUSE, else the errno's text. It binds a socket
// of its own (no SO_REUSEPORT), closes it at once, and resolves numeric
// addresses and "localhost" only. "" when that bind succeeds (the port came
// free since).
std::string DescribeBindFailure(const std::string& host, int port);

}  // namespace cmax

#endif  // CMAX_COMMON_NET_ADDRESS_H_
