// The run id rule (common/run_id.h): what names a file under the report
// directory and what never may.
#include "common/run_id.h"

#include <catch2/catch.hpp>
#include <string>

namespace cmax {
namespace {

TEST_CASE("run ids the coordinator makes pass", "[run_id]") {
  for (const char* id : {"r1", "20261203-165645-quick", "a_b.c-d", "x"}) {
    INFO(id);
    CHECK(IsSafeRunId(id));
  }
  CHECK(IsSafeRunId(std::string(128, 'a')));
}

TEST_CASE("run ids that could leave the report directory or a query are refused",
          "[run_id]") {
  for (const char* id : {"", "..", "a..b", "../etc", "a/b", "/abs", "a b", "r1%2F", "r1;drop",
                         "r1\n", "r\xc3\xa9", "~root"}) {
    INFO(id);
    CHECK_FALSE(IsSafeRunId(id));
  }
  CHECK_FALSE(IsSafeRunId(std::string("r1\0x", 4)));
  CHECK_FALSE(IsSafeRunId(std::string(129, 'a')));
}

}  // namespace
}  // namespace cmax
