// The connectivity suite's TCP probe against its listener on loopback, and
// the suite refusing to run outside a group.
#include <catch2/catch.hpp>

#include "benchmarks/connectivity/peer_link.h"
#include "common/subprocess.h"

using cmax::bench::connectivity::PeerListener;
using cmax::bench::connectivity::Probe;
using cmax::bench::connectivity::ProbeOptions;

TEST_CASE("a probe reaches its rank and measures RTT and transfer", "[connectivity]") {
  auto l = PeerListener::Start(3, 0, 0);
  REQUIRE(l.ok());
  ProbeOptions o;
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
  auto l = PeerListener::Start(1, 0, 0);
  REQUIRE(l.ok());
  ProbeOptions o;
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
