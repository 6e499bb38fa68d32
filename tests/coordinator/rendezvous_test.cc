// Rendezvous: key-value, barriers with per-node clocks, and every limit.
#include "coordinator/rendezvous.h"

#include <catch2/catch.hpp>

namespace cmax::coordinator {
namespace {

constexpr int64_t kNow = 1'700'000'000'000'000'000;
constexpr int64_t kMs = 1'000'000;

struct Fixture {
  Rendezvous rv{[](const std::string& node, int64_t t) { return t + (node == "b" ? 7 * kMs : 0); },
                500 * kMs};
  uint64_t next = 1;
  std::vector<RendezvousOut> out;

  v1::RendezvousReply Do(const std::string& node, const std::string& op, const std::string& key,
                         const std::string& value = "", int rank = 0, int64_t timeout_ms = 0,
                         const std::string& group = "g") {
    v1::RendezvousRequest r;
    r.set_request_id(next++);
    r.set_group(group);
    r.set_op(op);
    r.set_key(key);
    r.set_value(value);
    r.set_rank(rank);
    r.set_timeout_ms(timeout_ms);
    out.clear();
    rv.Handle(node, r, kNow, &out);
    if (out.empty()) return {};  // waiting
    return out.back().reply;
  }
};

TEST_CASE("set and get, a get waiting for its key", "[rendezvous]") {
  Fixture f;
  f.rv.Open("g", 2);
  CHECK(f.Do("a", "get", "id", "", 1).request_id() == 0);  // waits
  auto set = f.Do("b", "set", "id", "nccl-unique-id", 0);
  REQUIRE(f.out.size() == 2);
  CHECK(f.out[0].reply.ok());
  CHECK(f.out[1].node == "a");
  CHECK(f.out[1].reply.value() == "nccl-unique-id");
  CHECK(f.Do("a", "get", "id").value() == "nccl-unique-id");
}

TEST_CASE("a barrier releases every rank at one instant in its own clock", "[rendezvous]") {
  Fixture f;
  f.rv.Open("g", 2);
  f.Do("a", "barrier", "start", "", 0);
  CHECK(f.out.empty());
  CHECK_FALSE(f.Do("a", "barrier", "start", "", 0).ok());  // same rank twice
  f.Do("b", "barrier", "start", "", 1);
  REQUIRE(f.out.size() == 2);
  CHECK(f.out[0].reply.value() == std::to_string(kNow + 500 * kMs));
  CHECK(f.out[1].reply.value() == std::to_string(kNow + 507 * kMs));
}

TEST_CASE("limits: keys, values, key count, ranks, groups, timeouts", "[rendezvous]") {
  Fixture f;
  f.rv.Open("g", 2);
  CHECK_FALSE(f.Do("a", "set", std::string(257, 'k'), "v").ok());
  CHECK(f.Do("a", "set", std::string(256, 'k'), "v").ok());
  CHECK_FALSE(f.Do("a", "set", "", "v").ok());
  auto big = f.Do("a", "set", "big", std::string(64 * 1024 + 1, 'v'));
  CHECK_FALSE(big.ok());
  CHECK(big.error().find("exceeds") != std::string::npos);
  CHECK(f.Do("a", "set", "max", std::string(64 * 1024, 'v')).ok());
  for (size_t i = 2; i < kMaxRendezvousKeys; ++i) {
    REQUIRE(f.Do("a", "set", "k" + std::to_string(i), "v").ok());
  }
  auto many = f.Do("a", "set", "one-too-many", "v");
  CHECK_FALSE(many.ok());
  CHECK(many.error().find("too many keys") != std::string::npos);
  CHECK(f.Do("a", "set", "max", "overwrite is fine").ok());
  CHECK_FALSE(f.Do("a", "get", "x", "", 2).ok());   // outside world of 2
  CHECK_FALSE(f.Do("a", "get", "x", "", -1).ok());
  CHECK(f.Do("a", "get", "x", "", 0, 0, "other").error().find("unknown group") !=
        std::string::npos);
  CHECK(f.Do("a", "frobnicate", "x").error().find("unknown op") != std::string::npos);
  // A timeout beyond 10 minutes is cut to 10 minutes.
  f.Do("a", "get", "never", "", 0, int64_t{1} << 40);
  f.out.clear();
  f.rv.Expire(kNow + kMaxRendezvousTimeoutMs * kMs - 1, &f.out);
  CHECK(f.out.empty());
  f.rv.Expire(kNow + kMaxRendezvousTimeoutMs * kMs, &f.out);
  REQUIRE(f.out.size() == 1);
  CHECK(f.out[0].reply.error().find("timed out") != std::string::npos);
}

TEST_CASE("closing a group answers its waiters", "[rendezvous]") {
  Fixture f;
  f.rv.Open("g", 3);
  f.Do("a", "get", "x");
  f.Do("b", "barrier", "b", "", 1);
  f.out.clear();
  f.rv.Close("g", &f.out);
  REQUIRE(f.out.size() == 2);
  for (const auto& o : f.out) {
    CHECK_FALSE(o.reply.ok());
    CHECK(o.reply.error() == "group ended");
  }
  CHECK_FALSE(f.rv.IsOpen("g"));
}

}  // namespace
}  // namespace cmax::coordinator
