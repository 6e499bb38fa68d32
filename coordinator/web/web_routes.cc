#include "coordinator/web/web_routes.h"

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <fstream>
#include <iterator>
#include <map>
#include <sstream>
#include <thread>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "common/http_server.h"
#include "common/logging.h"
#include "common/run_id.h"
#include "common/secrets.h"
#include "coordinator/web/pages.h"
#include "coordinator/web/remediation_section.h"
#include "google/protobuf/util/json_util.h"
#include "reports/scorecard.h"

namespace cmax::coordinator::web {
namespace {

constexpr char kCookie[] = "cmax_session";

int HttpStatusFor(const absl::Status& s) {
  switch (s.code()) {
    case absl::StatusCode::kInvalidArgument:
      return 400;
    case absl::StatusCode::kNotFound:
      return 404;
    case absl::StatusCode::kUnimplemented:
      return 501;
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kResourceExhausted:  // busy, retry (history queries)
      return 503;
    default:
      return 500;
  }
}

std::string ToJson(const google::protobuf::Message& m) {
  google::protobuf::util::JsonPrintOptions o;
  o.preserve_proto_field_names = true;
  std::string out;
  (void)google::protobuf::util::MessageToJsonString(m, &out, o);
  return out;
}

// "'sha256-<base64>'": a CSP source that admits exactly this inline script
// (CSP Level 2, "hash-source").
std::string ScriptHashSource(absl::string_view script) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(script.data(), script.size(), digest, &len, EVP_sha256(), nullptr);
  return absl::StrCat(
      "'sha256-",
      absl::Base64Escape(absl::string_view(reinterpret_cast<const char*>(digest), len)),
      "'");
}

// Every answer: no caching, no sniffing, no framing, no referrer; styles
// only inline; scripts only the two the pages carry, by their hashes (the
// run page's live update, the scorecard's filter), so text an agent got
// into a page can never run even if it escaped escaping; fetches only here.
void SecurityHeaders(httplib::Response& res) {
  static const std::string csp =
      absl::StrCat("default-src 'none'; script-src ", ScriptHashSource(RunPageScript()),
                   " ", ScriptHashSource(reports::HtmlScript()),
                   "; style-src 'unsafe-inline'; img-src data:; connect-src 'self'; "
                   "form-action 'self'; base-uri 'none'; frame-ancestors 'none'");
  res.set_header("Cache-Control", "no-store");
  res.set_header("X-Content-Type-Options", "nosniff");
  res.set_header("Referrer-Policy", "no-referrer");
  res.set_header("X-Frame-Options", "DENY");
  res.set_header("Content-Security-Policy", csp);
}

std::string HexOf(const unsigned char* p, size_t n) {
  return absl::BytesToHexString(absl::string_view(reinterpret_cast<const char*>(p), n));
}

// "64 MiB" for whole MiB, else "1500 bytes".
std::string SizeText(int64_t bytes) {
  constexpr int64_t kMiB = 1 << 20;
  return bytes >= kMiB && bytes % kMiB == 0 ? absl::StrCat(bytes / kMiB, " MiB")
                                            : absl::StrCat(bytes, " bytes");
}

// A scorecard file opened for streaming: its size at open, and the stream
// the content provider reads it from, a chunk at a time.
struct OpenFile {
  std::ifstream in;
  size_t size = 0;
};

// Opens `path` for a streamed answer; NOT_FOUND when it is not there.
absl::StatusOr<std::shared_ptr<OpenFile>> OpenForStreaming(const std::string& path) {
  auto f = std::make_shared<OpenFile>();
  f->in.open(path, std::ios::binary);
  struct stat st;
  if (!f->in || stat(path.c_str(), &st) != 0) {
    return absl::NotFoundError(absl::StrCat("no file ", path));
  }
  f->size = static_cast<size_t>(st.st_size);
  return f;
}

constexpr size_t kStreamChunk = 64 * 1024;

// Answers with `f`'s bytes, read kStreamChunk at a time as the client takes
// them: a request holds one chunk, never the file. A file cut short while
// it is sent ends the connection (the length was promised).
void StreamFile(std::shared_ptr<OpenFile> f, const std::string& content_type,
                httplib::Response& res) {
  if (f->size == 0) return res.set_content("", content_type);
  res.set_content_provider(
      f->size, content_type,
      [f](size_t offset, size_t length, httplib::DataSink& sink) {
        std::vector<char> buf(std::min(length, kStreamChunk));
        f->in.seekg(static_cast<std::streamoff>(offset));
        f->in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
        const auto got = static_cast<size_t>(f->in.gcount());
        if (got == 0) return false;
        return sink.write(buf.data(), got);
      });
}

// The query part of the request target, decoded by httplib.
httplib::Params QueryOf(const httplib::Request& req) {
  httplib::Params params;
  const size_t q = req.target.find('?');
  if (q != std::string::npos)
    httplib::detail::parse_query_text(req.target.substr(q + 1), params);
  return params;
}

}  // namespace

