// The dcgm suite: dcgmi diag JSON (fixtures from DCGM's documented layout)
// becomes findings per test and GPU; a missing dcgmi is "not measured".
#include "benchmarks/dcgm/dcgm_diag.h"

#include <catch2/catch.hpp>
#include <chrono>
#include <fstream>
#include <sstream>

#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

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
      CHECK(rec.finding().not_measured());
      CHECK(rec.finding().category() == "reliability");
      CHECK_THAT(rec.finding().detail(), Catch::Contains("cmax-test-no-such-dcgmi"));
    }
  }
  CHECK(said);
}

namespace {

// A fake dcgmi in its own temp dir: `body` is the script after the shebang.
struct FakeDcgmi {
  std::string dir, path;
  explicit FakeDcgmi(const std::string& body) {
    char tmpl[] = "/tmp/cmax-dcgm-test-XXXXXX";
    REQUIRE(mkdtemp(tmpl) != nullptr);
    dir = tmpl;
    path = dir + "/dcgmi";
    std::ofstream out(path);
    out << "#!/bin/sh\n" << body << "\n";
    out.close();
    REQUIRE(chmod(path.c_str(), 0755) == 0);
  }
  ~FakeDcgmi() {
    unlink(path.c_str());
    rmdir(dir.c_str());
  }
};

const cmax::v1::Finding* FindingOf(const SuiteRun& r, const std::string& id) {
  for (const auto& rec : r.records) {
    if (rec.has_finding() && rec.finding().check_id() == id) return &rec.finding();
  }
  return nullptr;
}

bool EvidenceContains(const cmax::v1::Finding& f, const std::string& text) {
  for (const auto& e : f.evidence()) {
    if (e.find(text) != std::string::npos) return true;
  }
  return false;
}

}  // namespace

TEST_CASE("cmax-bench dcgm: a dcgmi diag that hangs past its time limit fails the node",
          "[dcgm]") {
  FakeDcgmi fake("echo 'Running level 1 diagnostic' ; echo 'stuck on GPU 0' >&2 ; exec sleep 30");
  const auto start = std::chrono::steady_clock::now();
  // On PATH, as the agent finds it.
  SuiteRun r = Bench({"--timeout=1"}, {{"PATH", fake.dir + ":/usr/bin:/bin"}});
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
  CHECK(r.exit_code == 1);
  const cmax::v1::Finding* f = FindingOf(r, "dcgm.diag_wedged");
  REQUIRE(f != nullptr);
  CHECK(f->severity() == cmax::v1::SEVERITY_FAIL);
  CHECK_FALSE(f->not_measured());
  CHECK(f->category() == "reliability");
  CHECK(f->subject() == "node");
  CHECK(EvidenceContains(*f, fake.path + " diag -r 1 -j"));
  CHECK(EvidenceContains(*f, "after 1 s"));
  CHECK(EvidenceContains(*f, "stuck on GPU 0"));
  CHECK(EvidenceContains(*f, "Running level 1 diagnostic"));
  CHECK(FindingOf(r, "dcgm.not_measured") == nullptr);
}

TEST_CASE("cmax-bench dcgm: a dcgmi diag killed by a signal fails the node", "[dcgm]") {
  FakeDcgmi fake("echo 'partial {' ; echo 'plugin aborted' >&2 ; kill -KILL $$");
  SuiteRun r = Bench({"--dcgmi=" + fake.path, "--level=2"}, {});
  CHECK(r.exit_code == 1);
  const cmax::v1::Finding* f = FindingOf(r, "dcgm.diag_killed");
  REQUIRE(f != nullptr);
  CHECK(f->severity() == cmax::v1::SEVERITY_FAIL);
  CHECK_FALSE(f->not_measured());
  CHECK(EvidenceContains(*f, "signal 9"));
  CHECK(EvidenceContains(*f, "plugin aborted"));
  CHECK(EvidenceContains(*f, "partial {"));
  CHECK(EvidenceContains(*f, " diag -r 2 -j"));
}

TEST_CASE("cmax-bench dcgm: a dcgmi diag printing nothing parseable fails the node", "[dcgm]") {
  FakeDcgmi fake("echo 'Successfully ran diagnostic. <html>not json</html>' ; exit 0");
  SuiteRun r = Bench({"--dcgmi=" + fake.path}, {});
  CHECK(r.exit_code == 1);
  const cmax::v1::Finding* f = FindingOf(r, "dcgm.diag_unparseable");
  REQUIRE(f != nullptr);
  CHECK(f->severity() == cmax::v1::SEVERITY_FAIL);
  CHECK_FALSE(f->not_measured());
  CHECK(EvidenceContains(*f, "exited 0"));
  CHECK(EvidenceContains(*f, "<html>not json</html>"));
  for (const auto& rec : r.records) CHECK_FALSE(rec.has_measurement());
}

TEST_CASE("cmax-bench dcgm: dcgmi without a reachable nv-hostengine is not measured", "[dcgm]") {
  // dcgmi's words when no host engine listens (NVIDIA/DCGM issues #43, #57).
  FakeDcgmi fake(
      "echo 'Error: unable to establish a connection to the specified host: localhost'\n"
      "echo 'Error: Unable to connect to host engine. Host engine connection "
      "invalid/disconnected.'\nexit 255");
  SuiteRun r = Bench({"--dcgmi=" + fake.path}, {});
  CHECK(r.exit_code == 2);
  const cmax::v1::Finding* f = FindingOf(r, "dcgm.not_measured");
  REQUIRE(f != nullptr);
  CHECK(f->not_measured());
  CHECK_THAT(f->title(), Catch::Contains("nv-hostengine"));
  CHECK(EvidenceContains(*f, "Unable to connect to host engine"));
  CHECK(FindingOf(r, "dcgm.diag_unparseable") == nullptr);
}
