#include "common/suite_catalog.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

TEST_CASE("params become validated flags", "[catalog]") {
  const auto* s = cmax::FindSuite("selftest");
  REQUIRE(s != nullptr);
  auto args = cmax::BuildSuiteArgs(*s, {{"mode", "sleep"}, {"seconds", "2.5"}});
  REQUIRE(args.ok());
  CHECK(*args == std::vector<std::string>{"--mode=sleep", "--seconds=2.5"});
  CHECK(cmax::ValidateSuiteArgs(*s, *args).ok());
}

TEST_CASE("the agent-side check refuses anything undeclared", "[catalog][security]") {
  const auto* s = cmax::FindSuite("selftest");
  REQUIRE(s != nullptr);
  CHECK_FALSE(cmax::ValidateSuiteArgs(*s, {"--mode=ok; rm -rf /"}).ok());
  CHECK_FALSE(cmax::ValidateSuiteArgs(*s, {"--exec=/bin/sh"}).ok());
  CHECK_FALSE(cmax::ValidateSuiteArgs(*s, {"positional"}).ok());
  CHECK_FALSE(cmax::ValidateSuiteArgs(*s, {"--mode=ok", "--mode=crash"}).ok());
  CHECK_FALSE(cmax::ValidateSuiteArgs(*s, {"--seconds=1e400"}).ok());
  CHECK(cmax::FindSuite("bash") == nullptr);
}

TEST_CASE("plan environment is allow-listed", "[catalog][security]") {
  CHECK(cmax::ValidateSuiteEnv("NCCL_P2P_DISABLE", "1").ok());
  CHECK(cmax::ValidateSuiteEnv("NCCL_IB_HCA", "^mlx5_0:1").ok());
  CHECK_FALSE(cmax::ValidateSuiteEnv("LD_PRELOAD", "/x.so").ok());
  CHECK_FALSE(cmax::ValidateSuiteEnv("NCCL_NET_PLUGIN", "evil").ok());
  CHECK_FALSE(cmax::ValidateSuiteEnv("PATH", "/tmp").ok());
  CHECK_FALSE(cmax::ValidateSuiteEnv("NCCL_DEBUG", "INFO $(reboot)").ok());
}

TEST_CASE("path and size parameters", "[catalog]") {
  cmax::ParamSpec path{.name = "path", .type = cmax::ParamType::kPath};
  CHECK(cmax::ValidateParam(path, "/mnt/data").ok());
  CHECK_FALSE(cmax::ValidateParam(path, "relative").ok());
  CHECK_FALSE(cmax::ValidateParam(path, "/mnt/../etc").ok());
  CHECK_FALSE(cmax::ValidateParam(path, "/mnt/a b").ok());
  CHECK(*cmax::ParseBytes("64K") == 65536);
  CHECK(*cmax::ParseBytes("1M") == 1 << 20);
  CHECK(*cmax::ParseBytes("2GiB") == int64_t{2} << 30);
  CHECK_FALSE(cmax::ParseBytes("lots").ok());
}

TEST_CASE("gemm runs in the binary of its backend", "[catalog]") {
  const auto* gemm = cmax::FindSuite("gemm");
  REQUIRE(gemm != nullptr);
  auto cpu = cmax::BuildSuiteArgs(*gemm, {{"backend", "cpu"}, {"dtype", "fp64"}, {"threads", "8"}});
  REQUIRE(cpu.ok());
  CHECK(cmax::ValidateSuiteArgs(*gemm, *cpu).ok());
  CHECK(cmax::SuiteBinary(*gemm, *cpu) == "cmax-bench");
  auto gpu = cmax::BuildSuiteArgs(*gemm, {{"dtype", "bf16"}, {"gpus", "0,3"}});
  REQUIRE(gpu.ok());
  CHECK(cmax::SuiteBinary(*gemm, *gpu) == "cmax-bench-cuda");
  CHECK(cmax::SuiteBinary(*gemm, {"--backend=cuda"}) == "cmax-bench-cuda");
  CHECK_FALSE(cmax::BuildSuiteArgs(*gemm, {{"backend", "rocm"}}).ok());
  CHECK_FALSE(cmax::BuildSuiteArgs(*gemm, {{"dtype", "int4"}}).ok());
  // Suites with one binary ignore --backend.
  const auto* selftest = cmax::FindSuite("selftest");
  CHECK(cmax::SuiteBinary(*selftest, {"--backend=cpu"}) == "cmax-bench");

  const auto* memory = cmax::FindSuite("memory");
  REQUIRE(memory != nullptr);
  CHECK(memory->binary == "cmax-bench-cuda");
  CHECK(cmax::BuildSuiteArgs(*memory, {{"size", "1G"}, {"tests", "h2d,p2p"}}).ok());
  CHECK_FALSE(cmax::BuildSuiteArgs(*memory, {{"tests", "h2d,nvme"}}).ok());
}

