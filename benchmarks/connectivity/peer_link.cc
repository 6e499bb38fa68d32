#include "benchmarks/connectivity/peer_link.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <random>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/median.h"
#include "common/secrets.h"
#include "common/time_util.h"

namespace cmax::bench::connectivity {
namespace {

constexpr char kMagic[8] = {'C', 'M', 'A', 'X', 'C', 'N', '0', '2'};

void SetTimeouts(int fd, double seconds) {
  timeval tv;
  tv.tv_sec = static_cast<time_t>(seconds);
  tv.tv_usec = static_cast<suseconds_t>((seconds - static_cast<double>(tv.tv_sec)) * 1e6);
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

bool SendAll(int fd, const void* data, size_t n) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool RecvAll(int fd, void* data, size_t n) {
  char* p = static_cast<char*>(data);
  while (n > 0) {
    ssize_t r = recv(fd, p, n, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

std::string SysError(const char* what) { return absl::StrCat(what, ": ", strerror(errno)); }

// Connects with a timeout. Returns the fd, or -1 with `error` set.
int ConnectTimeout(const std::string& address, int port, double timeout_s, std::string* error) {
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, address.c_str(), &sa.sin_addr) != 1) {
    *error = "not an IPv4 address";
    return -1;
  }
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) {
    *error = SysError("socket");
    return -1;
  }
  if (connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
    if (errno != EINPROGRESS) {
      *error = SysError("connect");
      close(fd);
      return -1;
    }
    pollfd p{fd, POLLOUT, 0};
    int r;
    do {
      r = poll(&p, 1, static_cast<int>(timeout_s * 1000));
    } while (r < 0 && errno == EINTR);
    if (r == 0) {
      *error = absl::StrCat("connect: no answer within ", timeout_s, " s");
      close(fd);
      return -1;
    }
    int err = 0;
    socklen_t len = sizeof(err);
    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (r < 0 || err != 0) {
      *error = absl::StrCat("connect: ", strerror(r < 0 ? errno : err));
      close(fd);
      return -1;
    }
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

}  // namespace

absl::StatusOr<std::unique_ptr<PeerListener>> PeerListener::Start(
    int rank, int low, int high, const ListenerOptions& options) {
  if (options.secret.size() != kSecretBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("the listener needs the task's ", kSecretBytes, "-byte secret"));
  }
  if (options.bind.empty()) return absl::InvalidArgumentError("no address to listen on");
  std::vector<sockaddr_in> addrs;
  for (const std::string& a : options.bind) {
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    if (inet_pton(AF_INET, a.c_str(), &sa.sin_addr) != 1) {
      return absl::InvalidArgumentError(absl::StrCat("cannot listen on '", a,
                                                     "': not an IPv4 address"));
    }
    addrs.push_back(sa);
  }
  auto close_all = [](std::vector<int>& fds) {
    for (int fd : fds) close(fd);
    fds.clear();
  };
  // Binds every address on `port` (0: the first picks, the rest follow).
  auto bind_all = [&](int port, std::vector<int>* fds, int* bound_port,
                      std::string* error) -> bool {
    for (sockaddr_in sa : addrs) {
      int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      if (fd < 0) {
        *error = SysError("socket");
        return false;
      }
      fds->push_back(fd);
      int one = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
      sa.sin_port = htons(static_cast<uint16_t>(port));
      char text[INET_ADDRSTRLEN] = {0};
      inet_ntop(AF_INET, &sa.sin_addr, text, sizeof(text));
      if (bind(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) != 0) {
        *error = SysError(absl::StrCat("bind ", text, ":", port).c_str());
        return false;
      }
      if (listen(fd, 128) != 0) {
        *error = SysError("listen");
        return false;
      }
      if (port == 0) {
        socklen_t len = sizeof(sa);
        getsockname(fd, reinterpret_cast<sockaddr*>(&sa), &len);
        port = ntohs(sa.sin_port);
      }
    }
    *bound_port = port;
    return true;
  };
  std::vector<int> fds;
  int port = 0;
  std::string last = "no port tried";
  bool bound = false;
  if (low == 0) {
    // The ephemeral port of the first address may be taken on another.
    for (int tries = 0; tries < 20 && !bound; ++tries) {
      bound = bind_all(0, &fds, &port, &last);
      if (!bound) close_all(fds);
    }
  } else {
    for (int p = low; p <= std::max(low, high) && !bound; ++p) {
      bound = bind_all(p, &fds, &port, &last);
      if (!bound) close_all(fds);
    }
  }
  if (!bound) return absl::UnavailableError(last);
  std::unique_ptr<PeerListener> l(new PeerListener(std::move(fds), port, rank, options));
  l->accept_thread_ = std::thread([p = l.get()] { p->AcceptLoop(); });
  return l;
}

PeerListener::~PeerListener() { Stop(); }

void PeerListener::Stop() {
  if (stopping_.exchange(true)) return;
  for (int fd : fds_) shutdown(fd, SHUT_RDWR);
  if (accept_thread_.joinable()) accept_thread_.join();
  for (int fd : fds_) close(fd);
  std::vector<Worker> workers;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : open_fds_) shutdown(fd, SHUT_RDWR);
    workers.swap(workers_);
  }
  for (auto& w : workers) w.thread.join();
}

void PeerListener::JoinFinishedLocked() {
  for (auto it = workers_.begin(); it != workers_.end();) {
    if (it->done->load()) {
      it->thread.join();
      it = workers_.erase(it);
    } else {
      ++it;
    }
  }
}

void PeerListener::AcceptLoop() {
  std::vector<pollfd> polls;
  for (int fd : fds_) polls.push_back({fd, POLLIN, 0});
  while (!stopping_) {
    for (auto& p : polls) p.revents = 0;
    int r = poll(polls.data(), polls.size(), 200);
    {
      std::lock_guard<std::mutex> lock(mu_);
      JoinFinishedLocked();
    }
    if (r <= 0) continue;
    for (const auto& p : polls) {
      if (!(p.revents & POLLIN)) continue;
      int c = accept4(p.fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (c < 0) continue;
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) {
        close(c);
        return;
      }
      if (static_cast<int>(open_fds_.size()) >= options_.max_connections) {
        ++refused_;
        close(c);  // over the limit: no thread, no byte read
        continue;
      }
      open_fds_.push_back(c);
      auto done = std::make_shared<std::atomic<bool>>(false);
      workers_.push_back({std::thread([this, c, done] {
                            Serve(c);
                            done->store(true);
                          }),
                          done});
    }
  }
}

void PeerListener::Serve(int fd) {
  // The handshake first, within its own short timeout: the magic and the
  // task's secret, or the connection is closed without a byte sent back.
  SetTimeouts(fd, options_.handshake_timeout_s);
  char hello_in[sizeof(kMagic) + kSecretBytes];
  bool admitted = RecvAll(fd, hello_in, sizeof(hello_in)) &&
                  memcmp(hello_in, kMagic, sizeof(kMagic)) == 0 &&
                  SameSecret(std::string(hello_in + sizeof(kMagic), kSecretBytes),
                             options_.secret);
  if (!admitted) ++refused_;
  if (admitted) {
    SetTimeouts(fd, 60);
    char hello[12];
    memcpy(hello, kMagic, 8);
    uint32_t r = htonl(static_cast<uint32_t>(rank_));
    memcpy(hello + 8, &r, 4);
    if (SendAll(fd, hello, sizeof(hello))) {
      std::vector<char> buf(1 << 16);
      for (;;) {
        char op;
        if (!RecvAll(fd, &op, 1)) break;
        if (op == 'p') {
          if (!SendAll(fd, &op, 1)) break;
        } else if (op == 'T') {
          uint64_t be;
          if (!RecvAll(fd, &be, 8)) break;
          uint64_t n = be64toh(be);
          bool ok = true;
          while (n > 0 && ok) {
            size_t chunk = static_cast<size_t>(std::min<uint64_t>(n, buf.size()));
            ssize_t got = recv(fd, buf.data(), chunk, 0);
            if (got < 0 && errno == EINTR) continue;
            ok = got > 0;
            if (ok) n -= static_cast<uint64_t>(got);
          }
          char done = 'D';
          if (!ok || !SendAll(fd, &done, 1)) break;
        } else {
          break;  // 'q' or anything unexpected
        }
      }
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  open_fds_.erase(std::remove(open_fds_.begin(), open_fds_.end(), fd), open_fds_.end());
  close(fd);
}

ProbeResult Probe(const std::vector<std::string>& addresses, int port, int expected_rank,
                  const ProbeOptions& options) {
  ProbeResult result;
  int fd = -1;
  for (const std::string& address : addresses) {
    AddressAttempt attempt{address, ""};
    fd = ConnectTimeout(address, port, options.connect_timeout_s, &attempt.error);
    if (fd >= 0) {
      SetTimeouts(fd, options.io_timeout_s);
      char hello[12];
      std::string opening(kMagic, sizeof(kMagic));
      opening += options.secret;
      if (options.secret.size() != kSecretBytes) {
        attempt.error = "no task secret to present to the peer";
      } else if (!SendAll(fd, opening.data(), opening.size()) ||
                 !RecvAll(fd, hello, sizeof(hello)) || memcmp(hello, kMagic, 8) != 0) {
        attempt.error =
            "connected, but the peer did not answer as a cmax connectivity rank of this task";
      } else {
        uint32_t be;
        memcpy(&be, hello + 8, 4);
        int rank = static_cast<int>(ntohl(be));
        if (rank != expected_rank) {
          attempt.error = absl::StrCat("answered as rank ", rank, ", not ", expected_rank);
        }
      }
      if (!attempt.error.empty()) {
        close(fd);
        fd = -1;
      }
    }
    result.attempts.push_back(attempt);
    if (fd >= 0) {
      result.address = address;
      break;
    }
  }
  if (fd < 0) return result;
  result.reachable = true;

  // Ping-pongs: one warm-up, then the median of `pings`.
  std::vector<double> rtts;
  char op = 'p';
  for (int i = 0; i <= options.pings; ++i) {
    const int64_t t0 = MonotonicNs();
    char back;
    if (!SendAll(fd, &op, 1) || !RecvAll(fd, &back, 1) || back != 'p') {
      result.error = SysError("ping-pong");
      break;
    }
    if (i > 0) rtts.push_back(static_cast<double>(MonotonicNs() - t0) / 1e6);
  }
  if (!rtts.empty()) result.rtt_ms = Median(rtts);
  if (result.error.empty() && options.transfer_bytes > 0) {
    // Random bytes (nothing on the path may compress them).
    std::vector<char> buf(static_cast<size_t>(std::min<int64_t>(options.transfer_bytes, 1 << 20)));
    std::mt19937_64 rng(static_cast<uint64_t>(expected_rank) * 7919 + 17);
    for (size_t i = 0; i + 8 <= buf.size(); i += 8) {
      uint64_t v = rng();
      memcpy(buf.data() + i, &v, 8);
    }
    char header[9];
    header[0] = 'T';
    uint64_t be = htobe64(static_cast<uint64_t>(options.transfer_bytes));
    memcpy(header + 1, &be, 8);
    const int64_t t0 = MonotonicNs();
    bool ok = SendAll(fd, header, sizeof(header));
    int64_t left = options.transfer_bytes;
    while (ok && left > 0) {
      size_t chunk = static_cast<size_t>(std::min<int64_t>(left, static_cast<int64_t>(buf.size())));
      ok = SendAll(fd, buf.data(), chunk);
      left -= static_cast<int64_t>(chunk);
    }
    char done = 0;
    ok = ok && RecvAll(fd, &done, 1) && done == 'D';
    const double seconds = static_cast<double>(MonotonicNs() - t0) / 1e9;
    if (ok && seconds > 0) {
      result.transfer_mbps = static_cast<double>(options.transfer_bytes) * 8 / 1e6 / seconds;
    } else if (!ok) {
      result.error = SysError("transfer");
    }
  }
  char quit = 'q';
  SendAll(fd, &quit, 1);
  close(fd);
  return result;
}

std::vector<std::string> ListenAddresses() {
  const char* advertised = std::getenv("CMAX_ADVERTISE");
  if (advertised == nullptr || *advertised == '\0') return LocalAddresses();
  std::vector<std::string> out;
  auto add = [&out](const std::string& a) {
    if (std::find(out.begin(), out.end(), a) == out.end()) out.push_back(a);
  };
  for (absl::string_view entry : absl::StrSplit(advertised, ',', absl::SkipWhitespace())) {
    const std::string name(absl::StripAsciiWhitespace(entry));
    in_addr literal{};
    if (inet_pton(AF_INET, name.c_str(), &literal) == 1) {
      add(name);
      continue;
    }
    addrinfo hints{};
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    if (getaddrinfo(name.c_str(), nullptr, &hints, &res) != 0) continue;
    for (addrinfo* ai = res; ai != nullptr; ai = ai->ai_next) {
      char text[INET_ADDRSTRLEN] = {0};
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(ai->ai_addr)->sin_addr, text,
                sizeof(text));
      add(text);
    }
    freeaddrinfo(res);
  }
  return out.empty() ? LocalAddresses() : out;
}

std::vector<std::string> LocalAddresses() {
  std::vector<std::string> out;
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (ifaddrs* ifa = list; ifa != nullptr; ifa = ifa->ifa_next) {
      if (ifa->ifa_addr == nullptr || ifa->ifa_addr->sa_family != AF_INET) continue;
      if (!(ifa->ifa_flags & IFF_UP) || (ifa->ifa_flags & IFF_LOOPBACK)) continue;
      char text[INET_ADDRSTRLEN] = {0};
      inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(ifa->ifa_addr)->sin_addr, text,
                sizeof(text));
      if (std::find(out.begin(), out.end(), text) == out.end()) out.push_back(text);
    }
    freeifaddrs(list);
  }
  if (out.empty()) out.push_back("127.0.0.1");
  return out;
}

}  // namespace cmax::bench::connectivity
