// Secrets and identifiers (common/secrets.h): the constant-time comparison's
// answers, random hex and random ids of the asked length, never repeating.
#include "common/secrets.h"

#include <catch2/catch.hpp>
#include <set>
#include <string>

namespace {

bool AllHex(const std::string& s) {
  return s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

}  // namespace

TEST_CASE("SameSecret is true only for the same non-empty secret", "[secrets]") {
  CHECK(cmax::SameSecret("abc123", "abc123"));
  CHECK_FALSE(cmax::SameSecret("abc124", "abc123"));
  CHECK_FALSE(cmax::SameSecret("abc12", "abc123"));
  CHECK_FALSE(cmax::SameSecret("abc1234", "abc123"));
  CHECK_FALSE(cmax::SameSecret("", ""));
  CHECK_FALSE(cmax::SameSecret("x", ""));
}

TEST_CASE("random hex and random ids have the asked length and do not repeat", "[secrets]") {
  auto hex = cmax::RandomHex(16);
  REQUIRE(hex.ok());
  CHECK(hex->size() == 32);
  CHECK(AllHex(*hex));
  std::set<std::string> ids;
  for (int i = 0; i < 200; ++i) {
    std::string id = cmax::RandomId(16);
    CHECK(id.size() == 32);
    CHECK(AllHex(id));
    ids.insert(id);
  }
  CHECK(ids.size() == 200);
  CHECK(cmax::RandomId(2).size() == 4);
  CHECK(cmax::RandomId(3).size() == 6);
}
