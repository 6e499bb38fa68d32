// The connectivity suite's TCP probe against its listener on loopback, and
// the suite refusing to run outside a group.
#include <catch2/catch.hpp>

#include "benchmarks/connectivity/peer_link.h"
#include "common/subprocess.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

using cmax::bench::connectivity::ListenerOptions;
using cmax::bench::connectivity::PeerListener;
using cmax::bench::connectivity::Probe;
using cmax::bench::connectivity::ProbeOptions;

namespace {

constexpr char kSecret[] = "0123456789abcdef0123456789abcdef";

ListenerOptions Loopback(int max_connections = 64) {
  ListenerOptions o;
  o.bind = {"127.0.0.1"};
  o.secret = kSecret;
  o.max_connections = max_connections;
  o.handshake_timeout_s = 1;
  return o;
}

int Connect(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(static_cast<uint16_t>(port));
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof(sa)) == 0);
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  return fd;
}

// Milliseconds until the server closes `fd` (recv returns 0 or an error),
// -1 when it answered with data instead.
double MsUntilClosed(int fd) {
  auto t0 = std::chrono::steady_clock::now();
  char b;
  ssize_t n = recv(fd, &b, 1, 0);
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                  .count();
  return n > 0 ? -1 : ms;
}

}  // namespace

TEST_CASE("a probe reaches its rank and measures RTT and transfer", "[connectivity]") {
  auto l = PeerListener::Start(3, 0, 0, Loopback());
  REQUIRE(l.ok());
  ProbeOptions o;
  o.secret = kSecret;
  o.pings = 5;
  o.transfer_bytes = 1 << 20;
  auto r = Probe({"127.0.0.1"}, (*l)->port(), 3, o);
  CHECK(r.reachable);
  CHECK(r.address == "127.0.0.1");
  CHECK(r.rtt_ms > 0);
  CHECK(r.rtt_ms < 50);
  CHECK(r.transfer_mbps > 0);
  CHECK(r.error.empty());
}

TEST_CASE("a probe does not count the wrong rank or a closed port as reached",
          "[connectivity]") {
  auto l = PeerListener::Start(1, 0, 0, Loopback());
  REQUIRE(l.ok());
  ProbeOptions o;
  o.secret = kSecret;
  o.connect_timeout_s = 0.5;
  auto wrong = Probe({"127.0.0.1"}, (*l)->port(), 2, o);
  CHECK_FALSE(wrong.reachable);
  REQUIRE(wrong.attempts.size() == 1);
  CHECK(wrong.attempts[0].error.find("answered as rank 1, not 2") != std::string::npos);
  const int port = (*l)->port();
  (*l)->Stop();
  auto closed = Probe({"not-an-address", "127.0.0.1"}, port, 1, o);
  CHECK_FALSE(closed.reachable);
  REQUIRE(closed.attempts.size() == 2);
  CHECK(closed.attempts[0].error == "not an IPv4 address");
  CHECK(closed.attempts[1].error.find("refused") != std::string::npos);
}

TEST_CASE("connectivity alone says it needs a gang and exits 2", "[connectivity]") {
  auto r = cmax::RunCommand({std::string(CMAX_TEST_BIN_DIR) + "/cmax-bench", "connectivity",
                             "--jsonl"},
                            std::chrono::seconds(30), 1 << 20, {{"CMAX_RENDEZVOUS", ""}});
  REQUIRE(r.ok());
  CHECK(r->exit.code == 2);
  CHECK(r->err.find("needs a gang") != std::string::npos);
  CHECK(r->out.find("not measured") != std::string::npos);
}

TEST_CASE("a connection without the task's secret is closed at once", "[connectivity][security]") {
  auto l = PeerListener::Start(2, 0, 0, Loopback());
  REQUIRE(l.ok());
  const int port = (*l)->port();
  // Magic and a wrong secret of the right length: closed without an answer.
  int wrong = Connect(port);
  std::string opening = std::string("CMAXCN02") + "ffffffffffffffffffffffffffffffff";
  REQUIRE(send(wrong, opening.data(), opening.size(), MSG_NOSIGNAL) ==
          static_cast<ssize_t>(opening.size()));
  double ms = MsUntilClosed(wrong);
  CHECK(ms >= 0);    // no rank came back
  CHECK(ms < 500);   // and not after a timeout
  close(wrong);
  // Nothing at all: closed after the handshake timeout (1 s here).
  int silent = Connect(port);
  double silent_ms = MsUntilClosed(silent);
  CHECK(silent_ms >= 0);
  CHECK(silent_ms < 3000);
  close(silent);
  // A probe with another task's secret is not counted as reaching the rank.
  ProbeOptions o;
  o.secret = "ffffffffffffffffffffffffffffffff";
  o.connect_timeout_s = 0.5;
  auto r = Probe({"127.0.0.1"}, port, 2, o);
  CHECK_FALSE(r.reachable);
  CHECK((*l)->refused() >= 3);
  // The right secret still gets in.
  o.secret = kSecret;
  o.pings = 2;
  o.transfer_bytes = 0;
  CHECK(Probe({"127.0.0.1"}, port, 2, o).reachable);
}

TEST_CASE("the listener binds only its addresses and bounds its connections",
          "[connectivity][security]") {
  auto l = PeerListener::Start(0, 0, 0, Loopback(/*max_connections=*/2));
  REQUIRE(l.ok());
  const int port = (*l)->port();
  // Bound to 127.0.0.1, not the wildcard: 127.0.0.2 (also loopback) finds
  // nothing there.
  ProbeOptions o;
  o.secret = kSecret;
  o.connect_timeout_s = 0.5;
  auto other = Probe({"127.0.0.2"}, port, 0, o);
  CHECK_FALSE(other.reachable);
  REQUIRE(other.attempts.size() == 1);
  CHECK(other.attempts[0].error.find("refused") != std::string::npos);
  // Two idle connections fill it; a third is closed at once.
  int a = Connect(port), b = Connect(port);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  int c = Connect(port);
  double ms = MsUntilClosed(c);
  CHECK(ms >= 0);
  CHECK(ms < 500);
  close(a);
  close(b);
  close(c);
  CHECK(ListenerOptions{}.max_connections == 64);
  ListenerOptions none = Loopback();
  none.secret = "";
  CHECK_FALSE(PeerListener::Start(0, 0, 0, none).ok());
}

// Issue 13, trial agents stay on loopback: a rank listens on and publishes
// the agent's --advertise addresses (CMAX_ADVERTISE) when it has them.
TEST_CASE("ranks listen on the agent's advertised addresses when it has them", "[connectivity]") {
  using cmax::bench::connectivity::ListenAddresses;
  using cmax::bench::connectivity::LocalAddresses;
  setenv("CMAX_ADVERTISE", "127.0.0.1, localhost,no-such-host.invalid", 1);
  CHECK(ListenAddresses() == std::vector<std::string>{"127.0.0.1"});
  setenv("CMAX_ADVERTISE", "127.0.0.2", 1);
  CHECK(ListenAddresses() == std::vector<std::string>{"127.0.0.2"});
  unsetenv("CMAX_ADVERTISE");
  CHECK(ListenAddresses() == LocalAddresses());
}
