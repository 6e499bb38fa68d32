// The dcgm suite: dcgmi diag JSON (fixtures from DCGM's documented layout)
// becomes findings per test and GPU; a missing dcgmi is "not measured".
#include "benchmarks/dcgm/dcgm_diag.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <sstream>

#include "tests/benchmarks/suite_run.h"

namespace {

std::string Fixture(const std::string& name) {
  std::ifstream in(std::string(CMAX_SOURCE_DIR) + "/tests/fixtures/dcgm/" + name);
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

using cmax::testing::SuiteRun;

SuiteRun Bench(const std::vector<std::string>& extra,
               const std::map<std::string, std::string>& env) {
  std::vector<std::string> args = {"dcgm", "--jsonl"};
  args.insert(args.end(), extra.begin(), extra.end());
  return cmax::testing::RunSuite("cmax-bench", args, std::chrono::seconds(60), env);
}

}  // namespace

TEST_CASE("DCGM 4 diag JSON: every result per test and GPU, with warnings", "[dcgm]") {
  auto report = cmax::dcgm::ParseDiagJson(Fixture("diag_r2_gpu1_memory_fail.json"));
  REQUIRE(report.ok());
  CHECK(report->version == "4.2.3");
  CHECK(report->driver_version == "570.133.20");
  REQUIRE(report->results.size() == 6);
  int fails = 0, warns = 0;
  for (const auto& r : report->results) {
    if (r.status == "fail") {
      ++fails;
      CHECK(r.test == "memory");
      CHECK(r.category == "Hardware");
      CHECK(r.entity == "gpu:1");
      REQUIRE(r.warnings.size() == 1);
      CHECK(r.warnings[0].find("error id 95") != std::string::npos);
    }
    if (r.status == "warn") {
      ++warns;
      CHECK(r.test == "pcie");
      CHECK(r.entity == "gpu:1");
    }
  }
  CHECK(fails == 1);
  CHECK(warns == 1);
  REQUIRE(report->entities.size() == 2);
  CHECK(report->entities[1].first == "gpu:1");
  CHECK(report->entities[1].second.find("1654922012222") != std::string::npos);
}

TEST_CASE("DCGM 3 diag JSON: gpu_ids lists expand to one result per GPU", "[dcgm]") {
  auto report = cmax::dcgm::ParseDiagJson("dcgmi banner\n" + Fixture("diag_r1_v3_pass.json"));
  REQUIRE(report.ok());
  CHECK(report->version == "3.3.5");
  REQUIRE(report->results.size() == 6);
  for (const auto& r : report->results) CHECK(r.status == "pass");
  CHECK(report->results[1].entity == "gpu:1");
}

TEST_CASE("not JSON or an unknown layout is an error, not a pass", "[dcgm]") {
  CHECK_FALSE(cmax::dcgm::ParseDiagJson("Error: unable to connect to host engine").ok());
  CHECK_FALSE(cmax::dcgm::ParseDiagJson("{\"something\": 1}").ok());
}

TEST_CASE("cmax-bench dcgm: a failing GPU is a FAIL finding naming the GPU", "[dcgm]") {
  const std::string fake = std::string(CMAX_SOURCE_DIR) + "/tests/fixtures/dcgm/fake_dcgmi.sh";
  SuiteRun r = Bench({"--level=2", "--dcgmi=" + fake}, {});
  CHECK(r.exit_code == 1);
  bool memory_fail = false, pcie_warn = false;
  int measurements = 0;
  for (const auto& rec : r.records) {
    if (rec.has_measurement()) ++measurements;
    if (!rec.has_finding()) continue;
    const auto& f = rec.finding();
    if (f.check_id() == "dcgm.memory") {
      memory_fail = true;
      CHECK(f.severity() == cmax::v1::SEVERITY_FAIL);
      CHECK(f.subject() == "gpu:1");
      CHECK(f.category() == "reliability");
    }
    if (f.check_id() == "dcgm.pcie") {
      pcie_warn = true;
      CHECK(f.severity() == cmax::v1::SEVERITY_WARN);
    }
  }
  CHECK(memory_fail);
  CHECK(pcie_warn);
  CHECK(measurements == 6);

  // Exit 0 from dcgmi does not hide a failing result in the JSON.
  SuiteRun lying = Bench({"--level=2", "--dcgmi=" + fake}, {{"FAKE_DCGMI_EXIT", "0"}});
  CHECK(lying.exit_code == 1);

  // A passing JSON with a non-zero exit is still a failure.
  SuiteRun odd = Bench({"--level=1", "--dcgmi=" + fake},
                  {{"FAKE_DCGMI_EXIT", "3"},
                   {"FAKE_DCGMI_JSON",
                    std::string(CMAX_SOURCE_DIR) + "/tests/fixtures/dcgm/diag_r1_v3_pass.json"}});
  CHECK(odd.exit_code == 1);
  bool exit_finding = false;
  for (const auto& rec : odd.records) {
    if (rec.has_finding() && rec.finding().check_id() == "dcgm.exit_code") exit_finding = true;
  }
  CHECK(exit_finding);
}

TEST_CASE("cmax-bench dcgm without dcgmi: not measured, exit 2, no measurement", "[dcgm]") {
  SuiteRun r = Bench({"--dcgmi=cmax-test-no-such-dcgmi"}, {});
  CHECK(r.exit_code == 2);
  bool said = false;
  for (const auto& rec : r.records) {
    CHECK_FALSE(rec.has_measurement());
    if (rec.has_finding() &&
        rec.finding().title() == "dcgm not installed: not measured") {
      said = true;
    }
  }
  CHECK(said);
}
