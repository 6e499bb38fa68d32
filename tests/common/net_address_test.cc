// Loopback is decided by parsing the address, never by a string prefix, and
// a token is not sent in clear text off the host.
#include "common/net_address.h"

#include <catch2/catch.hpp>

using cmax::CheckTokenTransport;
using cmax::IsLoopbackTarget;

TEST_CASE("loopback literals and localhost are loopback", "[net_address]") {
  CHECK(IsLoopbackTarget("127.0.0.1:8470"));
  CHECK(IsLoopbackTarget("127.3.4.5:1"));
  CHECK(IsLoopbackTarget("localhost:8470"));
  CHECK(IsLoopbackTarget("LOCALHOST:1"));
  CHECK(IsLoopbackTarget("[::1]:8470"));
  CHECK(IsLoopbackTarget("[::ffff:127.0.0.1]:1"));
  CHECK(IsLoopbackTarget("unix:/run/cmax/coordinator.sock"));
  CHECK(IsLoopbackTarget("dns:///localhost:8470"));
  CHECK(IsLoopbackTarget("ipv4:127.0.0.1:1,127.0.0.2:2"));
}

TEST_CASE("names that merely start like loopback are not loopback", "[net_address]") {
  CHECK_FALSE(IsLoopbackTarget("127.evil.com:1"));
  CHECK_FALSE(IsLoopbackTarget("localhost.attacker:1"));
  CHECK_FALSE(IsLoopbackTarget("127.0.0.1.nip.io:1"));
  CHECK_FALSE(IsLoopbackTarget("[::1].evil:1"));
  CHECK_FALSE(IsLoopbackTarget("10.0.0.1:8470"));
  CHECK_FALSE(IsLoopbackTarget("0.0.0.0:8470"));
  CHECK_FALSE(IsLoopbackTarget("[::]:8470"));
  CHECK_FALSE(IsLoopbackTarget("head-node:8470"));
  CHECK_FALSE(IsLoopbackTarget("dns://8.8.8.8/localhost:8470"));
  CHECK_FALSE(IsLoopbackTarget("ipv4:127.0.0.1:1,10.0.0.1:2"));
  CHECK_FALSE(IsLoopbackTarget(""));
}

TEST_CASE("a token in clear text to a remote coordinator is refused", "[net_address]") {
  auto refused = CheckTokenTransport("cmaxctl", "10.0.0.1:8470", true, false, false);
  CHECK(refused.code() == absl::StatusCode::kFailedPrecondition);
  CHECK_THAT(std::string(refused.message()), Catch::Contains("10.0.0.1:8470"));
  CHECK_THAT(std::string(refused.message()), Catch::Contains("--allow-insecure"));
  CHECK(CheckTokenTransport("x", "127.evil.com:1", true, false, false).code() ==
        absl::StatusCode::kFailedPrecondition);
  CHECK(CheckTokenTransport("x", "10.0.0.1:8470", true, true, false).ok());    // TLS
  CHECK(CheckTokenTransport("x", "10.0.0.1:8470", false, false, false).ok());  // no token
  CHECK(CheckTokenTransport("x", "10.0.0.1:8470", true, false, true).ok());    // explicit
  CHECK(CheckTokenTransport("x", "127.0.0.1:8470", true, false, false).ok());
}
