// The escalation webhook's HTTP request, with cpp-httplib's client (http, and
// https where Debian's cpp-httplib is built with OpenSSL, as bookworm's is:
// the server's certificate is verified against the system's CA store). A
// bundle build has no cpp-httplib and does not link this.
#ifndef CMAX_COORDINATOR_REMEDIATION_WEBHOOK_HTTP_H_
#define CMAX_COORDINATOR_REMEDIATION_WEBHOOK_HTTP_H_

#include "coordinator/remediation/webhook.h"

namespace cmax::remediation {

// A poster that POSTs the body as application/json; the URL's userinfo,
// if any, is sent as HTTP basic authentication. Thread-safe (a client a call).
WebhookPoster HttpWebhookPoster();

}  // namespace cmax::remediation

#endif  // CMAX_COORDINATOR_REMEDIATION_WEBHOOK_HTTP_H_
