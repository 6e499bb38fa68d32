// The relay thread (see rendezvous_relay.h): start and stop, the wake pipe
// that interrupts poll when groups or replies change, and the poll loop that
// hands every ready socket to the endpoint table (accept) or the wire
// (read), expires requests and flushes replies. The other ideas have their
// own files (rendezvous_relay_internal.h lists them).
#include "agent/rendezvous_relay.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "agent/rendezvous_relay_internal.h"
#include "common/logging.h"
#include "common/time_util.h"

namespace cmax::agent {
namespace {

std::shared_ptr<spdlog::logger> Log() { return GetLogger("rendezvous"); }

}  // namespace

RendezvousRelay::RendezvousRelay(RelayOptions options, Outbox* outbox)
    : options_(std::move(options)), clock_(options_.clock_offset_ns), outbox_(outbox) {}

RendezvousRelay::~RendezvousRelay() { Stop(); }

absl::Status RendezvousRelay::Start() {
  if (thread_.joinable()) return absl::OkStatus();
  if (pipe2(wake_fds_, O_CLOEXEC | O_NONBLOCK) != 0) return RelayErrno("pipe2");
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

size_t RendezvousRelay::open_groups() const {
  absl::MutexLock lock(&mu_);
  return groups_.size();
}

size_t RendezvousRelay::pending_requests() const {
  absl::MutexLock lock(&mu_);
  return pending_.size();
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
