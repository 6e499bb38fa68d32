// The HTTP guard (common/http_guard.h) on its own, and in front of a real
// listener: the /metrics endpoint (common/metrics_http.h) under the floods
// of the second security review (issue 28 item 2), with raw sockets on
// 127.0.0.0/8 only.
#include "common/http_guard.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <catch2/catch.hpp>
#include <chrono>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/metrics_http.h"

namespace cmax {
namespace {

using Clock = std::chrono::steady_clock;

// ---- the rules -----------------------------------------------------------

TEST_CASE("the guard passes a GET and a POST with a small body, pipelined", "[http_guard]") {
  HttpHeadGuard g{HttpLimits{}};
  const std::string two =
      "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
      "POST /login HTTP/1.1\r\nContent-Length: 5\r\n\r\nabcde"
      "GET / HTTP/1.1\r\n\r\n";
  CHECK(g.Admit(two) == two.size());
  CHECK_FALSE(g.refused());
  CHECK(g.at_request_start());
}

TEST_CASE("the guard refuses a head of too many lines or bytes before it ends", "[http_guard]") {
  HttpLimits l;
  HttpHeadGuard lines{l};
  std::string flood = "GET / HTTP/1.1\r\n";
  for (int i = 0; i < 30000; ++i) absl::StrAppend(&flood, "X-", i, ": a\r\n");
  const size_t n = lines.Admit(flood);
  REQUIRE(lines.refused());
  CHECK(lines.refusal().status == 431);
  CHECK(n < 1024);  // the request line and 62 short headers at most
  CHECK(lines.Admit("\r\n") == 0);  // nothing more, ever

  HttpHeadGuard bytes{l};
  const std::string long_header = "GET / HTTP/1.1\r\nX: " + std::string(20000, 'a');
  CHECK(bytes.Admit(long_header) == l.max_head_bytes);
  CHECK(bytes.refusal().status == 431);
}

TEST_CASE("the guard refuses a body it cannot bound before reading it", "[http_guard]") {
  struct Case {
    std::string head;
    int status;
  };
  const std::vector<Case> cases = {
      {"POST /login HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", 411},
      {"POST /login HTTP/1.1\r\ntransfer-encoding: identity\r\n\r\n", 411},
      {"POST /login HTTP/1.1\r\nHost: a\r\n\r\n", 411},
      {"PUT /x HTTP/1.1\r\n\r\n", 411},
      {"POST /login HTTP/1.1\r\nContent-Length: 33554432\r\n\r\n", 413},
      {"GET / HTTP/1.1\r\nContent-Length: 4097\r\n\r\n", 413},
      {"POST /login HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400},
      {"POST /login HTTP/1.1\r\nContent-Length: +5\r\n\r\n", 400},
      {"POST /login HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n\r\n", 400},
  };
  for (const Case& c : cases) {
    INFO(c.head);
    HttpHeadGuard g{HttpLimits{}};
    // Everything but the head's last byte: the parser never sees a whole head.
    CHECK(g.Admit(c.head) == c.head.size() - 1);
    REQUIRE(g.refused());
    CHECK(g.refusal().status == c.status);
  }
  HttpHeadGuard ok{HttpLimits{}};
  const std::string at_cap = "POST /login HTTP/1.1\r\nContent-Length: 4096\r\n\r\n";
  CHECK(ok.Admit(at_cap) == at_cap.size());
  CHECK(ok.Admit(std::string(4096, 'b')) == 4096);
  CHECK(ok.at_request_start());
}

TEST_CASE("a refusal is a whole HTTP answer that closes the connection", "[http_guard]") {
  const std::string r = HttpRefusalResponse(413, "a request body is at most 4096 bytes");
  CHECK(absl::StartsWith(r, "HTTP/1.1 413 Payload Too Large\r\n"));
  CHECK(absl::StrContains(r, "\r\nConnection: close\r\n"));
  CHECK(absl::EndsWith(r, "\r\n\r\n413 a request body is at most 4096 bytes\n"));
}

// ---- a real listener -----------------------------------------------------

// A TCP connection from `source` (an address in 127.0.0.0/8) to
// 127.0.0.1:port; -1 when it cannot be made.
int Connect(int port, const char* source = "127.0.0.1") {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in from{};
  from.sin_family = AF_INET;
  inet_pton(AF_INET, source, &from.sin_addr);
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof(from)) != 0 ||
      connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof(to)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// Sends what it can (the server may close midway): false once it cannot.
bool Send(int fd, const std::string& s) {
  size_t done = 0;
  while (done < s.size()) {
    const ssize_t n = send(fd, s.data() + done, s.size() - done, MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

// What arrives until the server closes or `timeout` passes.
std::string ReadUntilClosed(int fd, std::chrono::milliseconds timeout) {
  std::string out;
  const auto until = Clock::now() + timeout;
  char buf[4096];
  while (Clock::now() < until) {
    pollfd p{fd, POLLIN, 0};
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()).count();
    if (poll(&p, 1, static_cast<int>(std::max<int64_t>(left, 1))) <= 0) break;
    const ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

// One authorised GET /metrics on a fresh connection: the status line.
std::string AuthorisedGet(int port, const char* source, const std::string& token) {
  const int fd = Connect(port, source);
  if (fd < 0) return "no connection";
  Send(fd, absl::StrCat("GET /metrics HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ", token,
                        "\r\nConnection: close\r\n\r\n"));
  const std::string reply = ReadUntilClosed(fd, std::chrono::seconds(5));
  close(fd);
  return reply.substr(0, reply.find("\r\n"));
}

// This process's resident memory in MiB.
double RssMib() {
  long pages = 0;
  long resident = 0;
  if (FILE* f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = 0;
    std::fclose(f);
  }
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) /
         (1024.0 * 1024.0);
}

std::unique_ptr<MetricsHttpServer> StartMetrics(const std::string& token) {
  MetricsHttpOptions o;
  o.listen = "127.0.0.1:0";
  o.token = token;
  auto s = MetricsHttpServer::Start(o, [] { return std::string("cmax_up 1\n"); });
  REQUIRE(s.ok());
  return std::move(*s);
}

TEST_CASE("/metrics takes the read-only token besides the token, and nothing else",
          "[http_guard][metrics][security]") {
  MetricsHttpOptions o;
  o.listen = "127.0.0.1:0";
  o.token = "the-main-token";
  o.read_token = "the-read-token";
  auto s = MetricsHttpServer::Start(o, [] { return std::string("cmax_up 1\n"); });
  REQUIRE(s.ok());
  const int port = (*s)->port();
  CHECK(absl::StartsWith(AuthorisedGet(port, "127.0.0.1", "the-read-token"), "HTTP/1.1 200"));
  CHECK(absl::StartsWith(AuthorisedGet(port, "127.0.0.1", "the-main-token"), "HTTP/1.1 200"));
  CHECK(absl::StartsWith(AuthorisedGet(port, "127.0.0.1", "the-read-tokenX"), "HTTP/1.1 401"));
  CHECK(absl::StartsWith(AuthorisedGet(port, "127.0.0.1", ""), "HTTP/1.1 401"));
}

TEST_CASE("header floods and unbounded bodies leave the metrics endpoint's memory where it was",
          "[http_guard][flood]") {
  const std::string token = "flood-test-token";
  auto server = StartMetrics(token);
  const int port = server->port();
  REQUIRE(absl::StartsWith(AuthorisedGet(port, "127.0.0.1", token), "HTTP/1.1 200"));
  const double before = RssMib();

  // Ten connections, each 30,000 headers, none with a credential; four at a
  // time (the endpoint's cap from one address), one source address each.
  std::string flood = "GET /metrics HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 30000; ++i) absl::StrAppend(&flood, "X-Flood-", i, ": ", std::string(64, 'f'), "\r\n");
  std::vector<std::thread> senders;
  std::atomic<int> answered_431{0};
  for (int c = 0; c < 10; ++c) {
    senders.emplace_back([&, c] {
      const std::string source = absl::StrCat("127.0.1.", c + 1);
      const int fd = Connect(port, source.c_str());
      if (fd < 0) return;
      Send(fd, flood);  // cut short when the server closes
      const std::string reply = ReadUntilClosed(fd, std::chrono::seconds(5));
      if (absl::StartsWith(reply, "HTTP/1.1 431")) ++answered_431;
      close(fd);
    });
  }
  for (auto& t : senders) t.join();
  CHECK(answered_431 == 10);

  // Bodies: chunked, length-less, and 32 MiB declared; each answered before
  // its body is read.
  struct Body {
    std::string head;
    std::string status;
  };
  const std::vector<Body> bodies = {
      {"POST /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", "411"},
      {"POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n", "411"},
      {"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 33554432\r\n\r\n", "413"},
  };
  for (const Body& b : bodies) {
    INFO(b.head);
    const int fd = Connect(port);
    REQUIRE(fd >= 0);
    REQUIRE(Send(fd, b.head));
    // The answer comes without a byte of body sent.
    const std::string reply = ReadUntilClosed(fd, std::chrono::seconds(3));
    CHECK(absl::StartsWith(reply, absl::StrCat("HTTP/1.1 ", b.status)));
    // And whatever is sent after it is not read into memory.
    std::string chunk(1 << 20, 'c');
    for (int i = 0; i < 32 && Send(fd, chunk); ++i) {
    }
    close(fd);
  }
  const double after = RssMib();
  INFO("RSS " << before << " MiB before, " << after << " MiB after");
  CHECK(after - before < 64.0);
  CHECK(absl::StartsWith(AuthorisedGet(port, "127.0.0.1", token), "HTTP/1.1 200"));
}

TEST_CASE("16 slow clients neither starve an authorised request nor keep their connections",
          "[http_guard][slowloris]") {
  const std::string token = "slowloris-test-token";
  auto server = StartMetrics(token);
  const int port = server->port();
  const HttpLimits limits;  // the deadline every request has
  std::atomic<int> got_408{0};
  std::atomic<int> got_503{0};
  std::atomic<int> other{0};
  std::vector<std::thread> slow;
  const auto started = Clock::now();
  for (int c = 0; c < 16; ++c) {
    slow.emplace_back([&] {
      const int fd = Connect(port);
      if (fd < 0) {
        ++other;
        return;
      }
      std::string reply;
      // A byte every 2 s, for at most the deadline and 4 s more.
      const auto until = Clock::now() + limits.request_deadline + std::chrono::seconds(4);
      bool open = Send(fd, "GET /metrics HTTP/1.1\r\n");
      while (open && Clock::now() < until) {
        reply += ReadUntilClosed(fd, std::chrono::seconds(2));
        if (!reply.empty()) break;
        open = Send(fd, "X");
      }
      reply += ReadUntilClosed(fd, std::chrono::seconds(1));
      if (absl::StartsWith(reply, "HTTP/1.1 408")) {
        ++got_408;
      } else if (absl::StartsWith(reply, "HTTP/1.1 503")) {
        ++got_503;
      } else {
        ++other;
      }
      close(fd);
    });
  }
  std::this_thread::sleep_for(std::chrono::seconds(1));
  // From another address, as a Prometheus server beside the attacker would.
  const auto asked = Clock::now();
  const std::string status = AuthorisedGet(port, "127.0.0.2", token);
  const auto answered = Clock::now() - asked;
  CHECK(absl::StartsWith(status, "HTTP/1.1 200"));
  CHECK(answered < std::chrono::seconds(5));
  for (auto& t : slow) t.join();
  // The endpoint admits 4 connections from one address: those are cut at
  // the deadline (408), the other 12 refused at once (503).
  CHECK(got_408 == 4);
  CHECK(got_503 == 12);
  CHECK(other == 0);
  CHECK(Clock::now() - started < limits.request_deadline + std::chrono::seconds(8));
  // Their places are free again.
  CHECK(absl::StartsWith(AuthorisedGet(port, "127.0.0.1", token), "HTTP/1.1 200"));
}

}  // namespace
}  // namespace cmax
