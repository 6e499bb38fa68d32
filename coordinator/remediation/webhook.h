// The escalation webhook (policy `escalate.webhook`): its URL, parsed once,
// and the delivery rule (one try and at most `retries` more, with a doubling
// back-off; a 2xx answer is delivered). The HTTP request itself is a seam
// (WebhookPoster): webhook_http.h is cpp-httplib's, which a bundle build
// (no cpp-httplib) does not link.
//
// A webhook URL often carries a token (userinfo, query string): only
// WebhookUrl::Redacted() (scheme://host:port/path) may reach a log, an
// error message or the incident.
#ifndef CMAX_COORDINATOR_REMEDIATION_WEBHOOK_H_
#define CMAX_COORDINATOR_REMEDIATION_WEBHOOK_H_

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace cmax::remediation {

struct WebhookUrl {
  std::string scheme;    // "http" or "https"
  std::string userinfo;  // "user:password" or empty (never logged)
  std::string host;      // a name, an IPv4 address or "[v6]"
  int port = 0;          // the URL's, else 80 / 443
  std::string path;      // "/..." (at least "/")
  std::string query;     // without '?', empty if none (never logged)

  // scheme://host:port/path: what logs and messages may show.
  std::string Redacted() const;
  // path?query: what the request asks for.
  std::string Target() const;
};

// OK: an http:// or https:// URL with a host; the error never repeats the
// URL (it may carry a token).
absl::StatusOr<WebhookUrl> ParseWebhookUrl(absl::string_view url);

// One POST of `body` (application/json). OK: the HTTP status the server
// answered (any status); not OK: no answer (refused, timed out, TLS).
using WebhookPoster = std::function<absl::StatusOr<int>(
    const WebhookUrl& url, const std::string& body, absl::Duration timeout)>;

struct WebhookRetry {
  int retries = 2;                         // after the first try
  absl::Duration backoff = absl::Seconds(1);  // before the first retry, doubling
  absl::Duration timeout = absl::Seconds(10);  // per try
};

// Delivers `body`; blocks through the retries (run it off the core thread).
// OK: a 2xx answer, `outcome` says which and after how many tries; not OK:
// the last try's answer or error, with the number of tries.
absl::Status SendWebhook(const WebhookPoster& post, const WebhookUrl& url,
                         const std::string& body, const WebhookRetry& retry,
                         std::string* outcome);

}  // namespace cmax::remediation

#endif  // CMAX_COORDINATOR_REMEDIATION_WEBHOOK_H_
