// The consistency suite: digests are reproducible on one machine (two runs of
// cmax-bench agree bit for bit) and the digest function matches FNV-1a.
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "benchmarks/consistency/digest.h"
#include "common/cpuinfo.h"
#include "common/subprocess.h"
#include "common/sysroot.h"
#include "tests/benchmarks/suite_run.h"

using namespace cmax;

namespace {

// workload -> digest, from one run of the built binary; `models` gets the
// model label of each record.
std::map<std::string, std::string> RunDigests(
    std::vector<std::string>* models = nullptr) {
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
      if (models != nullptr) models->push_back(l.at("model"));
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

TEST_CASE("consistency labels its digests with the CPU model hostcheck would name",
          "[consistency]") {
  // The model is part of the judge's group key: it must be the one reading
  // of /proc/cpuinfo (common/cpuinfo.h), which names a Grace host
  // "Arm Neoverse-V2" (tests/common/cpuinfo_test.cc) where the old reader
  // wrote "aarch64 cpu part 0xd4f".
  std::vector<std::string> models;
  RunDigests(&models);
  REQUIRE_FALSE(models.empty());
  auto text = Sysroot("/").Read("/proc/cpuinfo");
  REQUIRE(text.ok());
  const std::string expected = CpuModelName(ParseCpuinfo(*text));
  REQUIRE_FALSE(expected.empty());  // this machine's file names its CPU
  for (const auto& m : models) CHECK(m == expected);
}
