// The catalog's cross-parameter rules of the suites whose backends are
// different binaries (common/suite_catalog.cc, SuiteInfo::check): a plan may
// not pair a backend with a value only the other backend's binary accepts.
// The coordinator (BuildSuiteArgs) and the agent (ValidateSuiteArgs) both
// refuse it, with a reason that names the parameter and the backend.
#include <catch2/catch.hpp>
#include <map>
#include <string>

#include "common/plan_parser.h"
#include "common/suite_catalog.h"

namespace {
absl::Status Build(const std::string& suite,
                   const std::map<std::string, std::string>& params) {
  const cmax::SuiteInfo* s = cmax::FindSuite(suite);
  REQUIRE(s != nullptr);
  return cmax::BuildSuiteArgs(*s, params).status();
}
absl::Status Agent(const std::string& suite, const std::vector<std::string>& args) {
  const cmax::SuiteInfo* s = cmax::FindSuite(suite);
  REQUIRE(s != nullptr);
  return cmax::ValidateSuiteArgs(*s, args);
}
}  // namespace

TEST_CASE("burnin with backend cuda and dtype fp64 is refused by plan and agent",
          "[catalog]") {
  absl::Status s = Build("burnin", {{"backend", "cuda"}, {"dtype", "fp64"}});
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(
      std::string(s.message()),
      Catch::Contains("dtype 'fp64' is not run by backend cuda; it runs bf16, fp32"));
  absl::Status a = Agent("burnin", {"--backend=cuda", "--dtype=fp64"});
  CHECK(a.code() == absl::StatusCode::kInvalidArgument);
  CHECK_THAT(std::string(a.message()), Catch::Contains("dtype 'fp64'"));
  CHECK(Build("burnin", {{"backend", "cuda"}, {"dtype", "bf16"}}).ok());
  CHECK(Build("burnin", {{"backend", "cpu"}, {"dtype", "fp64"}}).ok());
}

TEST_CASE("burnin without backend is the cpu backend, which has no bf16 and no gpus",
          "[catalog]") {
  absl::Status s = Build("burnin", {{"dtype", "bf16"}});
  CHECK_THAT(std::string(s.message()),
             Catch::Contains("dtype 'bf16' is not run by backend cpu (the default)"));
  absl::Status g = Build("burnin", {{"gpus", "0"}});
  CHECK_THAT(std::string(g.message()),
             Catch::Contains("parameter 'gpus' applies to backend cuda only"));
  CHECK_FALSE(Build("burnin", {{"bug-report", "on"}}).ok());
  CHECK_FALSE(Build("burnin", {{"backend", "cuda"}, {"threads", "2"}}).ok());
  CHECK_FALSE(Agent("burnin", {"--backend=cuda", "--threads=2"}).ok());
  CHECK(Build("burnin", {{"threads", "2"}, {"duration", "5"}}).ok());
}

TEST_CASE("gemm backend rules: cpu dtypes, threads on cpu, gpus on cuda", "[catalog]") {
  CHECK(Build("gemm", {{"dtype", "fp8"}}).ok());  // the default backend is cuda
  absl::Status d = Build("gemm", {{"backend", "cpu"}, {"dtype", "bf16"}});
  CHECK_THAT(std::string(d.message()), Catch::Contains("it runs fp32, fp64"));
  CHECK_FALSE(Build("gemm", {{"threads", "4"}}).ok());
  CHECK(Build("gemm", {{"backend", "cpu"}, {"threads", "4"}, {"dtype", "fp32"}}).ok());
  CHECK_FALSE(Agent("gemm", {"--backend=cpu", "--gpus=0"}).ok());
  CHECK(Agent("gemm", {"--gpus=0", "--dtype=bf16"}).ok());
}

TEST_CASE("consistency gpus is for the cuda backend only", "[catalog]") {
  CHECK_FALSE(Build("consistency", {{"gpus", "all"}}).ok());
  CHECK(Build("consistency", {{"backend", "cuda"}, {"gpus", "all"}}).ok());
}

TEST_CASE("a plan with burnin backend cuda and dtype fp64 is refused at parse time",
          "[catalog]") {
  auto bad = cmax::ParsePlan(
      "name: x\nsuites:\n  - suite: burnin\n    params: {backend: cuda, dtype: fp64, "
      "duration: 5}\n",
      "x.yaml");
  REQUIRE_FALSE(bad.ok());
  CHECK_THAT(std::string(bad.status().message()),
             Catch::Contains("dtype 'fp64' is not run by backend cuda"));
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("x.yaml"));
  // Values that need each other are read together, whatever their order.
  auto good = cmax::ParsePlan(
      "name: x\nsuites:\n  - suite: burnin\n    params: {gpus: '0', dtype: bf16, "
      "backend: cuda, bug-report: 'on'}\n  - suite: gemm\n    params: {threads: 2, "
      "backend: cpu, dtype: fp32}\n",
      "x.yaml");
  INFO(good.status().message());
  CHECK(good.ok());
  // The plan files shipped with cmax stay valid.
  for (const char* name :
       {"full.yaml", "quick.yaml", "rdma.yaml", "soak-cpu.yaml", "soak.yaml", "workload.yaml"}) {
    auto shipped =
        cmax::LoadPlanFile(std::string(CMAX_SOURCE_DIR) + "/benchmarks/plans/" + name);
    INFO(name << ": " << shipped.status().message());
    CHECK(shipped.ok());
  }
}
