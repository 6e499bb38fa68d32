#include "common/http_connection.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <condition_variable>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"

namespace cmax {
namespace {

using Clock = std::chrono::steady_clock;

// Set while the accept thread itself runs a connection's task because
// every connection thread is taken: that connection is refused at once.
thread_local bool tl_over_capacity = false;

void AddressOf(const sockaddr_storage& ss, std::string* ip, int* port) {
  char text[INET6_ADDRSTRLEN] = "";
  if (ss.ss_family == AF_INET) {
    const auto* a = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &a->sin_addr, text, sizeof(text));
    *port = ntohs(a->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* a = reinterpret_cast<const sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof(text));
    *port = ntohs(a->sin6_port);
  } else {
    *port = 0;
  }
  *ip = text;
}

// One end of a socket's address: `which` is getpeername or getsockname.
void SocketAddress(int fd, int (*which)(int, sockaddr*, socklen_t*), std::string* ip,
                   int* port) {
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  ip->clear();
  *port = 0;
  if (which(fd, reinterpret_cast<sockaddr*>(&ss), &len) == 0) AddressOf(ss, ip, port);
}

std::string PeerAddress(int fd) {
  std::string ip;
  int port = 0;
  SocketAddress(fd, getpeername, &ip, &port);
  return ip;
}

// Waits for `events` on `fd` until `until`: true when they (or an error
// or hang-up, which the next call reports) came.
bool WaitFor(int fd, short events, Clock::time_point until) {
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    const int r = poll(&p, 1, static_cast<int>(std::min<int64_t>(left, INT_MAX)));
    if (r > 0) return true;
    if (r == 0) return false;
    if (errno != EINTR) return false;
  }
}

// After a refusal: ends the sending side, so the peer reads the answer
// and then the end of the stream, and reads and drops what the peer still
// sends (at most 4 MiB, for at most 2 s) before the caller closes. Closing
// with unread input would send a reset, which can destroy the answer in
// the peer's buffers before it reads it.
void DrainBeforeClose(int fd) {
  ::shutdown(fd, SHUT_WR);
  const auto until = Clock::now() + std::chrono::seconds(2);
  char sink[4096];
  for (size_t dropped = 0; dropped < (4u << 20);) {
    const ssize_t n = ::recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
    if (n > 0) {
      dropped += static_cast<size_t>(n);
      continue;
    }
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) return;
    if (!WaitFor(fd, POLLIN, until)) return;
  }
}

// The admitted connections: how many, from where, and their sockets (so a
// stop can end their reads at once).
class ConnectionTable {
 public:
  explicit ConnectionTable(const HttpLimits& limits) : limits_(limits) {}

  // False, with the reason, when `peer` is at its cap or all are taken.
  bool Admit(int fd, const std::string& peer, std::string* why) {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      *why = "the server is stopping";
      return false;
    }
    if (static_cast<int>(fds_.size()) >= limits_.max_connections) {
      *why = absl::StrCat("too many connections (", limits_.max_connections, ")");
      return false;
    }
    int& n = per_peer_[peer];
    if (n >= limits_.max_connections_per_peer) {
      *why = absl::StrCat("too many connections from ", peer, " (",
                          limits_.max_connections_per_peer, ")");
      if (n == 0) per_peer_.erase(peer);
      return false;
    }
    ++n;
    fds_.insert(fd);
    return true;
  }

  void Release(int fd, const std::string& peer) {
    std::lock_guard<std::mutex> lock(mu_);
    fds_.erase(fd);
    if (auto it = per_peer_.find(peer); it != per_peer_.end() && --it->second <= 0) {
      per_peer_.erase(it);
    }
  }

  // Admits nothing more and shuts every admitted socket down: their
  // threads see the end of the stream and finish.
  void ShutdownAll() {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
    for (int fd : fds_) ::shutdown(fd, SHUT_RDWR);
  }

 private:
  const HttpLimits limits_;
  std::mutex mu_;
  bool stopping_ = false;
  std::map<std::string, int> per_peer_;
  std::set<int> fds_;
};

// cpp-httplib's task queue: a thread for each connection up to `max`;
// beyond that the task runs on the accept thread with tl_over_capacity
// set, which refuses it without reading. shutdown() (the end of the
// listen loop) ends the admitted connections and waits for their threads.
class ConnectionThreads : public httplib::TaskQueue {
 public:
  ConnectionThreads(ConnectionTable* table, int max) : table_(table), max_(max) {}

