#include "common/net_address.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace cmax {
namespace {

bool IsLoopbackHost(std::string host) {
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  if (host.empty()) return false;
  // RFC 6761 6.3; a trailing dot is the same (fully qualified) name.
  std::string lower = absl::AsciiStrToLower(host);
  if (lower == "localhost" || lower == "localhost.") return true;
  in_addr v4{};
  if (inet_pton(AF_INET, host.c_str(), &v4) == 1) {
    return (ntohl(v4.s_addr) >> 24) == 127;  // 127.0.0.0/8 (RFC 1122 3.2.1.3)
  }
  in6_addr v6{};
  if (inet_pton(AF_INET6, host.c_str(), &v6) == 1) {
    if (IN6_IS_ADDR_LOOPBACK(&v6)) return true;  // ::1 (RFC 4291 2.5.3)
    if (IN6_IS_ADDR_V4MAPPED(&v6)) return v6.s6_addr[12] == 127;
    return false;
  }
  return false;  // any other name: not trusted to be local
}

}  // namespace

std::string HostOfTarget(const std::string& target) {
  std::string t = target;
  if (t.empty()) return "";
  if (t[0] == '[') {
    size_t close = t.find(']');
    if (close == std::string::npos) return "";
    // "[v6]" or "[v6]:port"; anything else after ']' is not an address.
    if (close + 1 < t.size() && t[close + 1] != ':') return t;
    return t.substr(0, close + 1);
  }
  size_t colon = t.rfind(':');
  // More than one ':' without brackets: a bare IPv6 literal.
  if (colon != std::string::npos && t.find(':') != colon) return t;
  return colon == std::string::npos ? t : t.substr(0, colon);
}

bool IsLoopbackTarget(const std::string& target_in) {
  absl::string_view target = target_in;
  if (absl::StartsWith(target, "unix:") || absl::StartsWith(target, "unix-abstract:")) {
    return true;
  }
  // gRPC naming: dns:[//authority/]host:port, ipv4:a:p,b:p, ipv6:[a]:p,...
  if (absl::ConsumePrefix(&target, "dns:")) {
    if (absl::StartsWith(target, "//")) {
      size_t slash = target.find('/', 2);
      if (slash == absl::string_view::npos) return false;
      if (slash != 2) return false;  // a DNS server of its own choosing
      target = target.substr(slash + 1);
    }
    return IsLoopbackHost(HostOfTarget(std::string(target)));
  }
  if (absl::ConsumePrefix(&target, "ipv4:") || absl::ConsumePrefix(&target, "ipv6:")) {
    std::vector<std::string> parts = absl::StrSplit(target, ',');
    if (parts.empty()) return false;
    for (const std::string& p : parts) {
      if (!IsLoopbackHost(HostOfTarget(p))) return false;
    }
    return true;
  }
  return IsLoopbackHost(HostOfTarget(std::string(target)));
}

absl::Status CheckTokenTransport(const std::string& who, const std::string& target,
                                 bool has_token, bool tls, bool allow_insecure) {
  if (!has_token || tls || IsLoopbackTarget(target) || allow_insecure) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      who, ": refusing to send the bearer token in clear text to ", target,
      " (not a loopback address): give --tls-ca (the coordinator's CA) so the channel is "
      "encrypted, or --allow-insecure to send it anyway"));
}

std::string DescribeBindFailure(const std::string& host, int port) {
  const std::string shown = host.find(':') != std::string::npos
                                ? absl::StrCat("[", host, "]:", port)
                                : absl::StrCat(host, ":", port);
  sockaddr_storage addr{};
  socklen_t len = 0;
  const std::string h = host == "localhost" ? "127.0.0.1" : host;
  if (auto* v4 = reinterpret_cast<sockaddr_in*>(&addr);
      inet_pton(AF_INET, h.empty() ? "0.0.0.0" : h.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(static_cast<uint16_t>(port));
    len = sizeof(sockaddr_in);
  } else if (auto* v6 = reinterpret_cast<sockaddr_in6*>(&addr);
             inet_pton(AF_INET6, h.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(static_cast<uint16_t>(port));
    len = sizeof(sockaddr_in6);
  } else {
    return absl::StrCat(shown, ": not a numeric address this host can bind");
  }
  const int fd = socket(addr.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::StrCat(shown, ": ", strerror(errno));
  const int yes = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
  const int rc = bind(fd, reinterpret_cast<sockaddr*>(&addr), len);
  const int err = errno;
  close(fd);
  if (rc == 0) return "";
  if (err == EADDRINUSE) {
    return absl::StrCat(shown, " is in use (another cmax daemon, or another program, listens "
                        "there)");
  }
  return absl::StrCat(shown, ": ", strerror(err));
}

}  // namespace cmax
