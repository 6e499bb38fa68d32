#include "coordinator/remediation/webhook.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "absl/time/clock.h"

namespace cmax::remediation {
namespace {

bool HostChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == '_';
}

bool V6Char(char c) {
  return absl::ascii_isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.';
}

// host[:port] (userinfo already removed) into `u`.
absl::Status ParseHostPort(absl::string_view hp, WebhookUrl* u) {
  absl::string_view port;
  if (absl::StartsWith(hp, "[")) {
    const size_t end = hp.find(']');
    if (end == absl::string_view::npos || end < 2 ||
        !std::all_of(hp.begin() + 1, hp.begin() + end, V6Char)) {
      return absl::InvalidArgumentError("its IPv6 host is not [address]");
    }
    u->host = std::string(hp.substr(0, end + 1));
    hp.remove_prefix(end + 1);
    if (!hp.empty() && hp[0] != ':') return absl::InvalidArgumentError("junk after its host");
    if (!hp.empty()) port = hp.substr(1);
  } else {
    const size_t colon = hp.find(':');
    u->host = std::string(hp.substr(0, colon));
    if (colon != absl::string_view::npos) port = hp.substr(colon + 1);
    if (u->host.empty() || !std::all_of(u->host.begin(), u->host.end(), HostChar)) {
      return absl::InvalidArgumentError("it has no host name or address");
    }
  }
  u->port = u->scheme == "https" ? 443 : 80;
  if (port.empty()) return absl::OkStatus();
  if (!std::all_of(port.begin(), port.end(), absl::ascii_isdigit) ||
      !absl::SimpleAtoi(port, &u->port) || u->port < 1 || u->port > 65535) {
    return absl::InvalidArgumentError("its port is not 1..65535");
  }
  return absl::OkStatus();
}

}  // namespace

std::string WebhookUrl::Redacted() const {
  return absl::StrCat(scheme, "://", host, ":", port, path);
}

std::string WebhookUrl::Target() const {
  return query.empty() ? path : absl::StrCat(path, "?", query);
}

absl::StatusOr<WebhookUrl> ParseWebhookUrl(absl::string_view url) {
  WebhookUrl u;
  if (absl::ConsumePrefix(&url, "https://")) {
    u.scheme = "https";
  } else if (absl::ConsumePrefix(&url, "http://")) {
    u.scheme = "http";
  } else {
    return absl::InvalidArgumentError("it is not an http:// or https:// URL");
  }
  if (std::any_of(url.begin(), url.end(),
                  [](char c) { return static_cast<unsigned char>(c) <= ' ' || c == 0x7f; })) {
    return absl::InvalidArgumentError("it has a space or a control character");
  }
  if (const size_t hash = url.find('#'); hash != absl::string_view::npos) url = url.substr(0, hash);
  const size_t end = std::min(url.find('/'), url.find('?'));
  absl::string_view authority = url.substr(0, end);
  absl::string_view rest = end == absl::string_view::npos ? "" : url.substr(end);
  if (const size_t at = authority.rfind('@'); at != absl::string_view::npos) {
    u.userinfo = std::string(authority.substr(0, at));
    authority.remove_prefix(at + 1);
  }
  if (absl::Status s = ParseHostPort(authority, &u); !s.ok()) return s;
  const size_t q = rest.find('?');
  u.path = std::string(rest.substr(0, q));
  if (q != absl::string_view::npos) u.query = std::string(rest.substr(q + 1));
  if (u.path.empty()) u.path = "/";
  return u;
}

absl::Status SendWebhook(const WebhookPoster& post, const WebhookUrl& url, const std::string& body,
                         const WebhookRetry& retry, std::string* outcome) {
  absl::Status last = absl::UnavailableError("not tried");
  absl::Duration backoff = retry.backoff;
  const int tries = 1 + std::max(0, retry.retries);
  for (int i = 1; i <= tries; ++i) {
    if (i > 1) {
      absl::SleepFor(backoff);
      backoff *= 2;
    }
    absl::StatusOr<int> status = post(url, body, retry.timeout);
    if (status.ok() && *status >= 200 && *status < 300) {
      *outcome = absl::StrCat("HTTP ", *status, " (try ", i, " of ", tries, ")");
      return absl::OkStatus();
    }
    last = status.ok() ? absl::UnavailableError(absl::StrCat("HTTP ", *status))
                       : absl::UnavailableError(std::string(status.status().message()));
  }
  *outcome = absl::StrCat(last.message(), " (", tries, " tries)");
  return absl::UnavailableError(*outcome);
}

}  // namespace cmax::remediation