  void enqueue(std::function<void()> fn) override {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (live_ < max_) {
        ++live_;
      } else {
        tl_over_capacity = true;
      }
    }
    if (tl_over_capacity) {
      fn();
      tl_over_capacity = false;
      return;
    }
    std::thread([this, fn = std::move(fn)]() mutable {
      fn();
      fn = nullptr;
      // The last touch of this object: shutdown() returns only after it.
      std::lock_guard<std::mutex> lock(mu_);
      if (--live_ == 0) idle_.notify_all();
    }).detach();
  }

  void shutdown() override {
    table_->ShutdownAll();
    std::unique_lock<std::mutex> lock(mu_);
    // wait_for, not wait: GCC 12's condition_variable::wait(unique_lock&)
    // is an out-of-line symbol versioned GLIBCXX_3.4.30, above the floor of
    // the node tarball (deploy/symbol-floor.sh); wait_for is inline.
    while (!idle_.wait_for(lock, std::chrono::seconds(1), [this] { return live_ == 0; })) {
    }
  }

 private:
  ConnectionTable* const table_;
  const int max_;
  std::mutex mu_;
  std::condition_variable idle_;
  int live_ = 0;
};

// One connection's bytes, plain or TLS, through the guard and under the
// request's deadline. The socket is non-blocking; every wait is a poll().
class GuardedStream : public httplib::Stream {
 public:
  GuardedStream(int fd, SSL* ssl, const GuardedServerOptions& o)
      : fd_(fd), ssl_(ssl), io_timeout_(std::chrono::seconds(o.io_timeout_s)),
        request_deadline_(o.limits.request_deadline), guard_(o.limits) {}

  bool is_readable() const override {
    return begin_ < end_ || (ssl_ && SSL_pending(ssl_) > 0) ||
           WaitFor(fd_, POLLIN, Clock::now() + io_timeout_);
  }
  bool is_writable() const override {
    return !dead_ && WaitFor(fd_, POLLOUT, Clock::now() + io_timeout_);
  }

  ssize_t read(char* ptr, size_t size) override {
    if (dead_) return -1;
    if (begin_ == end_) {
      const ssize_t n = Fill();
      if (n <= 0) return n;
    }
    const size_t avail = std::min(size, end_ - begin_);
    const size_t ok = guard_.Admit(absl::string_view(buf_ + begin_, avail));
    if (ok == 0 && guard_.refused()) {
      dead_ = true;
      return -1;
    }
    std::memcpy(ptr, buf_ + begin_, ok);
    begin_ += ok;
    return static_cast<ssize_t>(ok);
  }

