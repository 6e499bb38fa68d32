#include "coordinator/remediation/webhook_http.h"

#include <httplib.h>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace cmax::remediation {
namespace {

void SetTimeouts(httplib::Client& client, absl::Duration timeout) {
  const int64_t us = absl::ToInt64Microseconds(timeout);
  const time_t sec = static_cast<time_t>(us / 1000000), usec = static_cast<time_t>(us % 1000000);
  client.set_connection_timeout(sec, usec);
  client.set_read_timeout(sec, usec);
  client.set_write_timeout(sec, usec);
}

absl::StatusOr<int> PostOnce(const WebhookUrl& url, const std::string& body,
                             absl::Duration timeout) {
#ifndef CPPHTTPLIB_OPENSSL_SUPPORT
  if (url.scheme == "https") {
    return absl::UnimplementedError("this cpp-httplib is built without TLS: https is not sent");
  }
#endif
  httplib::Client client(absl::StrCat(url.scheme, "://", url.host, ":", url.port));
  SetTimeouts(client, timeout);
  if (!url.userinfo.empty()) {
    const size_t colon = url.userinfo.find(':');
    client.set_basic_auth(url.userinfo.substr(0, colon),
                          colon == std::string::npos ? "" : url.userinfo.substr(colon + 1));
  }
  httplib::Result res = client.Post(url.Target(), body, "application/json");
  if (!res) {
    return absl::UnavailableError(absl::StrCat("no answer: ", httplib::to_string(res.error())));
  }
  return res->status;
}

}  // namespace

WebhookPoster HttpWebhookPoster() { return PostOnce; }

}  // namespace cmax::remediation