TEST_CASE("only allow-listed mpirun options reach mpirun", "[catalog][security]") {
  using cmax::ValidateMpirunOption;
  CHECK(ValidateMpirunOption("mpirun-bind-to", "none").ok());
  CHECK(ValidateMpirunOption("mpirun-bind-to", "numa").ok());
  CHECK_FALSE(ValidateMpirunOption("mpirun-bind-to", "hwthread --mca x y").ok());
  CHECK(ValidateMpirunOption("mpirun-map-by", "ppr:8:node").ok());
  CHECK(ValidateMpirunOption("mpirun-map-by", "socket:PE=4").ok());
  CHECK(ValidateMpirunOption("mpirun-map-by", "node:SPAN:OVERSUBSCRIBE").ok());
  CHECK_FALSE(ValidateMpirunOption("mpirun-map-by", "ppr:8:node:PE=abc").ok());
  CHECK_FALSE(ValidateMpirunOption("mpirun-map-by", "-x LD_PRELOAD").ok());
  CHECK(ValidateMpirunOption("mpirun-if-include", "eth0,ib0").ok());
  CHECK(ValidateMpirunOption("mpirun-if-include", "10.0.0.0/8").ok());
  CHECK_FALSE(ValidateMpirunOption("mpirun-if-include", "eth0 --mca plm_rsh_agent x").ok());
  CHECK_FALSE(ValidateMpirunOption("mpirun-if-include", "-eth0").ok());
  CHECK_FALSE(ValidateMpirunOption("mpirun-mca", "plm_rsh_agent=/bin/sh").ok());
  CHECK_FALSE(ValidateMpirunOption("mpirun-x", "LD_PRELOAD=/tmp/evil.so").ok());

  // Gang suites declare them; node-only suites do not.
  const auto* conn = cmax::FindSuite("connectivity");
  REQUIRE(conn != nullptr);
  CHECK(cmax::BuildSuiteArgs(*conn, {{"mpirun-map-by", "ppr:1:node"}}).ok());
  CHECK_FALSE(cmax::BuildSuiteArgs(*conn, {{"mpirun-map-by", "ppr:1:node;rm"}}).ok());
  CHECK_FALSE(cmax::BuildSuiteArgs(*cmax::FindSuite("hostcheck"), {{"mpirun-bind-to", "none"}}).ok());

  // The agent splits them from the suite's own args.
  std::vector<std::string> rest;
  auto opts = cmax::MpirunOptionArgs(
      {"--bytes=1M", "--mpirun-bind-to=none", "--mpirun-if-include=eth0"}, &rest);
  REQUIRE(opts.ok());
  CHECK(rest == std::vector<std::string>{"--bytes=1M"});
  CHECK(*opts == std::vector<std::string>{"--bind-to", "none", "--mca", "btl_tcp_if_include",
                                          "eth0", "--mca", "oob_tcp_if_include", "eth0"});
}