  ssize_t write(const char* ptr, size_t size) override {
    if (dead_) return -1;
    return WriteAll(ptr, size) ? static_cast<ssize_t>(size) : -1;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    SocketAddress(fd_, getpeername, &ip, &port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    SocketAddress(fd_, getsockname, &ip, &port);
  }
  socket_t socket() const override { return fd_; }

  // Waits up to `idle` for the first byte of the next request: false when
  // the peer closed, or sent nothing, in that time.
  bool WaitForRequest(std::chrono::seconds idle) const {
    if (begin_ < end_ || (ssl_ && SSL_pending(ssl_) > 0)) return true;
    return WaitFor(fd_, POLLIN, Clock::now() + idle);
  }
  // The next request's reads must all end by now + the request deadline.
  void BeginRequest() { deadline_ = Clock::now() + request_deadline_; }

  // A rule was broken or the deadline passed: the refusal to send.
  bool refused() const { return guard_.refused() || timed_out_; }
  HttpHeadGuard::Refusal refusal() const {
    if (guard_.refused()) return guard_.refusal();
    return {408, absl::StrCat("the request did not arrive within ",
                              request_deadline_.count() / 1000.0, " s")};
  }
  // Writes the refusal (best effort, within the io timeout); nothing more
  // is read or written after it.
  void SendRefusal() {
    const HttpHeadGuard::Refusal r = refusal();
    dead_ = true;
    const std::string text = HttpRefusalResponse(r.status, r.reason);
    WriteAll(text.data(), text.size());
  }

 private:
  // Reads what the socket has into buf_: the count, 0 at the end of the
  // stream, -1 on an error or when the deadline or the io timeout passed.
  ssize_t Fill() {
    for (;;) {
      short events = POLLIN;
      if (ssl_) {
        ERR_clear_error();
        const int n = SSL_read(ssl_, buf_, sizeof(buf_));
        if (n > 0) return Filled(n);
        const int e = SSL_get_error(ssl_, n);
        if (e == SSL_ERROR_ZERO_RETURN) return 0;
        if (e == SSL_ERROR_WANT_WRITE) {
          events = POLLOUT;
        } else if (e != SSL_ERROR_WANT_READ) {
          return -1;
        }
      } else {
        const ssize_t n = ::recv(fd_, buf_, sizeof(buf_), 0);
        if (n > 0) return Filled(static_cast<size_t>(n));
        if (n == 0) return 0;
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
      }
      if (!WaitFor(fd_, events, std::min(deadline_, Clock::now() + io_timeout_))) {
        timed_out_ = true;
        dead_ = true;  // the parser's own answer to the failed read is not sent
        return -1;
      }
    }
  }
  ssize_t Filled(size_t n) {
    begin_ = 0;
    end_ = n;
    return static_cast<ssize_t>(n);
  }

  // Writes all of it, waiting at most the io timeout for each bit of
  // progress.
  bool WriteAll(const char* p, size_t size) {
    size_t done = 0;
    while (done < size) {
      short events = POLLOUT;
      const size_t chunk = std::min<size_t>(size - done, INT_MAX);
      if (ssl_) {
        ERR_clear_error();
        const int n = SSL_write(ssl_, p + done, static_cast<int>(chunk));
        if (n > 0) {
          done += static_cast<size_t>(n);
          continue;
        }
        const int e = SSL_get_error(ssl_, n);
        if (e == SSL_ERROR_WANT_READ) {
          events = POLLIN;
        } else if (e != SSL_ERROR_WANT_WRITE) {
          return false;
        }
      } else {
        const ssize_t n = ::send(fd_, p + done, chunk, MSG_NOSIGNAL);
        if (n > 0) {
          done += static_cast<size_t>(n);
          continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) return false;
      }
      if (!WaitFor(fd_, events, Clock::now() + io_timeout_)) return false;
    }
    return true;
  }

  const int fd_;
  SSL* const ssl_;
  const std::chrono::seconds io_timeout_;
  const std::chrono::milliseconds request_deadline_;
  HttpHeadGuard guard_;
  Clock::time_point deadline_ = Clock::now();
  bool timed_out_ = false;
  bool dead_ = false;
  char buf_[4096];
  size_t begin_ = 0;
  size_t end_ = 0;
};

class GuardedServer : public httplib::Server {
 public:
  GuardedServer(GuardedServerOptions options, SSL_CTX* ctx)
      : options_(std::move(options)), ctx_(ctx), table_(options_.limits) {
    const int max = options_.limits.max_connections;
    ConnectionTable* table = &table_;
    new_task_queue = [table, max] { return new ConnectionThreads(table, max); };
    // cpp-httplib's own body limit too, should a body ever get past the guard.
    set_payload_max_length(options_.limits.max_body_bytes);
    // What its Keep-Alive response header announces: this loop's figures.
    set_keep_alive_max_count(static_cast<size_t>(options_.keep_alive_max));
    set_keep_alive_timeout(options_.keep_alive_timeout_s);
  }
  ~GuardedServer() override {
    if (ctx_) SSL_CTX_free(ctx_);
  }

 private:
  bool process_and_close_socket(socket_t sock) override;
  void Refused(const std::string& peer, int status, const std::string& why);
  // The TLS handshake within the request deadline; nullptr when it failed.
  SSL* Handshake(int fd);

