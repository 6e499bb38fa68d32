// The agent registry: connection states, heartbeat timeouts, clock offsets.
#include "coordinator/registry.h"

#include <catch2/catch.hpp>

#include "tests/coordinator/fake_session.h"

namespace cmax::coordinator {
namespace {

constexpr int64_t kS = 1'000'000'000;
constexpr int64_t kMs = 1'000'000;

TEST_CASE("agents go connected, disconnected, lost and back", "[registry]") {
  Registry reg(15 * kS);
  FakeSession s1, s2;
  CHECK(reg.OnHello(HelloFrom("a"), &s1, 0, 0) == nullptr);
  CHECK(reg.IsConnected("a"));
  CHECK(reg.NodeOf(&s1) == "a");
  // Heard within the timeout: stays.
  reg.OnHeard(&s1, 10 * kS, 0);
  CHECK(reg.ExpireSilent(24 * kS).empty());
  // Silent past the timeout while the stream is open: lost (a partition).
  CHECK(reg.ExpireSilent(26 * kS) == std::vector<std::string>{"a"});
  CHECK(reg.Find("a")->state == AgentState::kLost);
  CHECK_FALSE(reg.IsConnected("a"));
  // A new connection brings it back and replaces the old session.
  CHECK(reg.OnHello(HelloFrom("a"), &s2, 30 * kS, 0) == &s1);
  CHECK(reg.IsConnected("a"));
  CHECK(reg.NodeOf(&s1).empty());
  // The replaced stream ending changes nothing.
  CHECK(reg.OnStreamEnded(&s1, 31 * kS).empty());
  CHECK(reg.IsConnected("a"));
  // The current one ending: disconnected, then lost after the timeout.
  CHECK(reg.OnStreamEnded(&s2, 32 * kS) == "a");
  CHECK(reg.Find("a")->state == AgentState::kDisconnected);
  CHECK(reg.ExpireSilent(46 * kS).empty());
  CHECK(reg.ExpireSilent(48 * kS) == std::vector<std::string>{"a"});
  CHECK(reg.ExpireSilent(100 * kS).empty());  // reported once
}

TEST_CASE("remembered agents turn lost unless they come back in time", "[registry]") {
  Registry reg(15 * kS);
  reg.AddRemembered("a", {}, 0);
  reg.AddRemembered("b", {}, 0);
  CHECK(reg.Find("a")->state == AgentState::kDisconnected);
  FakeSession s;
  reg.OnHello(HelloFrom("b"), &s, 10 * kS, 0);
  CHECK(reg.ExpireSilent(16 * kS) == std::vector<std::string>{"a"});
  CHECK(reg.IsConnected("b"));
}

TEST_CASE("a disconnected agent has its reconnect gap even under a short timeout",
          "[registry]") {
  // --heartbeat-timeout 5: a silent connected agent is lost after 5 s, but
  // one whose stream ended may wait up to 12.5 s to redial (10 s backoff
  // + 25 % jitter), so it is lost only after 15 s.
  Registry reg(5 * kS);
  FakeSession s1, s2;
  reg.OnHello(HelloFrom("quiet"), &s1, 0, 0);
  reg.OnHello(HelloFrom("gone"), &s2, 0, 0);
  reg.OnHeard(&s1, 0, 0);
  CHECK(reg.OnStreamEnded(&s2, 1 * kS) == "gone");
  CHECK(reg.ExpireSilent(6 * kS) == std::vector<std::string>{"quiet"});
  CHECK(reg.ExpireSilent(14 * kS).empty());
  CHECK(reg.ExpireSilent(17 * kS) == std::vector<std::string>{"gone"});
  // Remembered agents (a coordinator restart) get the same grace.
  Registry restarted(5 * kS);
  restarted.AddRemembered("r", {}, 0);
  CHECK(restarted.ExpireSilent(10 * kS).empty());
  CHECK(restarted.ExpireSilent(16 * kS) == std::vector<std::string>{"r"});
}

TEST_CASE("an agent the stream heard is not lost while the core is behind", "[registry]") {
  // The stream stamps each read (service.cc); the core's OnHeard comes when
  // its queue gets to the message, which a big SubmitRun or a starved CPU
  // can delay past the timeout.
  Registry reg(15 * kS);
  FakeSession s;
  reg.OnHello(HelloFrom("busy"), &s, 0, 0);
  reg.OnHeard(&s, 0, 0);
  s.received_ns = 20 * kS;  // read at 20 s, not yet handled by the core
  CHECK(reg.ExpireSilent(30 * kS).empty());
  CHECK(reg.ExpireSilent(36 * kS) == std::vector<std::string>{"busy"});
}

TEST_CASE("clock offset and round trip from ping and pong", "[registry]") {
  Registry reg(15 * kS);
  FakeSession s;
  reg.OnHello(HelloFrom("a"), &s, 0, 0);
  // Before any sample the agent's clock is taken as ours.
  CHECK(reg.ToAgentClock("a", 1000) == 1000);
  // The agent's clock runs 5 ms ahead; 1 ms each way; 0.1 ms in the agent.
  // A small epoch keeps the doubles in the estimate exact.
  const int64_t t1 = 1'000'000'000'000;
  const int64_t t2 = t1 + 1 * kMs + 5 * kMs;
  const int64_t t3 = t2 + kMs / 10;
  const int64_t t4 = t3 - 5 * kMs + 1 * kMs;
  v1::Pong p;
  p.set_t1_ns(t1);
  p.set_t2_ns(t2);
  p.set_t3_ns(t3);
  reg.OnPong(&s, p, t4);
  const AgentEntry* e = reg.Find("a");
  CHECK(e->offset_ns == Approx(5.0 * kMs));
  CHECK(e->rtt_ns == Approx(2.0 * kMs));
  CHECK(reg.ToAgentClock("a", t1) == t1 + 5 * kMs);
  // A sample with a much longer round trip (queuing) does not replace it.
  v1::Pong slow;
  slow.set_t1_ns(t1);
  slow.set_t2_ns(t1 + 50 * kMs + 5 * kMs);  // 50 ms out, 1 ms back: skewed
  slow.set_t3_ns(slow.t2_ns());
  reg.OnPong(&s, slow, slow.t3_ns() - 5 * kMs + 1 * kMs);
  CHECK(reg.Find("a")->offset_ns == Approx(5.0 * kMs));
  // Nor does one that stalled for seconds, however many samples came first
  // (a 15 s round trip skews the offset by up to 7.5 s).
  // (57 more: the stalled one is the 60th sample, a round number.)
  for (int i = 0; i < 57; ++i) reg.OnPong(&s, p, t4);
  v1::Pong stalled;
  stalled.set_t1_ns(t1);
  stalled.set_t2_ns(t1 + 15 * kS + 5 * kMs);  // 15 s out (queued), 1 ms back
  stalled.set_t3_ns(stalled.t2_ns());
  reg.OnPong(&s, stalled, stalled.t3_ns() - 5 * kMs + 1 * kMs);
  CHECK(reg.Find("a")->offset_ns == Approx(5.0 * kMs));
  // A path that became slower for good (10 ms each way, clock now 7 ms
  // ahead) is followed after a few dozen samples.
  v1::Pong slower;
  slower.set_t1_ns(t1);
  slower.set_t2_ns(t1 + 10 * kMs + 7 * kMs);
  slower.set_t3_ns(slower.t2_ns());
  for (int i = 0; i < 60; ++i) reg.OnPong(&s, slower, slower.t3_ns() - 7 * kMs + 10 * kMs);
  CHECK(reg.Find("a")->offset_ns == Approx(7.0 * kMs));
  // A restarted agent process starts the estimate afresh.
  reg.OnHello(HelloFrom("a", "boot-2"), &s, 1, 0);
  CHECK(reg.Find("a")->rtt_ns < 0);
}

TEST_CASE("node names are restricted", "[registry]") {
  CHECK(IsValidNodeName("gpu-node_01.dc1"));
  CHECK_FALSE(IsValidNodeName(""));
  CHECK_FALSE(IsValidNodeName("a/b"));
  CHECK_FALSE(IsValidNodeName(std::string(65, 'a')));
}

}  // namespace
}  // namespace cmax::coordinator
