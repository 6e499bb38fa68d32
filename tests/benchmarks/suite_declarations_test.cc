// Every suite declares itself once (benchmarks/<suite>/<suite>_declaration.cc);
// these cases hold everything else to that declaration: the declaration is
// whole, each binary that serves a suite reads exactly its declared
// parameters (its --help lists them, it refuses a value the plan catalog
// refuses), both binaries' suite tables list the suites they serve with the
// declared summary, the fleet metric table is the declared one, and the
// README's suite table has one row per suite with its binaries and help.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "common/subprocess.h"
#include "common/suite_catalog.h"
#include "reports/judge_util.h"
#include "reports/metric_table.h"

namespace cmax {
namespace {

using namespace std::chrono_literals;

std::string BinPath(const std::string& name) { return std::string(CMAX_TEST_BIN_DIR) + "/" + name; }

bool Built(const std::string& binary) {
  return std::ifstream(BinPath(binary)).good();
}

CommandResult Run(const std::vector<std::string>& argv) {
  auto r = RunCommand(argv, 30s, 1 << 20, {{"CUDA_VISIBLE_DEVICES", ""}});
  REQUIRE(r.ok());
  return *r;
}

TEST_CASE("every suite's declaration is whole and consistent", "[declarations]") {
  REQUIRE(SuiteCatalog().size() >= 13);
  std::set<std::string> names, metrics;
  for (const SuiteInfo& s : SuiteCatalog()) {
    INFO("suite " << s.name);
    CHECK(names.insert(s.name).second);
    CHECK_FALSE(reports::CanonicalCategory(s.category).empty());
    CHECK_FALSE(s.help.empty());
    CHECK(s.help.find('\n') == std::string::npos);
    CHECK_FALSE(s.scopes.empty());
    CHECK(s.default_timeout_s > 0);
    std::set<std::string> backends;
    for (const BackendSpec& b : s.backends) {
      CHECK(backends.insert(b.name).second);
      CHECK((b.binary == "cmax-bench" || b.binary == "cmax-bench-cuda"));
    }
    // A suite's binary is said once: by its backends when it has them (the
    // field `binary` is then left empty, as nothing would read it), else by
    // `binary`.
    if (s.backends.empty()) {
      CHECK((s.binary == "cmax-bench" || s.binary == "cmax-bench-cuda"));
      CHECK(SuiteBinary(s, {}) == s.binary);
    } else {
      CHECK(s.binary.empty());
      CHECK(SuiteBinary(s, {}) == s.backends.front().binary);
    }
    std::set<std::string> params;
    for (const ParamSpec& p : s.params) {
      INFO("parameter " << p.name);
      CHECK(params.insert(p.name).second);
      CHECK_FALSE(p.help.empty());
      if (p.type == ParamType::kEnum || p.type == ParamType::kEnumList) {
        CHECK_FALSE(p.choices.empty());
      }
      // The agent checks a path against its own lists by what the suite
      // does with it; a path without a declared use is refused there.
      if (p.type == ParamType::kPath) CHECK(p.path_use != ParamSpec::PathUse::kNone);
      for (const std::string& b : p.backends) CHECK(backends.count(b) == 1);
      for (const auto& [b, subset] : p.choices_by_backend) {
        CHECK(backends.count(b) == 1);
        for (const auto& c : subset) {
          CHECK(std::find(p.choices.begin(), p.choices.end(), c) != p.choices.end());
        }
      }
    }
    // With backends, --backend picks one: it must be a parameter whose
    // choices are exactly the backends.
    if (!s.backends.empty()) {
      auto it = std::find_if(s.params.begin(), s.params.end(),
                             [](const ParamSpec& p) { return p.name == "backend"; });
      REQUIRE(it != s.params.end());
      CHECK(std::set<std::string>(it->choices.begin(), it->choices.end()) == backends);
    }
    for (const MetricSpec& m : s.metrics) {
      INFO("metric " << m.name);
      CHECK(metrics.insert(m.name).second);  // one suite owns a metric
      CHECK_FALSE(m.unit.empty());
      CHECK_FALSE(m.help.empty());
      if (!m.fleet) CHECK(m.fleet_group_keys.empty());
    }
  }
}

TEST_CASE("the fleet metric table is the suites' declared fleet metrics", "[declarations]") {
  std::set<std::string> declared;
  for (const SuiteInfo& s : SuiteCatalog()) {
    for (const MetricSpec& m : s.metrics) {
      if (!m.fleet) continue;
      declared.insert(m.name);
      const reports::FleetMetric* fm = reports::FindFleetMetric(m.name);
      REQUIRE(fm != nullptr);
      CHECK(fm->category == reports::CanonicalCategory(s.category));
      CHECK(fm->group_keys == m.fleet_group_keys);
    }
  }
  std::set<std::string> table;
  for (const auto& fm : reports::FleetMetrics()) table.insert(fm.metric);
  CHECK(table == declared);
  // The four the scorecard has compared across the fleet since the start.
  for (const char* m : {"gemm_tflops", "memory_bandwidth_gbps", "storage_bandwidth_mbps",
                        "burnin_tflops_mean"}) {
    CHECK(declared.count(m) == 1);
  }
}

TEST_CASE("each binary reads exactly the declared parameters of the suites it serves",
          "[declarations]") {
  for (const SuiteInfo& s : SuiteCatalog()) {
    for (const std::string& binary : SuiteBinaries(s)) {
      if (!Built(binary)) {
        WARN("not built here (no CUDA toolkit): " << binary << "; " << s.name << " unchecked");
        continue;
      }
      if (binary == "cmax-bench-cuda" && s.name == "collective" &&
          !absl::StrContains(Run({BinPath(binary), "--help"}).out, "collective")) {
        WARN("cmax-bench-cuda was built without NCCL headers: collective unchecked there");
        continue;
      }
      INFO(binary << " " << s.name << " --help");
      CommandResult help = Run({BinPath(binary), s.name, "--help"});
      INFO(help.out << help.err);
      REQUIRE(help.exit.code == 0);  // 2 with "declaration and flags disagree" otherwise
      CHECK(absl::StrContains(help.out, SuiteSummary(s, binary)));
      for (const ParamSpec* p : ParamsTakenBy(s, binary)) {
        CHECK(absl::StrContains(help.out, absl::StrCat("--", p->name, " ")));
        CHECK(absl::StrContains(help.out, p->help));
      }
      // A value the plan catalog refuses, the binary refuses too, naming it.
      for (const ParamSpec* p : ParamsTakenBy(s, binary)) {
        std::string bad;
        if ((p->type == ParamType::kInt || p->type == ParamType::kNumber) && p->max != 0) {
          bad = absl::StrCat(static_cast<int64_t>(p->max) + 1);
        } else if (p->type == ParamType::kEnum) {
          bad = "no-such-choice";
        } else if (p->type == ParamType::kPath) {
          bad = "relative/path";
        } else {
          continue;
        }
        REQUIRE_FALSE(ValidateParam(*p, bad).ok());
        CommandResult r = Run({BinPath(binary), s.name, absl::StrCat("--", p->name, "=", bad)});
        INFO("--" << p->name << "=" << bad << ": " << r.err);
        CHECK(r.exit.code == 2);
        CHECK(absl::StrContains(r.out + r.err, p->name));
      }
    }
  }
}

TEST_CASE("both binaries list the suites they serve with the declared summary",
          "[declarations]") {
  for (const std::string binary : {"cmax-bench", "cmax-bench-cuda"}) {
    if (!Built(binary)) {
      WARN("not built here (no CUDA toolkit): " << binary);
      continue;
    }
    CommandResult r = Run({BinPath(binary), "--help"});
    REQUIRE(r.exit.code == 0);
    std::set<std::string> listed;
    for (absl::string_view line : absl::StrSplit(r.out, '\n')) {
      if (!absl::StartsWith(line, "  ")) continue;
      std::vector<std::string> words = absl::StrSplit(absl::StripLeadingAsciiWhitespace(line),
                                                      absl::MaxSplits(' ', 1));
      if (FindSuite(words[0]) == nullptr) continue;
      listed.insert(words[0]);
      CHECK(absl::StrContains(line, SuiteSummary(*FindSuite(words[0]), binary)));
    }
    std::set<std::string> served;
    for (const SuiteInfo& s : SuiteCatalog()) {
      for (const auto& b : SuiteBinaries(s)) {
        if (b == binary) served.insert(s.name);
      }
    }
    // cmax-bench-cuda without NCCL headers has no collective.
    if (binary == std::string("cmax-bench-cuda") && !listed.count("collective")) {
      served.erase("collective");
    }
    CHECK(listed == served);
  }
}

TEST_CASE("the README's suite table has a row per registered suite, from its declaration",
          "[declarations]") {
  std::ifstream in(std::string(CMAX_SOURCE_DIR) + "/README.md");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string readme = ss.str();
  const size_t head = readme.find("| suite | binary | category | what it does |");
  REQUIRE(head != std::string::npos);
  std::vector<std::string> rows;
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(readme).substr(head), '\n')) {
    if (!absl::StartsWith(line, "|")) break;
    rows.emplace_back(line);
  }
  REQUIRE(rows.size() == SuiteCatalog().size() + 2);  // header, rule
  for (size_t i = 0; i < SuiteCatalog().size(); ++i) {
    const SuiteInfo& s = SuiteCatalog()[i];
    std::vector<std::string> cells = absl::StrSplit(rows[i + 2], " | ");
    INFO(rows[i + 2]);
    REQUIRE(cells.size() >= 4);
    CHECK(cells[0] == "| " + s.name);
    CHECK(cells[1] == absl::StrJoin(SuiteBinaries(s), " / "));
    CHECK(cells[2] == s.category);
    CHECK(absl::StartsWith(cells[3], s.help));
  }
}

}  // namespace
}  // namespace cmax