TEST_CASE("collective runs in the binary of its backend with nccl-tests' long flags",
          "[catalog]") {
  const auto* coll = cmax::FindSuite("collective");
  REQUIRE(coll != nullptr);
  CHECK(coll->scopes.front() == cmax::v1::SCOPE_GANG);
  auto gloo = cmax::BuildSuiteArgs(*coll, {{"backend", "gloo"}, {"op", "all_reduce,alltoall"},
                                           {"min-bytes", "8"}, {"max-bytes", "1G"},
                                           {"factor", "2"}, {"iters", "20"}, {"warmup", "5"},
                                           {"check-iters", "1"}, {"dtype", "float"}});
  REQUIRE(gloo.ok());
  CHECK(cmax::SuiteBinary(*coll, *gloo) == "cmax-bench");
  CHECK(cmax::ValidateSuiteArgs(*coll, *gloo).ok());
  CHECK(cmax::SuiteBinary(*coll, {"--backend=mpi"}) == "cmax-bench");
  CHECK(cmax::SuiteBinary(*coll, {"--backend=nccl"}) == "cmax-bench-cuda");
  CHECK(cmax::SuiteBinary(*coll, {}) == "cmax-bench-cuda");
  CHECK_FALSE(cmax::BuildSuiteArgs(*coll, {{"factor", "1"}}).ok());
  CHECK_FALSE(cmax::BuildSuiteArgs(*coll, {{"op", "all_reduce;rm"}}).ok());
  CHECK_FALSE(cmax::BuildSuiteArgs(*coll, {{"dtype", "complex"}}).ok());
}

// The mpirun options are added to every suite that can run as a gang, by
// rule, now that suites are declared apart from the catalog: before,
// collective was written after the rule and its mpi backend (run under
// mpirun) could not be given --bind-to or --map-by in a plan.
TEST_CASE("every gang suite takes the mpirun options, collective's mpi backend included",
          "[catalog]") {
  for (const auto& s : cmax::SuiteCatalog()) {
    const bool gang = std::find(s.scopes.begin(), s.scopes.end(), cmax::v1::SCOPE_GANG) !=
                      s.scopes.end();
    INFO(s.name);
    CHECK(cmax::BuildSuiteArgs(s, {{"mpirun-bind-to", "core"}}).ok() == gang);
  }
  const auto* coll = cmax::FindSuite("collective");
  REQUIRE(coll != nullptr);
  auto args = cmax::BuildSuiteArgs(*coll, {{"backend", "mpi"}, {"mpirun-map-by", "ppr:1:node"}});
  REQUIRE(args.ok());
  CHECK(cmax::ValidateSuiteArgs(*coll, *args).ok());
}

// ParamsTakenBy (common/suite_declaration.h): the one rule for which
// parameters a binary takes, read by SuiteFlags and the declarations test.
TEST_CASE("each binary takes the parameters of the backends it serves, never mpirun's",
          "[catalog]") {
  auto names = [](const cmax::SuiteInfo& s, const std::string& binary) {
    std::set<std::string> out;
    for (const cmax::ParamSpec* p : cmax::ParamsTakenBy(s, binary)) out.insert(p->name);
    return out;
  };
  const auto* gemm = cmax::FindSuite("gemm");
  REQUIRE(gemm != nullptr);
  CHECK(names(*gemm, "cmax-bench").count("threads") == 1);
  CHECK(names(*gemm, "cmax-bench").count("gpus") == 0);
  CHECK(names(*gemm, "cmax-bench-cuda").count("gpus") == 1);
  CHECK(names(*gemm, "cmax-bench-cuda").count("threads") == 0);
  CHECK(names(*gemm, "cmax-bench").count("dtype") == 1);
  const auto* coll = cmax::FindSuite("collective");
  REQUIRE(coll != nullptr);
  for (const std::string binary : {"cmax-bench", "cmax-bench-cuda"}) {
    INFO(binary);
    for (const std::string& n : names(*coll, binary)) CHECK_FALSE(cmax::IsMpirunOption(n));
  }
  // The catalog declares the mpirun options on collective; no binary takes them.
  CHECK(std::any_of(coll->params.begin(), coll->params.end(),
                    [](const cmax::ParamSpec& p) { return cmax::IsMpirunOption(p.name); }));
  const auto* selftest = cmax::FindSuite("selftest");
  REQUIRE(selftest != nullptr);
  // A suite without backends: every parameter but mpirun's (selftest runs as a gang too).
  const auto own = std::count_if(selftest->params.begin(), selftest->params.end(),
                                 [](const cmax::ParamSpec& p) { return !cmax::IsMpirunOption(p.name); });
  CHECK(own + 3 == static_cast<long>(selftest->params.size()));
  CHECK(static_cast<long>(names(*selftest, "cmax-bench").size()) == own);
}

