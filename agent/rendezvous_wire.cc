// The ranks' side of the relay: reading a connection's JSON request lines
// (at most max_line_bytes each), the secret a TCP connection must send
// first (compared in constant time), the checks on each request (a rank
// this agent launched for the group, at most max_outstanding per
// connection) before it becomes a pending request, and writing replies and
// errors back (a rank that leaves more than 4 MiB of them unread loses its
// connection).
#include <errno.h>
#include <sys/socket.h>

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "agent/rendezvous_relay.h"
#include "agent/rendezvous_relay_internal.h"
#include "common/logging.h"
#include "common/secrets.h"
#include "common/time_util.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace cmax::agent {
namespace {

constexpr size_t kMaxOutBytes = 4 << 20;  // per connection: a rank that never reads

std::shared_ptr<spdlog::logger> Log() { return GetLogger("rendezvous"); }

std::string ReplyLine(const v1::RendezvousReply& reply) {
  std::string line;
  google::protobuf::util::JsonPrintOptions print;
  print.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(reply, &line, print);
  line.push_back('\n');
  return line;
}

}  // namespace

void RendezvousRelay::ReplyLocked(uint64_t conn_id, const v1::RendezvousReply& reply) {
  auto it = conns_.find(conn_id);
  if (it == conns_.end()) return;
  Conn& c = *it->second;
  if (c.outstanding > 0) --c.outstanding;
  c.out += ReplyLine(reply);
  if (c.out.size() > kMaxOutBytes) {
    Log()->warn("group {}: a rank does not read its replies; closing its connection", c.group);
    CloseConnLocked(conn_id);
  }
}

void RendezvousRelay::ErrorLocked(Conn& c, uint64_t client_id, const std::string& error) {
  v1::RendezvousReply r;
  r.set_request_id(client_id);
  r.set_ok(false);
  r.set_error(error);
  c.out += ReplyLine(r);
}

void RendezvousRelay::ReadLocked(Conn& c) {
  char buf[65536];
  for (;;) {
    ssize_t n = recv(c.fd, buf, sizeof(buf), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      CloseConnLocked(c.id);
      return;
    }
    if (n == 0) {
      CloseConnLocked(c.id);
      return;
    }
    c.in.append(buf, static_cast<size_t>(n));
    const uint64_t id = c.id;
    for (;;) {
      size_t nl = c.in.find('\n');
      if (nl == std::string::npos) break;
      std::string line = c.in.substr(0, nl);
      c.in.erase(0, nl + 1);
      if (line.size() > options_.max_line_bytes) {
        ErrorLocked(c, 0, absl::StrCat("request line too long (", line.size(), " bytes, at most ",
                                       options_.max_line_bytes, ")"));
        c.close_after_flush = true;
        c.in.clear();
        return;
      }
      HandleLineLocked(c, line);
      if (!conns_.count(id) || c.close_after_flush) return;
    }
    if (c.in.size() > options_.max_line_bytes) {
      ErrorLocked(c, 0, absl::StrCat("request line too long (more than ", options_.max_line_bytes,
                                     " bytes)"));
      c.close_after_flush = true;
      c.in.clear();
      return;
    }
  }
}

void RendezvousRelay::HandleLineLocked(Conn& c, const std::string& line) {
  auto git = groups_.find(c.group);
  if (git == groups_.end()) {
    CloseConnLocked(c.id);
    return;
  }
  Group& g = *git->second;
  google::protobuf::util::JsonParseOptions parse;
  parse.ignore_unknown_fields = false;
  if (!c.authed) {
    google::protobuf::Struct hello;
    std::string secret;
    if (google::protobuf::util::JsonStringToMessage(line, &hello, parse).ok()) {
      auto f = hello.fields().find("secret");
      if (f != hello.fields().end()) secret = f->second.string_value();
    }
    if (secret.empty() || !SameSecret(secret, g.secret)) {
      Log()->warn("group {}: a TCP connection sent a wrong secret; closed", g.name);
      ErrorLocked(c, 0, "wrong or missing rendezvous secret");
      c.close_after_flush = true;
      return;
    }
    c.authed = true;
    return;
  }
  v1::RendezvousRequest req;
  if (!google::protobuf::util::JsonStringToMessage(line, &req, parse).ok()) {
    ErrorLocked(c, 0, "malformed request: not a JSON RendezvousRequest");
    return;
  }
  const uint64_t client_id = req.request_id();
  if (!g.ranks.count(req.rank())) {
    ErrorLocked(c, client_id,
                absl::StrCat("rank ", req.rank(), " was not launched by this agent for group ",
                             g.name));
    return;
  }
  if (c.outstanding >= options_.max_outstanding) {
    ErrorLocked(c, client_id,
                absl::StrCat("too many outstanding requests on this connection (at most ",
                             options_.max_outstanding, ")"));
    return;
  }
  int64_t timeout_ms = req.timeout_ms() > 0 ? std::min(req.timeout_ms(), options_.max_timeout_ms)
                                            : options_.default_timeout_ms;
  req.set_timeout_ms(timeout_ms);
  req.set_group(g.name);
  req.set_request_id(++next_request_id_);
  Pending p;
  p.conn_id = c.id;
  p.client_id = client_id;
  p.request = req;
  p.deadline_mono_ns = MonotonicNs() + (timeout_ms + options_.grace_ms) * 1000000;
  ++c.outstanding;
  Pending& stored = pending_[req.request_id()] = std::move(p);
  SendLocked(stored);
}

void RendezvousRelay::FlushLocked(Conn& c) {
  while (!c.out.empty()) {
    ssize_t n = send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      CloseConnLocked(c.id);
      return;
    }
    c.out.erase(0, static_cast<size_t>(n));
  }
  if (c.close_after_flush) CloseConnLocked(c.id);
}

}  // namespace cmax::agent