namespace cmax {
namespace {

// Issue 16's rule: a suite is its folder. Outside it, nothing in the
// program names a suite: the agent, the coordinator, the common code, the
// scorecard and the shared benchmark code read declarations instead. Not
// scanned, and why: the registry (benchmarks/CMakeLists.txt), plans and docs
// name suites by design; tests and deploy/ drive them; the simulators
// (benchmarks/scale, benchmarks/report_scale) stand in for the suites'
// records; another suite's folder may use a suite's name as a word of its
// own (hostcheck's "memory" check, audit's "dcgm" package).
TEST_CASE("no suite's name appears in the program outside its folder", "[declarations]") {
  namespace fs = std::filesystem;
  const fs::path root(CMAX_SOURCE_DIR);
  std::vector<fs::path> files;
  for (const char* dir : {"agent", "coordinator", "common", "reports", "benchmarks/gpu_common",
                          "benchmarks/collective_common", "benchmarks/cuda"}) {
    for (const auto& e : fs::recursive_directory_iterator(root / dir)) {
      const std::string ext = e.path().extension().string();
      if (e.is_regular_file() && (ext == ".cc" || ext == ".h" || ext == ".cu" || ext == ".in")) {
        files.push_back(e.path());
      }
    }
  }
  for (const auto& e : fs::directory_iterator(root / "benchmarks")) {
    const std::string ext = e.path().extension().string();
    if (e.is_regular_file() && (ext == ".cc" || ext == ".h" || ext == ".in")) {
      files.push_back(e.path());
    }
  }
  REQUIRE(files.size() > 100);
  std::vector<std::string> hits;
  for (const fs::path& f : files) {
    std::ifstream in(f);
    std::string line;
    for (int n = 1; std::getline(in, line); ++n) {
      for (const SuiteInfo& s : SuiteCatalog()) {
        if (absl::StrContains(line, absl::StrCat("\"", s.name, "\""))) {
          hits.push_back(absl::StrCat(fs::relative(f, root).string(), ":", n, ": ", s.name));
        }
      }
    }
  }
  INFO(absl::StrJoin(hits, "\n"));
  CHECK(hits.empty());
}

}  // namespace
}  // namespace cmax