TEST_CASE("the workload suite names its interpreter, never a path or another program",
          "[catalog][security]") {
  const auto* s = cmax::FindSuite("workload");
  REQUIRE(s != nullptr);
  for (const char* ok : {"python", "python3", "python3.11"}) {
    INFO(ok);
    auto args = cmax::BuildSuiteArgs(*s, {{"python", ok}});
    REQUIRE(args.ok());
    CHECK(cmax::ValidateSuiteArgs(*s, *args).ok());
  }
  for (const char* bad : {"/bin/sh", "bash", "python3;id", "python3 -c", "perl", "python4"}) {
    INFO(bad);
    CHECK_FALSE(cmax::BuildSuiteArgs(*s, {{"python", bad}}).ok());
    CHECK_FALSE(cmax::ValidateSuiteArgs(*s, {absl::StrCat("--python=", bad)}).ok());
  }
  // The TEST-ONLY fault flag is no plan parameter.
  CHECK_FALSE(cmax::BuildSuiteArgs(*s, {{"fault-perturb-rank", "1"}}).ok());
  CHECK_FALSE(cmax::ValidateSuiteArgs(*s, {"--fault-perturb-rank=1"}).ok());
  // Numbers only, within their ranges; width a multiple of heads.
  CHECK_FALSE(cmax::BuildSuiteArgs(*s, {{"layers", "2; id"}}).ok());
  CHECK_FALSE(cmax::BuildSuiteArgs(*s, {{"width", "100"}, {"heads", "3"}}).ok());
  CHECK_FALSE(cmax::BuildSuiteArgs(*s, {{"steps", "5"}, {"warmup-steps", "5"}}).ok());
  CHECK(cmax::BuildSuiteArgs(*s, {{"width", "96"}, {"heads", "3"}, {"steps", "8"}}).ok());
}

TEST_CASE("the monitoring suite names only the exporters' ports unless its operator allows "
          "more", "[catalog][security]") {
  const auto* s = cmax::FindSuite("monitoring");
  REQUIRE(s != nullptr);
  unsetenv("CMAX_EXPORTER_PORTS");
  // The coordinator's plan validation.
  CHECK(cmax::BuildSuiteArgs(*s, {{"exporters", "dcgm:9400,node:9100,cmax:9464"}}).ok());
  auto ssh = cmax::BuildSuiteArgs(*s, {{"exporters", "dcgm:9400,probe:22"}});
  REQUIRE_FALSE(ssh.ok());
  CHECK(ssh.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(ssh.status().message(),
                          "port 22 ('probe:22') is not an exporter port this node allows"));
  CHECK(absl::StrContains(ssh.status().message(), "--allow-exporter-ports"));
  // The agent's re-validation of an assignment.
  CHECK_FALSE(cmax::ValidateSuiteArgs(*s, {"--exporters=probe:8080"}).ok());
  CHECK(cmax::ValidateSuiteArgs(*s, {"--exporters=node:9100"}).ok());
  // Widened by the operator (cmax-agent --allow-exporter-ports sets this).
  setenv("CMAX_EXPORTER_PORTS", "8080,9200", 1);
  CHECK(cmax::ValidateSuiteArgs(*s, {"--exporters=probe:8080,x:9200"}).ok());
  CHECK_FALSE(cmax::ValidateSuiteArgs(*s, {"--exporters=probe:22"}).ok());
  // A malformed list widens nothing.
  setenv("CMAX_EXPORTER_PORTS", "8080,ssh", 1);
  CHECK_FALSE(cmax::ValidateSuiteArgs(*s, {"--exporters=probe:8080"}).ok());
  unsetenv("CMAX_EXPORTER_PORTS");
}
