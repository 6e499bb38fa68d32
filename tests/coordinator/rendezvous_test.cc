// The coordinator's rendezvous for group tasks: limits, unknown groups,
// get waiting for set, barriers released in each node's clock.
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "coordinator/rendezvous.h"

using cmax::coordinator::kMaxRendezvousValue;
using cmax::coordinator::Rendezvous;
using cmax::coordinator::RendezvousOut;
using cmax::v1::RendezvousRequest;

namespace {

constexpr int64_t kSecond = 1000000000;

RendezvousRequest Req(uint64_t id, const std::string& group, const std::string& op,
                      const std::string& key, int rank, const std::string& value = "",
                      int64_t timeout_ms = 10000) {
  RendezvousRequest r;
  r.set_request_id(id);
  r.set_group(group);
  r.set_op(op);
  r.set_key(key);
  r.set_rank(rank);
  r.set_value(value);
  r.set_timeout_ms(timeout_ms);
  return r;
}

// node-2's clock runs 400 ms ahead of the coordinator's.
Rendezvous Make() {
  return Rendezvous(
      [](const std::string& node, int64_t t) { return node == "node-2" ? t + 400000000 : t; },
      500000000);
}

}  // namespace

TEST_CASE("requests for a group that does not run are refused", "[coordinator][rendezvous]") {
  Rendezvous rv = Make();
  std::vector<RendezvousOut> out;
  rv.Handle("node-0", Req(7, "no-such-task", "set", "k", 0, "v"), 0, &out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].node == "node-0");
  CHECK(out[0].reply.request_id() == 7);
  CHECK_FALSE(out[0].reply.ok());
  CHECK(out[0].reply.error().find("unknown group") != std::string::npos);
  // Once closed, a group is unknown again.
  rv.Open("g", 2);
  rv.Close("g", &out);
  out.clear();
  rv.Handle("node-0", Req(8, "g", "get", "k", 0), 0, &out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].reply.error().find("unknown group") != std::string::npos);
}

TEST_CASE("oversized values, long keys and foreign ranks are refused",
          "[coordinator][rendezvous]") {
  Rendezvous rv = Make();
  rv.Open("g", 2);
  std::vector<RendezvousOut> out;
  rv.Handle("node-0", Req(1, "g", "set", "big", 0, std::string(kMaxRendezvousValue + 1, 'x')), 0,
            &out);
  REQUIRE(out.size() == 1);
  CHECK_FALSE(out[0].reply.ok());
  CHECK(out[0].reply.error().find("exceeds") != std::string::npos);
  out.clear();
  // The largest allowed value is accepted (control).
  rv.Handle("node-0", Req(2, "g", "set", "ok", 0, std::string(kMaxRendezvousValue, 'x')), 0, &out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].reply.ok());
  out.clear();
  rv.Handle("node-0", Req(3, "g", "set", std::string(300, 'k'), 0, "v"), 0, &out);
  CHECK_FALSE(out.at(0).reply.ok());
  out.clear();
  rv.Handle("node-0", Req(4, "g", "set", "k", 5, "v"), 0, &out);
  CHECK_FALSE(out.at(0).reply.ok());
  CHECK(out.at(0).reply.error().find("outside world") != std::string::npos);
}

TEST_CASE("a get waits for its set, and times out without one", "[coordinator][rendezvous]") {
  Rendezvous rv = Make();
  rv.Open("g", 2);
  std::vector<RendezvousOut> out;
  rv.Handle("node-1", Req(1, "g", "get", "id", 1, "", 5000), 0, &out);
  CHECK(out.empty());
  rv.Handle("node-0", Req(2, "g", "set", "id", 0, "nccl-unique-id"), kSecond, &out);
  REQUIRE(out.size() == 2);
  for (const auto& o : out) CHECK(o.reply.ok());
  CHECK(out[1].node == "node-1");
  CHECK(out[1].reply.value() == "nccl-unique-id");
  out.clear();
  rv.Handle("node-1", Req(3, "g", "get", "never", 1, "", 5000), 0, &out);
  rv.Expire(4 * kSecond, &out);
  CHECK(out.empty());
  rv.Expire(6 * kSecond, &out);
  REQUIRE(out.size() == 1);
  CHECK(out[0].reply.error().find("timed out") != std::string::npos);
}

TEST_CASE("a barrier releases every rank at one instant in its own clock",
          "[coordinator][rendezvous]") {
  Rendezvous rv = Make();
  rv.Open("g", 3);
  std::vector<RendezvousOut> out;
  rv.Handle("node-0", Req(1, "g", "barrier", "start", 0), 10 * kSecond, &out);
  rv.Handle("node-1", Req(2, "g", "barrier", "start", 1), 11 * kSecond, &out);
  CHECK(out.empty());
  rv.Handle("node-2", Req(3, "g", "barrier", "start", 2), 12 * kSecond, &out);
  REQUIRE(out.size() == 3);
  const int64_t start = 12 * kSecond + 500000000;
  for (const auto& o : out) {
    CHECK(o.reply.ok());
    int64_t expect = o.node == "node-2" ? start + 400000000 : start;
    CHECK(o.reply.value() == std::to_string(expect));
  }
}
