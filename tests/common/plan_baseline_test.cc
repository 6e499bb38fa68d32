// Plan keys baseline, baseline_tolerance and price_per_gpu_hour.
#include <catch2/catch.hpp>

#include "common/plan_parser.h"
#include "tests/scratch_dir.h"

namespace {

using cmax::LoadPlanFile;
using cmax::testing::ScratchDir;

constexpr char kBaseline[] = R"({"run_id": "run-7", "plan": "quick", "cmax_version": "0.1",
  "created": "2026-12-01T10:00:00Z",
  "values": [{"entry": "gemm", "node": "node-1", "gpu": "0", "metric": "gemm_tflops",
              "unit": "TFLOP/s", "labels": {"dtype": "bf16"}, "value": 800, "better": "higher"}]})";

std::string PlanWith(const std::string& extra) {
  return "name: quick\n" + extra + "suites:\n  - suite: hostcheck\n";
}

TEST_CASE("a plan's baseline file is read relative to the plan and embedded", "[plan]") {
  ScratchDir dir;
  std::filesystem::create_directories(dir.path + "/plans/base");
  cmax::testing::WriteFileWithMode(dir.path + "/plans/base/b.json", kBaseline, 0644);
  cmax::testing::WriteFileWithMode(
      dir.path + "/plans/p.yaml",
      PlanWith("baseline: base/b.json\nbaseline_tolerance: 0.1\nprice_per_gpu_hour: 2.49\n"),
      0644);
  auto plan = LoadPlanFile(dir.path + "/plans/p.yaml");
  REQUIRE(plan.ok());
  CHECK(plan->baseline().run_id() == "run-7");
  CHECK(plan->baseline().source() == "base/b.json");
  REQUIRE(plan->baseline().values_size() == 1);
  CHECK(plan->baseline().values(0).value() == 800);
  CHECK(plan->baseline_tolerance() == 0.1);
  CHECK(plan->price_per_gpu_hour() == 2.49);
  CHECK(cmax::ValidatePlan(*plan).ok());
}

TEST_CASE("a bad or missing baseline file is a plan error with file, line and column",
          "[plan]") {
  ScratchDir dir;
  const std::string plan_path = dir.path + "/p.yaml";
  SECTION("missing") {
    cmax::testing::WriteFileWithMode(plan_path, PlanWith("baseline: nope.json\n"), 0644);
    auto plan = LoadPlanFile(plan_path);
    REQUIRE_FALSE(plan.ok());
    CHECK(plan.status().code() == absl::StatusCode::kInvalidArgument);
    const std::string msg(plan.status().message());
    CHECK(msg.find(plan_path + ":2:11: baseline 'nope.json': cannot open " + dir.path +
                   "/nope.json") != std::string::npos);
    CHECK(msg.find("cmaxctl baseline save") != std::string::npos);
  }
  SECTION("not a regular file") {
    cmax::testing::WriteFileWithMode(plan_path, PlanWith("baseline: /dev/null\n"), 0644);
    auto plan = LoadPlanFile(plan_path);
    REQUIRE_FALSE(plan.ok());
    CHECK(std::string(plan.status().message()).find("/dev/null is not a regular file") !=
          std::string::npos);
  }
  SECTION("not JSON") {
    cmax::testing::WriteFileWithMode(dir.path + "/bad.json", "name: not json\n", 0644);
    cmax::testing::WriteFileWithMode(plan_path, PlanWith("baseline: bad.json\n"), 0644);
    auto plan = LoadPlanFile(plan_path);
    REQUIRE_FALSE(plan.ok());
    CHECK(std::string(plan.status().message()).find("is not a cmax baseline file") !=
          std::string::npos);
  }
  SECTION("JSON without values") {
    cmax::testing::WriteFileWithMode(dir.path + "/empty.json", R"({"run_id": "r"})", 0644);
    cmax::testing::WriteFileWithMode(plan_path, PlanWith("baseline: empty.json\n"), 0644);
    auto plan = LoadPlanFile(plan_path);
    REQUIRE_FALSE(plan.ok());
    CHECK(std::string(plan.status().message()).find("no run_id or no values") !=
          std::string::npos);
  }
  SECTION("a tolerance without a baseline, or out of range") {
    auto a = cmax::ParsePlan(PlanWith("baseline_tolerance: 0.05\n"), "p.yaml");
    REQUIRE_FALSE(a.ok());
    CHECK(std::string(a.status().message()).find("needs a baseline") != std::string::npos);
    cmax::testing::WriteFileWithMode(dir.path + "/b.json", kBaseline, 0644);
    cmax::testing::WriteFileWithMode(plan_path,
                                     PlanWith("baseline: b.json\nbaseline_tolerance: 5\n"), 0644);
    auto b = LoadPlanFile(plan_path);
    REQUIRE_FALSE(b.ok());
    CHECK(std::string(b.status().message()).find("fraction in (0, 1)") != std::string::npos);
  }
  SECTION("a price that is not positive") {
    auto p = cmax::ParsePlan(PlanWith("price_per_gpu_hour: -1\n"), "p.yaml");
    REQUIRE_FALSE(p.ok());
    CHECK(std::string(p.status().message()).find("p.yaml:2:21: price_per_gpu_hour") !=
          std::string::npos);
  }
}

}  // namespace

TEST_CASE("plans from the wire: baseline and price limits", "[plan]") {
  auto plan = cmax::ParsePlan(PlanWith(""), "p.yaml");
  REQUIRE(plan.ok());
  SECTION("an embedded baseline larger than a plan may be is its own limit") {
    auto* b = plan->mutable_baseline();
    b->set_run_id("r");
    // About 1.5 MiB of values: over kMaxPlanBytes, under kMaxBaselineBytes.
    for (int i = 0; i < 20000; ++i) {
      auto* v = b->add_values();
      v->set_entry("connectivity");
      v->set_node("node-" + std::to_string(i));
      v->set_metric("transfer_mbps_with_a_long_name_to_fill_bytes");
      v->set_value(i);
    }
    REQUIRE(b->ByteSizeLong() > cmax::kMaxPlanBytes);
    CHECK(cmax::ValidatePlan(*plan).ok());
  }
  SECTION("tolerance and price out of range") {
    plan->set_baseline_tolerance(1.5);
    CHECK(std::string(cmax::ValidatePlan(*plan).message()).find("baseline_tolerance") !=
          std::string::npos);
    plan->set_baseline_tolerance(0);
    plan->set_price_per_gpu_hour(-2);
    CHECK(std::string(cmax::ValidatePlan(*plan).message()).find("price_per_gpu_hour") !=
          std::string::npos);
  }
}
