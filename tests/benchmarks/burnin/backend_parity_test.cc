// No drift between the catalog and the suites' own parsers for burnin and
// gemm: every combination of backend-dependent parameters is put through the
// catalog (BuildSuiteArgs, as the coordinator does), and the args it accepts
// are given to the binary the agent would pick (SuiteBinary): the GPU
// parsers (ParseCudaBurninArgs, ParseCudaGemmArgs) are called directly, the
// host suites run in cmax-bench with a tiny workload. Whatever the catalog
// accepts, the suite must accept (exit 0 or 1, never 2); whatever it
// refuses, the suite refuses too (exit 2), so the catalog is no stricter
// than it must be.
#include <catch2/catch.hpp>
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_join.h"
#include "benchmarks/burnin/cuda/burnin_cuda.h"
#include "benchmarks/gemm/cuda/gemm_cuda.h"
#include "common/subprocess.h"
#include "common/suite_catalog.h"

namespace {

using Params = std::map<std::string, std::string>;

// Every combination: each key absent or one of its values.
std::vector<Params> Combinations(
    const Params& fixed,
    const std::vector<std::pair<std::string, std::vector<std::string>>>& axes) {
  std::vector<Params> out = {fixed};
  for (const auto& [key, values] : axes) {
    std::vector<Params> next;
    for (const auto& p : out) {
      next.push_back(p);
      for (const auto& v : values) {
        Params q = p;
        q[key] = v;
        next.push_back(q);
      }
    }
    out = std::move(next);
  }
  return out;
}

std::vector<std::string> RawArgs(const Params& params) {
  std::vector<std::string> args;
  for (const auto& [k, v] : params) args.push_back("--" + k + "=" + v);
  return args;
}

template <typename Args>
int ParseWith(std::optional<int> (*parse)(int, char**, Args*), const std::string& suite,
              const std::vector<std::string>& flags) {
  std::vector<std::string> args = {suite};
  args.insert(args.end(), flags.begin(), flags.end());
  std::vector<char*> argv;
  for (auto& s : args) argv.push_back(s.data());
  argv.push_back(nullptr);
  Args a;
  auto rc = parse(static_cast<int>(args.size()), argv.data(), &a);
  return rc.has_value() ? *rc : -1;  // -1: accepted, would run
}

// cmax-bench <suite> <flags> <extra>: its exit code.
int RunHost(const std::string& suite, const std::vector<std::string>& flags,
            const std::vector<std::string>& extra) {
  std::vector<std::string> argv = {std::string(CMAX_TEST_BIN_DIR) + "/cmax-bench", suite};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), extra.begin(), extra.end());
  auto r = cmax::RunCommand(argv, std::chrono::seconds(60));
  REQUIRE(r.ok());
  INFO(r->err);
  REQUIRE(r->exit.exited);
  return r->exit.code;
}

// The suite's answer to `params` through the binary the agent picks:
// true when it accepts them.
bool SuiteAccepts(const std::string& suite, const Params& params,
                  const std::vector<std::string>& host_extra) {
  const cmax::SuiteInfo* info = cmax::FindSuite(suite);
  REQUIRE(info != nullptr);
  const std::vector<std::string> flags = RawArgs(params);
  const std::string binary = cmax::SuiteBinary(*info, flags);
  if (binary == "cmax-bench-cuda") {
    int rc = suite == "burnin" ? ParseWith(cmax::bench::ParseCudaBurninArgs, suite, flags)
                               : ParseWith(cmax::bench::ParseCudaGemmArgs, suite, flags);
    return rc == -1;
  }
  REQUIRE(binary == "cmax-bench");
  int rc = RunHost(suite, flags, host_extra);
  CHECK(rc != 1);  // a tiny run here must not find failures either
  return rc != 2;
}

void CheckParity(const std::string& suite, const std::vector<Params>& combos,
                 const std::vector<std::string>& host_extra) {
  const cmax::SuiteInfo* info = cmax::FindSuite(suite);
  REQUIRE(info != nullptr);
  int accepted = 0, refused = 0;
  for (const auto& p : combos) {
    auto built = cmax::BuildSuiteArgs(*info, p);
    INFO(suite << " " << absl::StrJoin(RawArgs(p), " ")
               << (built.ok() ? " (catalog accepts)"
                              : " (catalog refuses: " +
                                    std::string(built.status().message()) + ")"));
    CHECK(SuiteAccepts(suite, p, host_extra) == built.ok());
    (built.ok() ? accepted : refused)++;
  }
  // Both sides were exercised.
  CHECK(accepted > 0);
  CHECK(refused > 0);
}

}  // namespace

TEST_CASE("every burnin combination the catalog accepts its binary accepts, and no other",
          "[catalog]") {
  CheckParity("burnin",
              Combinations({{"duration", "1"}}, {{"backend", {"cpu", "cuda"}},
                                                 {"dtype", {"fp32", "fp64", "bf16"}},
                                                 {"threads", {"1"}},
                                                 {"gpus", {"0"}},
                                                 {"bug-report", {"off"}}}),
              {"--size=32"});
}

TEST_CASE("every gemm combination the catalog accepts its binary accepts, and no other",
          "[catalog]") {
  CheckParity(
      "gemm",
      Combinations(
          {{"m", "32"}, {"n", "32"}, {"k", "32"}, {"iters", "1"}, {"warmup", "0"}},
          {{"backend", {"cuda", "cpu"}},
           {"dtype", {"bf16", "fp16", "fp8", "tf32", "fp32", "fp64"}},
           {"threads", {"1"}},
           {"gpus", {"0"}}}),
      {});
}
