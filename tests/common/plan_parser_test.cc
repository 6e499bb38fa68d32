#include "common/plan_parser.h"

#include <catch2/catch.hpp>

using cmax::ParsePlan;

TEST_CASE("a minimal plan parses with defaults", "[plan]") {
  auto plan = ParsePlan("name: quick\nsuites:\n  - suite: hostcheck\n", "quick.yaml");
  REQUIRE(plan.ok());
  CHECK(plan->name() == "quick");
  REQUIRE(plan->suites_size() == 1);
  CHECK(plan->suites(0).suite() == "hostcheck");
  CHECK(plan->suites(0).scope() == cmax::v1::SCOPE_NODE);
  CHECK(plan->suites(0).nodes().all());
}

TEST_CASE("plan fields reach the proto", "[plan]") {
  const char* text = R"(name: full
description: everything
expect:
  gpus_per_node: 8
  gpu_model: H200
  min_memory_gib: 512
  metrics:
    gemm_tflops.bf16: 750
suites:
  - suite: selftest
    name: pipeline
    timeout: 5m
    nodes: [a, b]
    retries: 2
    params:
      mode: sleep
      seconds: 3
)";
  auto plan = ParsePlan(text, "full.yaml");
  REQUIRE(plan.ok());
  CHECK(plan->expect().gpus_per_node() == 8);
  CHECK(plan->expect().gpu_model() == "H200");
  CHECK(plan->expect().metrics().at("gemm_tflops.bf16") == 750);
  const auto& s = plan->suites(0);
  CHECK(s.timeout_seconds() == 300);
  CHECK(s.nodes().names_size() == 2);
  CHECK(s.retries() == 2);
  CHECK(s.params().at("mode") == "sleep");
}

TEST_CASE("plan errors name file, line and column", "[plan]") {
  SECTION("unknown suite") {
    auto plan = ParsePlan("name: x\nsuites:\n  - suite: nosuch\n", "p.yaml");
    REQUIRE_FALSE(plan.ok());
    CHECK_THAT(std::string(plan.status().message()),
               Catch::Contains("p.yaml:3:12") && Catch::Contains("unknown suite 'nosuch'"));
  }
  SECTION("unknown parameter") {
    auto plan =
        ParsePlan("name: x\nsuites:\n  - suite: selftest\n    params:\n      bogus: 1\n", "p.yaml");
    REQUIRE_FALSE(plan.ok());
    CHECK_THAT(std::string(plan.status().message()),
               Catch::Contains("p.yaml:5:7") && Catch::Contains("no parameter 'bogus'"));
  }
  SECTION("bad value") {
    auto plan = ParsePlan(
        "name: x\nsuites:\n  - suite: selftest\n    params:\n      mode: explode\n", "p.yaml");
    REQUIRE_FALSE(plan.ok());
    CHECK_THAT(std::string(plan.status().message()), Catch::Contains("p.yaml:5:"));
  }
  SECTION("YAML syntax error") {
    auto plan = ParsePlan("name: x\nsuites: [\n", "p.yaml");
    REQUIRE_FALSE(plan.ok());
    CHECK_THAT(std::string(plan.status().message()), Catch::StartsWith("p.yaml:"));
  }
  SECTION("unknown top-level key") {
    auto plan = ParsePlan("name: x\nsuits: []\n", "p.yaml");
    REQUIRE_FALSE(plan.ok());
    CHECK_THAT(std::string(plan.status().message()),
               Catch::Contains("p.yaml:2:1") && Catch::Contains("unknown key 'suits'"));
  }
  SECTION("forbidden environment") {
    auto plan = ParsePlan(
        "name: x\nsuites:\n  - suite: selftest\n    env:\n      LD_PRELOAD: /tmp/evil.so\n",
        "p.yaml");
    REQUIRE_FALSE(plan.ok());
    CHECK_THAT(std::string(plan.status().message()), Catch::Contains("LD_PRELOAD"));
  }
  SECTION("scope not allowed for the suite") {
    auto plan = ParsePlan("name: x\nsuites:\n  - suite: hostcheck\n    scope: gang\n", "p.yaml");
    REQUIRE_FALSE(plan.ok());
    CHECK_THAT(std::string(plan.status().message()), Catch::Contains("p.yaml:4:12"));
  }
  SECTION("missing suites") {
    auto plan = ParsePlan("name: x\n", "p.yaml");
    REQUIRE_FALSE(plan.ok());
  }
}

