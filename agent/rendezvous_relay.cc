#include "agent/rendezvous_relay.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/fnv1a.h"
#include "common/logging.h"
#include "common/secrets.h"
#include "common/time_util.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace cmax::agent {
namespace {

constexpr size_t kMaxOutBytes = 4 << 20;  // per connection: a rank that never reads

std::shared_ptr<spdlog::logger> Log() { return GetLogger("rendezvous"); }

absl::Status Errno(const std::string& what) {
  return absl::InternalError(absl::StrCat(what, ": ", strerror(errno)));
}

// A short, stable file name for a group (FNV-1a 64).
std::string ShortHash(const std::string& text) {
  Fnv1a64 h;
  h.Update(text);
  return h.Hex();
}


std::string ReplyLine(const v1::RendezvousReply& reply) {
  std::string line;
  google::protobuf::util::JsonPrintOptions print;
  print.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(reply, &line, print);
  line.push_back('\n');
  return line;
}

}  // namespace

struct RendezvousRelay::Group {
  std::string name;
  std::set<int> ranks;
  std::string socket_path;
  int unix_fd = -1;
  int tcp_fd = -1;
  std::string secret;
  std::string tcp_address;
  int connections = 0;
};

struct RendezvousRelay::Conn {
  uint64_t id = 0;
  int fd = -1;
  std::string group;
  bool tcp = false;
  bool authed = false;
  int64_t accepted_mono_ns = 0;
  std::string in;
  std::string out;
  int outstanding = 0;
  bool close_after_flush = false;
};

RendezvousRelay::RendezvousRelay(RelayOptions options, Outbox* outbox)
    : options_(std::move(options)), outbox_(outbox) {}

RendezvousRelay::~RendezvousRelay() { Stop(); }

