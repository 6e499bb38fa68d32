#include "tests/benchmarks/collective/fake_rendezvous_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "cmax/v1/rendezvous.pb.h"
#include "google/protobuf/util/json_util.h"

namespace cmax::testing {

absl::StatusOr<std::unique_ptr<FakeRendezvousServer>> FakeRendezvousServer::Start(
    const std::string& path, int world_size) {
  ::unlink(path.c_str());
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::InternalError(strerror(errno));
  sockaddr_un sa{};
  sa.sun_family = AF_UNIX;
  if (path.size() >= sizeof(sa.sun_path)) {
    ::close(fd);
    return absl::InvalidArgumentError("socket path too long");
  }
  std::memcpy(sa.sun_path, path.c_str(), path.size() + 1);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0 || ::listen(fd, 64) != 0) {
    const std::string why = strerror(errno);
    ::close(fd);
    return absl::InternalError(absl::StrCat("bind/listen ", path, ": ", why));
  }
  std::unique_ptr<FakeRendezvousServer> s(new FakeRendezvousServer(path, fd, world_size));
  s->acceptor_ = std::thread([p = s.get()] { p->AcceptLoop(); });
  return s;
}

FakeRendezvousServer::~FakeRendezvousServer() {
  stop_ = true;
  cv_.notify_all();
  if (acceptor_.joinable()) acceptor_.join();
  {
    std::lock_guard<std::mutex> l(mu_);
    for (int fd : conn_fds_) ::shutdown(fd, SHUT_RDWR);
  }
  for (auto& t : workers_) t.join();
  ::close(listen_fd_);
  ::unlink(path_.c_str());
}

void FakeRendezvousServer::AcceptLoop() {
  while (!stop_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    std::lock_guard<std::mutex> l(mu_);
    conn_fds_.push_back(fd);
    workers_.emplace_back([this, fd] { Serve(fd); });
  }
}

void FakeRendezvousServer::Serve(int fd) {
  std::string buf;
  char chunk[65536];
  while (!stop_) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    ssize_t n = ::recv(fd, chunk, sizeof(chunk), 0);
    if (n <= 0) break;
    buf.append(chunk, static_cast<size_t>(n));
    size_t nl;
    while ((nl = buf.find('\n')) != std::string::npos) {
      std::string line = buf.substr(0, nl);
      buf.erase(0, nl + 1);
      std::string reply = Handle(line) + "\n";
      size_t done = 0;
      while (done < reply.size()) {
        ssize_t w = ::send(fd, reply.data() + done, reply.size() - done, MSG_NOSIGNAL);
        if (w <= 0) break;
        done += static_cast<size_t>(w);
      }
    }
  }
  ::close(fd);
}

std::string FakeRendezvousServer::Handle(const std::string& line) {
  ++requests_;
  v1::RendezvousRequest req;
  v1::RendezvousReply rep;
  google::protobuf::util::JsonParseOptions jo;
  jo.ignore_unknown_fields = true;
  if (!google::protobuf::util::JsonStringToMessage(line, &req, jo).ok()) {
    rep.set_error("malformed request");
  } else {
    rep.set_request_id(req.request_id());
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(req.timeout_ms() > 0 ? req.timeout_ms() : 30000);
    std::unique_lock<std::mutex> l(mu_);
    if (req.op() == "set") {
      kv_[req.key()] = req.value();
      cv_.notify_all();
      rep.set_ok(true);
    } else if (req.op() == "get") {
      bool found = cv_.wait_until(l, deadline, [&] { return stop_ || kv_.count(req.key()) > 0; });
      if (found && kv_.count(req.key())) {
        rep.set_ok(true);
        rep.set_value(kv_[req.key()]);
      } else {
        rep.set_error(absl::StrCat("timeout waiting for key ", req.key()));
      }
    } else if (req.op() == "barrier") {
      int& count = barrier_count_[req.key()];
      ++count;
      cv_.notify_all();
      bool all = cv_.wait_until(l, deadline, [&] { return stop_ || count >= world_size_; });
      if (all && count >= world_size_) {
        rep.set_ok(true);
        rep.set_value(absl::StrCat(absl::ToUnixNanos(absl::Now())));
      } else {
        rep.set_error(absl::StrCat("timeout in barrier ", req.key()));
      }
    } else {
      rep.set_error(absl::StrCat("unknown op ", req.op()));
    }
  }
  std::string out;
  google::protobuf::util::JsonPrintOptions po;
  po.preserve_proto_field_names = true;
  (void)google::protobuf::util::MessageToJsonString(rep, &out, po);
  return out;
}

}  // namespace cmax::testing