  const GuardedServerOptions options_;
  SSL_CTX* const ctx_;
  ConnectionTable table_;
  // Refusals are logged once, then at most every 10 s with a count.
  std::mutex log_mu_;
  Clock::time_point last_log_{};
  int unlogged_ = 0;
};

void GuardedServer::Refused(const std::string& peer, int status, const std::string& why) {
  int more = 0;
  {
    std::lock_guard<std::mutex> lock(log_mu_);
    const auto now = Clock::now();
    if (last_log_ != Clock::time_point{} && now - last_log_ < std::chrono::seconds(10)) {
      ++unlogged_;
      return;
    }
    last_log_ = now;
    more = std::exchange(unlogged_, 0);
  }
  GetLogger(options_.name)
      ->warn("refused a request from {}: {} {}{}", peer.empty() ? "?" : peer, status, why,
             more > 0 ? absl::StrCat(" (and ", more, " more refused since the last such line)")
                      : std::string());
}

SSL* GuardedServer::Handshake(int fd) {
  SSL* ssl = SSL_new(ctx_);
  if (ssl == nullptr) return nullptr;
  SSL_set_fd(ssl, fd);
  const auto until = Clock::now() + options_.limits.request_deadline;
  for (;;) {
    ERR_clear_error();
    const int r = SSL_accept(ssl);
    if (r == 1) return ssl;
    const int e = SSL_get_error(ssl, r);
    short events = 0;
    if (e == SSL_ERROR_WANT_READ) events = POLLIN;
    if (e == SSL_ERROR_WANT_WRITE) events = POLLOUT;
    if (events == 0 || !WaitFor(fd, events, until)) {
      SSL_free(ssl);
      return nullptr;
    }
  }
}

bool GuardedServer::process_and_close_socket(socket_t sock) {
  const std::string peer = PeerAddress(sock);
  std::string why;
  if (tl_over_capacity || !table_.Admit(sock, peer, &why)) {
    if (why.empty()) {
      why = absl::StrCat("too many connections (", options_.limits.max_connections, ")");
    }
    Refused(peer, 503, why);
    if (ctx_ == nullptr) {
      const std::string text = HttpRefusalResponse(503, why);
      ::send(sock, text.data(), text.size(), MSG_DONTWAIT | MSG_NOSIGNAL);
      // On the accept thread (every connection thread taken) nothing waits.
      if (!tl_over_capacity) DrainBeforeClose(sock);
    }
    ::shutdown(sock, SHUT_RDWR);
    ::close(sock);
    return false;
  }
  fcntl(sock, F_SETFL, fcntl(sock, F_GETFL) | O_NONBLOCK);
  bool ok = false;
  bool refused = false;
  SSL* ssl = ctx_ ? Handshake(sock) : nullptr;
  if (ctx_ == nullptr || ssl != nullptr) {
    GuardedStream strm(sock, ssl, options_);
    for (int left = options_.keep_alive_max; left > 0; --left) {
      if (!strm.WaitForRequest(std::chrono::seconds(options_.keep_alive_timeout_s))) break;
      strm.BeginRequest();
      bool closed = false;
      ok = process_request(strm, left == 1, closed, nullptr);
      if (strm.refused()) {
        const HttpHeadGuard::Refusal r = strm.refusal();
        Refused(peer, r.status, r.reason);
        strm.SendRefusal();
        refused = true;
        ok = false;
        break;
      }
      if (!ok || closed) break;
    }
  }
  if (ssl != nullptr) {
    SSL_shutdown(ssl);
    SSL_free(ssl);
  }
  if (refused) DrainBeforeClose(sock);
  table_.Release(sock, peer);
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ok;
}

std::string OpenSslError() {
  const unsigned long e = ERR_get_error();
  if (e == 0) return "no detail";
  char text[256];
  ERR_error_string_n(e, text, sizeof(text));
  return text;
}

}  // namespace

absl::StatusOr<std::unique_ptr<httplib::Server>> NewGuardedServer(
    const GuardedServerOptions& options) {
  SSL_CTX* ctx = nullptr;
  if (!options.tls_cert_file.empty() || !options.tls_key_file.empty()) {
    ERR_clear_error();
    ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat(options.name, " TLS: ", OpenSslError()));
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION);
    if (SSL_CTX_use_certificate_chain_file(ctx, options.tls_cert_file.c_str()) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, options.tls_key_file.c_str(), SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
      const std::string detail = OpenSslError();
      SSL_CTX_free(ctx);
      return absl::FailedPreconditionError(
          absl::StrCat(options.name, " TLS: cannot load ", options.tls_cert_file, " and ",
                       options.tls_key_file, ": ", detail));
    }
  }
  return std::unique_ptr<httplib::Server>(new GuardedServer(options, ctx));
}

}  // namespace cmax