absl::StatusOr<std::shared_ptr<const v1::Scorecard>> WebRoutes::LoadScorecard(
    const std::string& run_id) {
  const std::string path = absl::StrCat(options_.report_root, "/", run_id, "/scorecard.json");
  struct stat st;
  if (stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    return absl::NotFoundError(absl::StrCat("run ", run_id, " has no scorecard yet"));
  }
  const int64_t size = st.st_size;
  const int64_t mtime_ns = int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec;
  {
    absl::MutexLock lock(&cards_mu_);
    if (auto it = cards_.find(path);
        it != cards_.end() && it->second.size == size && it->second.mtime_ns == mtime_ns) {
      it->second.used = ++cards_clock_;
      return it->second.card;
    }
  }
  if (size > options_.max_compare_bytes) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the scorecard of run ", run_id, " is ", SizeText(size), ", more than the ",
        SizeText(options_.max_compare_bytes),
        " the web view reads to compare runs; download it at /runs/", run_id,
        "/scorecard.json instead"));
  }
  std::ifstream in(path, std::ios::binary);
  std::string json;
  json.resize(static_cast<size_t>(size));
  if (!in.read(json.data(), size) || in.gcount() != size) {
    return absl::InternalError(absl::StrCat("reading the scorecard of ", run_id, " failed"));
  }
  auto card = std::make_shared<v1::Scorecard>();
  google::protobuf::util::JsonParseOptions po;
  po.ignore_unknown_fields = true;
  if (auto s = google::protobuf::util::JsonStringToMessage(json, card.get(), po); !s.ok()) {
    return absl::InternalError(
        absl::StrCat("scorecard of ", run_id, " does not parse: ", s.ToString()));
  }
  absl::MutexLock lock(&cards_mu_);
  CachedCard& c = cards_[path];
  c = {size, mtime_ns, card, ++cards_clock_};
  // The least recently used go while the cache holds more than it may.
  for (;;) {
    int64_t total = 0;
    auto oldest = cards_.end();
    for (auto it = cards_.begin(); it != cards_.end(); ++it) {
      total += it->second.size;
      if (oldest == cards_.end() || it->second.used < oldest->second.used) oldest = it;
    }
    if (cards_.size() <= 1 ||
        (cards_.size() <= kMaxCachedCards && total <= options_.max_compare_bytes * 2)) {
      break;
    }
    cards_.erase(oldest);
  }
  return std::shared_ptr<const v1::Scorecard>(std::move(card));
}

WebRoutes::WebRoutes(WebOptions options, std::unique_ptr<WebSource> source,
                     std::string session_key, bool tls)
    : options_(std::move(options)),
      source_(std::move(source)),
      session_key_(std::move(session_key)),
      tls_(tls) {}

std::string WebRoutes::Mac(absl::string_view data) const {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), session_key_.data(), static_cast<int>(session_key_.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len);
  return HexOf(out, len);
}

// "<expiry unix s>.<nonce>.<HMAC-SHA256(key, expiry.nonce)>"; the nonce
// is remembered until it expires or signs out.
absl::StatusOr<std::string> WebRoutes::NewSession() {
  auto nonce = RandomHex(16);
  if (!nonce.ok()) return nonce.status();
  const int64_t now = absl::ToUnixSeconds(absl::Now());
  const int64_t expiry = absl::ToUnixSeconds(absl::Now() + options_.session_lifetime);
  {
    absl::MutexLock lock(&sessions_mu_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      it = it->second < now ? sessions_.erase(it) : std::next(it);
    }
    while (sessions_.size() >= kMaxSessions) {
      auto first = sessions_.begin();
      for (auto it = sessions_.begin(); it != sessions_.end(); ++it) {
        if (it->second < first->second) first = it;
      }
      sessions_.erase(first);
    }
    sessions_[*nonce] = expiry;
  }
  const std::string body = absl::StrCat(expiry, ".", *nonce);
  return absl::StrCat(body, ".", Mac(body));
}