TEST_CASE("min_nodes: gang and barrier only, at least 1", "[plan]") {
  auto gang = ParsePlan(
      "name: x\nsuites:\n  - suite: selftest\n    min_nodes: 2\n    scope: gang\n", "p.yaml");
  REQUIRE(gang.ok());
  CHECK(gang->suites(0).min_nodes() == 2);
  CHECK(cmax::ValidatePlan(*gang).ok());
  auto node = ParsePlan("name: x\nsuites:\n  - suite: selftest\n    min_nodes: 2\n", "p.yaml");
  REQUIRE_FALSE(node.ok());
  CHECK_THAT(std::string(node.status().message()),
             Catch::Contains("p.yaml:4:16") && Catch::Contains("min_nodes applies to scopes"));
  auto pairs = ParsePlan(
      "name: x\nsuites:\n  - suite: rdma\n    scope: pairs\n    min_nodes: 3\n", "p.yaml");
  CHECK_FALSE(pairs.ok());
  auto zero = ParsePlan(
      "name: x\nsuites:\n  - suite: selftest\n    scope: gang\n    min_nodes: 0\n", "p.yaml");
  REQUIRE_FALSE(zero.ok());
  CHECK_THAT(std::string(zero.status().message()), Catch::Contains("min_nodes must be"));
  // From the wire: the same rules.
  gang->mutable_suites(0)->set_scope(cmax::v1::SCOPE_NODE);
  CHECK(cmax::ValidatePlan(*gang).message().find("min_nodes") != std::string::npos);
  gang->mutable_suites(0)->set_scope(cmax::v1::SCOPE_GANG);
  gang->mutable_suites(0)->set_min_nodes(-1);
  CHECK(cmax::ValidatePlan(*gang).message().find("min_nodes") != std::string::npos);
}

TEST_CASE("durations", "[plan]") {
  CHECK(*cmax::ParseDurationSeconds("90") == 90);
  CHECK(*cmax::ParseDurationSeconds("90s") == 90);
  CHECK(*cmax::ParseDurationSeconds("2m") == 120);
  CHECK(*cmax::ParseDurationSeconds("1h") == 3600);
  CHECK_FALSE(cmax::ParseDurationSeconds("0").ok());
  CHECK_FALSE(cmax::ParseDurationSeconds("-5").ok());
  CHECK_FALSE(cmax::ParseDurationSeconds("soon").ok());
  // Found by the fuzzer: a huge count overflowed when multiplied.
  CHECK_FALSE(cmax::ParseDurationSeconds("9999999999999999h").ok());
  CHECK(*cmax::ParseDurationSeconds("168h") == 7 * 86400);
  CHECK_FALSE(cmax::ParseDurationSeconds("169h").ok());
}

TEST_CASE("plans from the wire get the parser's limits", "[plan]") {
  auto parsed = cmax::ParsePlan("name: w\nsuites:\n  - suite: selftest\n", "w.yaml");
  REQUIRE(parsed.ok());
  REQUIRE(cmax::ValidatePlan(*parsed).ok());
  SECTION("retries") {
    parsed->mutable_suites(0)->set_retries(1000000);
    CHECK(cmax::ValidatePlan(*parsed).message().find("retries") != std::string::npos);
  }
  SECTION("ranks per node") {
    parsed->mutable_suites(0)->set_scope(cmax::v1::SCOPE_GANG);
    parsed->mutable_suites(0)->set_ranks_per_node("1000000000");
    CHECK(cmax::ValidatePlan(*parsed).message().find("ranks_per_node") != std::string::npos);
    parsed->mutable_suites(0)->set_ranks_per_node("gpus");
    CHECK(cmax::ValidatePlan(*parsed).ok());
  }
  SECTION("size") {
    parsed->set_description(std::string(cmax::kMaxPlanBytes, 'd'));
    CHECK(cmax::ValidatePlan(*parsed).message().find("exceeds") != std::string::npos);
  }
}

TEST_CASE("the shipped plans parse, connectivity as a gang", "[plan]") {
  for (const char* name : {"quick", "full"}) {
    auto plan = cmax::LoadPlanFile(std::string(CMAX_SOURCE_DIR) + "/benchmarks/plans/" + name +
                                   ".yaml");
    INFO(name << ": " << plan.status().ToString());
    REQUIRE(plan.ok());
    bool connectivity = false;
    for (const auto& s : plan->suites()) {
      if (s.suite() == "connectivity") {
        connectivity = true;
        CHECK(s.scope() == cmax::v1::SCOPE_GANG);
      }
    }
    CHECK(connectivity);
  }
}

TEST_CASE("mpirun options need launcher mpirun", "[plan]") {
  auto agents = ParsePlan(
      "name: p\nsuites:\n  - suite: connectivity\n    scope: gang\n"
      "    params: {mpirun-bind-to: none}\n",
      "p.yaml");
  CHECK_FALSE(agents.ok());
  CHECK(agents.status().message().find("launcher: mpirun only") != std::string::npos);
  auto mpirun = ParsePlan(
      "name: p\nsuites:\n  - suite: connectivity\n    scope: gang\n    launcher: mpirun\n"
      "    params: {mpirun-bind-to: none}\n",
      "p.yaml");
  CHECK(mpirun.ok());
}
