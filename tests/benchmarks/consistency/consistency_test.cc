// The consistency suite: digests are reproducible on one machine (two runs of
// cmax-bench agree bit for bit) and the digest function matches FNV-1a.
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <string>

#include "benchmarks/consistency/digest.h"
#include "common/subprocess.h"
#include "tests/benchmarks/suite_run.h"

using namespace cmax;

namespace {

// workload -> digest, from one run of the built binary.
std::map<std::string, std::string> RunDigests() {
  auto r = testing::RunSuite("cmax-bench", {"consistency", "--backend", "cpu", "--jsonl"},
                             std::chrono::seconds(120));
  INFO(r.err);
  CHECK(r.exit_code == 0);
  std::map<std::string, std::string> out;
  for (const auto& rec : r.records) {
    if (rec.has_measurement() && rec.measurement().metric() == "consistency_digest") {
      const auto& l = rec.measurement().labels();
      REQUIRE(l.contains("digest"));
      REQUIRE(l.contains("model"));
      REQUIRE(l.contains("versions"));
      out[l.at("workload")] = l.at("digest");
    }
    if (rec.has_finding()) FAIL("unexpected finding: " << rec.finding().title());
  }
  return out;
}

}  // namespace

TEST_CASE("FNV-1a 64 matches the published test vectors", "[consistency]") {
  consistency::Fnv1a64 empty;
  CHECK(empty.Hex() == "cbf29ce484222325");
  consistency::Fnv1a64 a;
  a.Update("a", 1);
  CHECK(a.Hex() == "af63dc4c8601ec8c");
}

TEST_CASE("consistency digests are identical across two runs on this machine",
          "[consistency]") {
  auto first = RunDigests();
  auto second = RunDigests();
  CHECK(first.size() == 5);
  CHECK(first.count("gemm_fp32"));
  CHECK(first.count("memory_pattern"));
  CHECK(first == second);
  // Different workloads give different digests (the digest is not constant).
  CHECK(first["gemm_fp32"] != first["gemm_fp64"]);
}