// The nonce of the request's valid session cookie; "" when it has none.
std::string WebRoutes::SessionNonce(const httplib::Request& req) const {
  for (absl::string_view part : absl::StrSplit(req.get_header_value("Cookie"), ';')) {
    part = absl::StripAsciiWhitespace(part);
    if (!absl::ConsumePrefix(&part, kCookie) || !absl::ConsumePrefix(&part, "="))
      continue;
    std::vector<std::string> f = absl::StrSplit(part, '.');
    int64_t expiry = 0;
    if (f.size() != 3 || !absl::SimpleAtoi(f[0], &expiry)) continue;
    if (expiry < absl::ToUnixSeconds(absl::Now())) continue;
    if (!SameSecret(f[2], Mac(absl::StrCat(f[0], ".", f[1])))) continue;
    absl::MutexLock lock(&sessions_mu_);
    if (sessions_.count(f[1])) return f[1];
  }
  return "";
}

bool WebRoutes::ValidSession(const httplib::Request& req) const {
  return !SessionNonce(req).empty();
}

std::string WebRoutes::CookieAttributes() const {
  return absl::StrCat("; Path=/; HttpOnly; SameSite=Strict", tls_ ? "; Secure" : "");
}

PageContext WebRoutes::Context(const httplib::Request& req) const {
  PageContext ctx;
  ctx.signed_in = !options_.token.empty() && ValidSession(req);
  return ctx;
}

void WebRoutes::Error(const httplib::Request& req, httplib::Response& res,
                      const absl::Status& s, bool page) const {
  res.status = HttpStatusFor(s);
  if (res.status == 503) res.set_header("Retry-After", "5");
  const std::string msg(s.message());
  if (page) {
    res.set_content(ErrorPage(res.status, msg, Context(req)), "text/html; charset=utf-8");
  } else {
    res.set_content(absl::StrCat(res.status, " ", msg, "\n"),
                    "text/plain; charset=utf-8");
  }
}

// The run, or an error answered (400 bad id, 404 unknown, 503 busy).
bool WebRoutes::LoadRun(const httplib::Request& req, httplib::Response& res,
                        const std::string& id, bool page, v1::GetRunResponse* out) {
  if (!IsSafeRunId(id)) {
    Error(req, res, absl::InvalidArgumentError("bad run id"), page);
    return false;
  }
  auto run = source_->Run(id);
  if (!run.ok()) {
    Error(req, res, run.status(), page);
    return false;
  }
  *out = std::move(*run);
  return true;
}

// "/nodes/NAME": the node's history and its remediation incidents. A node no
// run had (history NOT_FOUND) still has a page while the fault loop has
// incidents on it.
void WebRoutes::NodePage(const httplib::Request& req, httplib::Response& res,
                         const std::string& node) {
  absl::StatusOr<v1::GetHistoryResponse> h = source_->History(node);
  if (!h.ok() && !absl::IsNotFound(h.status())) return Error(req, res, h.status(), true);
  const absl::StatusOr<v1::RemediationStatus> incidents = source_->Remediation(node);
  if (!h.ok()) {
    if (!incidents.ok() || incidents->incidents_size() == 0) {
      return Error(req, res, h.status(), true);
    }
    h = v1::GetHistoryResponse();
    h->mutable_node()->set_node(node);
    h->mutable_node()->set_state("no run yet");
  }
  res.set_content(NodeHistoryPage(h->node(), Context(req), RemediationSection(node, incidents)),
                  "text/html; charset=utf-8");
}

