// The relay's group table: Open makes a group's Unix socket
// <work-dir>/rv/<FNV-1a 64 of the group>.sock (directory 0700, socket 0600)
// and, for a TCP host, a listener on an ephemeral port with a random secret
// (common/secrets.h); accepting connections up to max_connections per group;
// Close and the closing of a connection (its pending requests go with it)
// or of a whole group (its sockets, connections and socket file).
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "agent/rendezvous_relay.h"
#include "agent/rendezvous_relay_internal.h"
#include "common/fnv1a.h"
#include "common/logging.h"
#include "common/secrets.h"
#include "common/time_util.h"

namespace cmax::agent {
namespace {

std::shared_ptr<spdlog::logger> Log() { return GetLogger("rendezvous"); }

// A short, stable file name for a group (FNV-1a 64).
std::string ShortHash(const std::string& text) {
  Fnv1a64 h;
  h.Update(text);
  return h.Hex();
}

}  // namespace

absl::StatusOr<RelayEndpoint> RendezvousRelay::Open(const std::string& group,
                                                    std::set<int> ranks,
                                                    const std::string& tcp_host) {
  const std::string dir = options_.work_dir + "/rv";
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return RelayErrno(absl::StrCat("rendezvous directory ", dir));
  }
  if (chmod(dir.c_str(), 0700) != 0) return RelayErrno(absl::StrCat("chmod 0700 ", dir));
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
  if (g->unix_fd < 0) return RelayErrno("socket");
  auto fail = [&](absl::Status s) {
    if (g->unix_fd >= 0) close(g->unix_fd);
    if (g->tcp_fd >= 0) close(g->tcp_fd);
    unlink(g->socket_path.c_str());
    return s;
  };
  if (bind(g->unix_fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    return fail(RelayErrno(absl::StrCat("bind ", g->socket_path)));
  }
  if (chmod(g->socket_path.c_str(), 0600) != 0) {
    return fail(RelayErrno(absl::StrCat("chmod 0600 ", g->socket_path)));
  }
  if (listen(g->unix_fd, 128) != 0) return fail(RelayErrno("listen"));
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
    if (g->tcp_fd < 0) return fail(RelayErrno("socket"));
    if (bind(g->tcp_fd, reinterpret_cast<sockaddr*>(&ss), len) != 0) {
      return fail(RelayErrno(absl::StrCat("bind ", tcp_host)));
    }
    if (listen(g->tcp_fd, 128) != 0) return fail(RelayErrno("listen"));
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

}  // namespace cmax::agent