absl::Status RendezvousRelay::Start() {
  if (thread_.joinable()) return absl::OkStatus();
  if (pipe2(wake_fds_, O_CLOEXEC | O_NONBLOCK) != 0) return Errno("pipe2");
  thread_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

void RendezvousRelay::Stop() {
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  Wake();
  if (thread_.joinable()) thread_.join();
  absl::MutexLock lock(&mu_);
  std::vector<std::string> names;
  for (const auto& [name, g] : groups_) names.push_back(name);
  for (const auto& name : names) CloseGroupLocked(name);
  for (int& fd : wake_fds_) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
}

void RendezvousRelay::Wake() {
  if (wake_fds_[1] >= 0) {
    char b = 1;
    (void)!write(wake_fds_[1], &b, 1);
  }
}

absl::StatusOr<RelayEndpoint> RendezvousRelay::Open(const std::string& group,
                                                    std::set<int> ranks,
                                                    const std::string& tcp_host) {
  const std::string dir = options_.work_dir + "/rv";
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Errno(absl::StrCat("rendezvous directory ", dir));
  }
  if (chmod(dir.c_str(), 0700) != 0) return Errno(absl::StrCat("chmod 0700 ", dir));
  auto g = std::make_unique<Group>();
  g->name = group;
  g->ranks = std::move(ranks);
  g->socket_path = absl::StrCat(dir, "/", ShortHash(group), ".sock");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (g->socket_path.size() >= sizeof(addr.sun_path)) {
    return absl::FailedPreconditionError(
        absl::StrCat("rendezvous socket path ", g->socket_path, " is longer than ",
                     sizeof(addr.sun_path) - 1, " bytes: use a shorter --work-dir"));
  }
  {
    absl::MutexLock lock(&mu_);
    CloseGroupLocked(group);
  }
  unlink(g->socket_path.c_str());
  memcpy(addr.sun_path, g->socket_path.data(), g->socket_path.size());
  g->unix_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (g->unix_fd < 0) return Errno("socket");
  auto fail = [&](absl::Status s) {
    if (g->unix_fd >= 0) close(g->unix_fd);
    if (g->tcp_fd >= 0) close(g->tcp_fd);
    unlink(g->socket_path.c_str());
    return s;
  };
  if (bind(g->unix_fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return fail(Errno(absl::StrCat("bind ", g->socket_path)));
  }
  if (chmod(g->socket_path.c_str(), 0600) != 0) {
    return fail(Errno(absl::StrCat("chmod 0600 ", g->socket_path)));
  }
  if (listen(g->unix_fd, 128) != 0) return fail(Errno("listen"));
  RelayEndpoint ep;
  ep.socket_path = g->socket_path;
  ep.address = "unix:" + g->socket_path;
  if (!tcp_host.empty()) {
    sockaddr_storage ss{};
    socklen_t len = 0;
    int family = AF_INET;
    if (tcp_host.find(':') != std::string::npos) {
      family = AF_INET6;
      auto* s6 = reinterpret_cast<sockaddr_in6*>(&ss);
      s6->sin6_family = AF_INET6;
      if (inet_pton(AF_INET6, tcp_host.c_str(), &s6->sin6_addr) != 1) {
        return fail(absl::InvalidArgumentError(absl::StrCat("bad address ", tcp_host)));
      }
      len = sizeof(*s6);
    } else {
      auto* s4 = reinterpret_cast<sockaddr_in*>(&ss);
      s4->sin_family = AF_INET;
      if (inet_pton(AF_INET, tcp_host.c_str(), &s4->sin_addr) != 1) {
        return fail(absl::InvalidArgumentError(absl::StrCat("bad address ", tcp_host)));
      }
      len = sizeof(*s4);
    }
    g->tcp_fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (g->tcp_fd < 0) return fail(Errno("socket"));
    if (bind(g->tcp_fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
      return fail(Errno(absl::StrCat("bind ", tcp_host)));
    }
    if (listen(g->tcp_fd, 128) != 0) return fail(Errno("listen"));
    sockaddr_storage bound{};
    socklen_t blen = sizeof(bound);
    getsockname(g->tcp_fd, reinterpret_cast<sockaddr*>(&bound), &blen);
    int port = family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                  : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    g->tcp_address = family == AF_INET6 ? absl::StrCat("[", tcp_host, "]:", port)
                                        : absl::StrCat(tcp_host, ":", port);
    // A failed getrandom is an error, never a guessable secret.
    auto secret = RandomHex(16);
    if (!secret.ok()) return fail(secret.status());
    g->secret = std::move(*secret);
    ep.tcp_address = g->tcp_address;
    ep.secret = g->secret;
    ep.address = "tcp://" + g->tcp_address;
  }
  Log()->info("group {}: rendezvous at {}{}", group, g->socket_path,
              g->tcp_address.empty() ? "" : absl::StrCat(" and tcp://", g->tcp_address));
  {
    absl::MutexLock lock(&mu_);
    groups_[group] = std::move(g);
  }
  Wake();
  return ep;
}

void RendezvousRelay::Close(const std::string& group) {
  absl::MutexLock lock(&mu_);
  CloseGroupLocked(group);
  Wake();
}

void RendezvousRelay::CloseGroupLocked(const std::string& group) {
  auto it = groups_.find(group);
  if (it == groups_.end()) return;
  Group& g = *it->second;
  std::vector<uint64_t> ids;
  for (const auto& [id, c] : conns_) {
    if (c->group == group) ids.push_back(id);
  }
  for (uint64_t id : ids) CloseConnLocked(id);
  if (g.unix_fd >= 0) close(g.unix_fd);
  if (g.tcp_fd >= 0) close(g.tcp_fd);
  unlink(g.socket_path.c_str());
  Log()->info("group {}: rendezvous closed", group);
  groups_.erase(it);
}

void RendezvousRelay::CloseConnLocked(uint64_t conn_id) {
  auto it = conns_.find(conn_id);
  if (it == conns_.end()) return;
  close(it->second->fd);
  auto g = groups_.find(it->second->group);
  if (g != groups_.end()) --g->second->connections;
  conns_.erase(it);
  for (auto p = pending_.begin(); p != pending_.end();) {
    p = p->second.conn_id == conn_id ? pending_.erase(p) : std::next(p);
  }
}

void RendezvousRelay::OnReply(const v1::RendezvousReply& reply) {
  absl::MutexLock lock(&mu_);
  auto it = pending_.find(reply.request_id());
  if (it == pending_.end()) return;  // its rank went away, or a duplicate
  Pending& p = it->second;
  if (!reply.ok() && p.resent && p.request.op() == "barrier" &&
      absl::StrContains(reply.error(), "already waiting")) {
    return;  // the first arrival still waits at the coordinator
  }
  v1::RendezvousReply out = reply;
  out.set_request_id(p.client_id);
  if (reply.ok() && p.request.op() == "barrier") {
    int64_t start = 0;
    if (absl::SimpleAtoi(reply.value(), &start)) {
      out.set_value(absl::StrCat(start - options_.clock_offset_ns));
    }
  }
  const uint64_t conn = p.conn_id;
  pending_.erase(it);
  ReplyLocked(conn, out);
  Wake();
}

void RendezvousRelay::OnConnected(uint64_t generation) {
  absl::MutexLock lock(&mu_);
  generation_ = generation;
  for (auto& [id, p] : pending_) {
    if (p.sent_generation != 0) p.resent = true;
    SendLocked(p);
  }
}

void RendezvousRelay::SendLocked(Pending& p) {
  if (generation_ == 0) return;
  v1::AgentMessage m;
  *m.mutable_rendezvous() = p.request;
  if (outbox_->Send(generation_, std::move(m))) p.sent_generation = generation_;
}

size_t RendezvousRelay::open_groups() const {
  absl::MutexLock lock(&mu_);
  return groups_.size();
}

size_t RendezvousRelay::pending_requests() const {
  absl::MutexLock lock(&mu_);
  return pending_.size();
}

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

void RendezvousRelay::AcceptLocked(Group& g, int listen_fd, bool tcp) {
  for (;;) {
    int fd = accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) return;
    if (g.connections >= options_.max_connections) {
      Log()->warn("group {}: more than {} connections; refusing one", g.name,
                  options_.max_connections);
      close(fd);
      continue;
    }
    auto c = std::make_unique<Conn>();
    c->id = ++next_conn_id_;
    c->fd = fd;
    c->group = g.name;
    c->tcp = tcp;
    c->authed = !tcp;
    c->accepted_mono_ns = MonotonicNs();
    ++g.connections;
    conns_[c->id] = std::move(c);
  }
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

void RendezvousRelay::ExpireLocked(int64_t now_mono) {
  std::vector<uint64_t> expired;
  for (const auto& [id, p] : pending_) {
    if (p.deadline_mono_ns <= now_mono) expired.push_back(id);
  }
  for (uint64_t id : expired) {
    Pending p = std::move(pending_[id]);
    pending_.erase(id);
    v1::RendezvousReply r;
    r.set_request_id(p.client_id);
    r.set_ok(false);
    r.set_error(absl::StrCat(p.request.op(), " '", p.request.key().substr(0, 64),
                             "' timed out: no answer from the coordinator",
                             p.sent_generation == 0 ? " (the coordinator stream is down)" : ""));
    ReplyLocked(p.conn_id, r);
  }
  std::vector<uint64_t> slow;
  for (const auto& [id, c] : conns_) {
    if (!c->authed && now_mono - c->accepted_mono_ns > options_.auth_timeout_ms * 1000000) {
      slow.push_back(id);
    }
  }
  for (uint64_t id : slow) CloseConnLocked(id);
}

void RendezvousRelay::Loop() {
  for (;;) {
    std::vector<pollfd> fds;
    // What each pollfd stands for: (kind, group name or conn id).
    struct Slot {
      int kind;  // 0 wake, 1 unix listen, 2 tcp listen, 3 conn
      std::string group;
      uint64_t conn = 0;
    };
    std::vector<Slot> slots;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      fds.push_back({wake_fds_[0], POLLIN, 0});
      slots.push_back({0, "", 0});
      for (const auto& [name, g] : groups_) {
        fds.push_back({g->unix_fd, POLLIN, 0});
        slots.push_back({1, name, 0});
        if (g->tcp_fd >= 0) {
          fds.push_back({g->tcp_fd, POLLIN, 0});
          slots.push_back({2, name, 0});
        }
      }
      for (const auto& [id, c] : conns_) {
        short ev = c->close_after_flush ? 0 : POLLIN;
        if (!c->out.empty()) ev |= POLLOUT;
        fds.push_back({c->fd, ev, 0});
        slots.push_back({3, "", id});
      }
    }
    int r = poll(fds.data(), fds.size(), 100);
    if (r < 0 && errno != EINTR) {
      Log()->error("poll: {}", strerror(errno));
      usleep(100000);
    }
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    for (size_t i = 0; i < fds.size() && r > 0; ++i) {
      if (fds[i].revents == 0) continue;
      const Slot& s = slots[i];
      if (s.kind == 0) {
        char buf[256];
        while (read(wake_fds_[0], buf, sizeof(buf)) > 0) {
        }
      } else if (s.kind == 1 || s.kind == 2) {
        auto g = groups_.find(s.group);
        if (g == groups_.end()) continue;
        int fd = s.kind == 1 ? g->second->unix_fd : g->second->tcp_fd;
        if (fd == fds[i].fd) AcceptLocked(*g->second, fd, s.kind == 2);
      } else {
        auto c = conns_.find(s.conn);
        if (c == conns_.end() || c->second->fd != fds[i].fd) continue;
        if (fds[i].revents & (POLLIN | POLLHUP | POLLERR)) ReadLocked(*c->second);
      }
    }
    ExpireLocked(MonotonicNs());
    std::vector<uint64_t> ids;
    for (const auto& [id, c] : conns_) ids.push_back(id);
    for (uint64_t id : ids) {
      auto c = conns_.find(id);
      if (c != conns_.end() && (!c->second->out.empty() || c->second->close_after_flush)) {
        FlushLocked(*c->second);
      }
    }
  }
}

}  // namespace cmax::agent