void WebRoutes::Install(httplib::Server& srv) {
  srv.set_pre_routing_handler(
      [this](const httplib::Request& req, httplib::Response& res) {
        SecurityHeaders(res);
        // Never a token in a URL: it would end up in histories, logs and referrers.
        for (const auto& [key, value] : QueryOf(req)) {
          const std::string k = absl::AsciiStrToLower(key);
          if (k == "token" || k == "access_token" || k == "bearer") {
            res.status = 400;
            res.set_content(
                "400 a token is never accepted in a URL: sign in with the form at "
                "/login or send an Authorization: Bearer header\n",
                "text/plain; charset=utf-8");
            return httplib::Server::HandlerResponse::Handled;
          }
        }
        if (options_.token.empty() || req.path == "/login") {
          return httplib::Server::HandlerResponse::Unhandled;
        }
        if (BearerTokenMatches(req, options_.token) ||
            BearerTokenMatches(req, options_.read_token) || ValidSession(req)) {
          return httplib::Server::HandlerResponse::Unhandled;
        }
        res.status = 401;
        res.set_header("WWW-Authenticate", "Bearer");
        if (absl::StartsWith(req.path, "/api/") || req.method != "GET") {
          res.set_content("401 unauthorized: a bearer token or a session is required\n",
                          "text/plain; charset=utf-8");
        } else {
          res.set_content(LoginPage(req.target, "", 401), "text/html; charset=utf-8");
        }
        return httplib::Server::HandlerResponse::Handled;
      });
  srv.set_error_handler([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;
    res.set_content(absl::StrCat(res.status, res.status == 404 ? " not found" : "", "\n"),
                    "text/plain; charset=utf-8");
  });

  srv.Get("/login", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string next = req.get_param_value("next");
    if (options_.token.empty()) {
      res.set_redirect(IsLocalPath(next) ? next : "/", 303);
      return;
    }
    res.set_content(LoginPage(next, "", 200), "text/html; charset=utf-8");
  });
  srv.Post("/login", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string next = req.get_param_value("next");
    if (options_.token.empty()) {
      res.set_redirect(IsLocalPath(next) ? next : "/", 303);
      return;
    }
    if (!absl::StartsWith(req.get_header_value("Content-Type"),
                          "application/x-www-form-urlencoded")) {
      res.status = 415;
      res.set_content(
          "415 POST /login takes a form (application/x-www-form-urlencoded)\n",
          "text/plain; charset=utf-8");
      return;
    }
    // The pre-routing check refused a token in the query, so this one came
    // in the body.
    const std::string given = req.get_param_value("token");
    if (!SameSecret(given, options_.token) && !SameSecret(given, options_.read_token)) {
      // The audit trail names the caller, never what it sent.
      GetLogger("web")->warn("sign-in refused (wrong token) from {}:{}", req.remote_addr,
                             req.remote_port);
      // A pause per wrong guess (this thread only) slows guessing down.
      std::this_thread::sleep_for(absl::ToChronoMilliseconds(options_.wrong_token_pause));
      res.status = 401;
      res.set_content(LoginPage(next, "Wrong token.", 401), "text/html; charset=utf-8");
      return;
    }
    auto session = NewSession();
    if (!session.ok()) {
      Error(req, res, session.status(), true);
      return;
    }
    GetLogger("web")->info("signed in a browser session from {}:{}", req.remote_addr,
                           req.remote_port);
    res.set_header("Set-Cookie",
                   absl::StrCat(kCookie, "=", *session, CookieAttributes(), "; Max-Age=",
                                absl::ToInt64Seconds(options_.session_lifetime)));
    // A page that moves on, not a 303: a SameSite=Strict cookie is not sent
    // on a redirect whose chain began on another site (a bookmark page, a
    // portal), so a redirect would land there signed out; the page's own
    // navigation is same-site.
    res.set_content(SignedInPage(next), "text/html; charset=utf-8");
  });
  srv.Post("/logout", [this](const httplib::Request& req, httplib::Response& res) {
    // Ended here, not only in this browser: a copy of the cookie is
    // refused from now on.
    if (const std::string nonce = SessionNonce(req); !nonce.empty()) {
      absl::MutexLock lock(&sessions_mu_);
      sessions_.erase(nonce);
    }
    res.set_header("Set-Cookie",
                   absl::StrCat(kCookie, "=", CookieAttributes(), "; Max-Age=0"));
    res.set_redirect("/login", 303);
  });

  srv.Get("/", [this](const httplib::Request& req, httplib::Response& res) {
    auto agents = source_->Agents();
    if (!agents.ok()) return Error(req, res, agents.status(), true);
    auto runs = source_->Runs(options_.max_runs);
    if (!runs.ok()) return Error(req, res, runs.status(), true);
    res.set_content(
        IndexPage(*agents, *runs, absl::ToUnixNanos(absl::Now()), Context(req)),
        "text/html; charset=utf-8");
  });
  srv.Get("/api/agents", [this](const httplib::Request& req, httplib::Response& res) {
    auto agents = source_->Agents();
    if (!agents.ok()) return Error(req, res, agents.status(), false);
    res.set_content(ToJson(*agents), "application/json");
  });
  srv.Get("/api/runs", [this](const httplib::Request& req, httplib::Response& res) {
    auto runs = source_->Runs(options_.max_runs);
    if (!runs.ok()) return Error(req, res, runs.status(), false);
    res.set_content(ToJson(*runs), "application/json");
  });
  srv.Get(R"(/api/runs/(.*))", [this](const httplib::Request& req,
                                      httplib::Response& res) {
    const std::string id = req.matches[1];
    const std::string since = req.get_param_value("since");
    const absl::Time deadline = absl::Now() + options_.poll_hold;
    while (true) {
      v1::GetRunResponse run;
      if (!LoadRun(req, res, id, false, &run)) return;
      RunProgress p = Summarize(run);
      if (since.empty() || p.fingerprint != since || p.final || absl::Now() >= deadline) {
        res.set_content(RunJson(p, !p.run.report_dir().empty()), "application/json");
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  });
  // The scorecard routes before /runs/ID, which would match them too.
  srv.Get(R"(/runs/(.*)/scorecard(\.md|\.json|\.html)?)", [this](
                                                              const httplib::Request& req,
                                                              httplib::Response& res) {
    const std::string id = req.matches[1];
    const std::string ext =
        req.matches[2].length() ? std::string(req.matches[2]).substr(1) : "html";
    v1::GetRunResponse run;
    if (!LoadRun(req, res, id, true, &run)) return;
    auto file =
        OpenForStreaming(absl::StrCat(options_.report_root, "/", id, "/scorecard.", ext));
    if (!file.ok()) {
      return Error(req, res,
                   absl::NotFoundError(absl::StrCat("run ", id, " has no scorecard yet (state ",
                                                    run.run().state(), ")")),
                   true);
    }
    if (ext == "json") {
      res.set_header(
          "Content-Disposition",
          absl::StrCat("attachment; filename=\"cmax-scorecard-", id, ".json\""));
      StreamFile(*file, "application/json", res);
    } else if (ext == "md") {
      StreamFile(*file, "text/markdown; charset=utf-8", res);
    } else {
      StreamFile(*file, "text/html; charset=utf-8", res);
    }
  });
  srv.Get(R"(/runs/(.*))", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string id = req.matches[1];
    v1::GetRunResponse run;
    if (!LoadRun(req, res, id, true, &run)) return;
    RunProgress p = Summarize(run);
    res.set_content(RunPage(p, !p.run.report_dir().empty(), Context(req)),
                    "text/html; charset=utf-8");
  });
  // History (docs/history.md): a node's page, the fleet's, and their JSON.
  auto history = [this](const httplib::Request& req, httplib::Response& res,
                        const std::string& node, bool page) {
    if (page && !node.empty()) return NodePage(req, res, node);
    auto h = source_->History(node);
    if (!h.ok()) return Error(req, res, h.status(), page);
    if (!page) return res.set_content(ToJson(*h), "application/json");
    res.set_content(FleetPage(h->fleet(), Context(req)), "text/html; charset=utf-8");
  };
  srv.Get(R"(/nodes/([^/]+))",
          [history](const httplib::Request& req, httplib::Response& res) {
            history(req, res, req.matches[1], true);
          });
  srv.Get("/fleet", [history](const httplib::Request& req, httplib::Response& res) {
    history(req, res, "", true);
  });
  srv.Get(R"(/api/nodes/([^/]+))",
          [history](const httplib::Request& req, httplib::Response& res) {
            history(req, res, req.matches[1], false);
          });
  srv.Get("/api/fleet", [history](const httplib::Request& req, httplib::Response& res) {
    history(req, res, "", false);
  });
  srv.Get("/compare", [this](const httplib::Request& req, httplib::Response& res) {
    const std::string a = req.get_param_value("a");
    const std::string b = req.get_param_value("b");
    if (!IsSafeRunId(a) || !IsSafeRunId(b)) {
      return Error(req, res,
                   absl::InvalidArgumentError("give two run ids: /compare?a=RUN&b=RUN"),
                   true);
    }
    if (!options_.compare_page) {
      res.status = 501;
      res.set_content(ErrorPage(501, "comparison not built in", Context(req)),
                      "text/html; charset=utf-8");
      return;
    }
    std::shared_ptr<const v1::Scorecard> cards[2];
    const std::string ids[2] = {a, b};
    for (int i = 0; i < 2; ++i) {
      v1::GetRunResponse run;
      if (!LoadRun(req, res, ids[i], true, &run)) return;
      auto card = LoadScorecard(ids[i]);
      if (!card.ok()) return Error(req, res, card.status(), true);
      cards[i] = *std::move(card);
    }
    auto page = options_.compare_page(*cards[0], *cards[1]);
    if (!page.ok()) return Error(req, res, page.status(), true);
    res.set_content(*page, "text/html; charset=utf-8");
  });
}

}  // namespace cmax::coordinator::web
