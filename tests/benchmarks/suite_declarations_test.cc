// Every suite declares itself once (benchmarks/<suite>/<suite>_declaration.cc);
// these cases hold everything else to that declaration: the declaration is
// whole, each binary that serves a suite reads exactly its declared
// parameters (its --help lists them, it refuses a value the plan catalog
// refuses), both binaries' suite tables list the suites they serve with the
// declared summary, the fleet metric table is the declared one, and the
// suite table of docs/plans.md has one row per suite with its binaries and help.
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <map>
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
#include "reports/compare.h"
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
  std::set<std::string> names;
  std::map<std::string, const MetricSpec*> metrics;  // by name, across suites
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
    std::set<std::string> own;
    for (const MetricSpec& m : s.metrics) {
      INFO("metric " << m.name);
      CHECK(own.insert(m.name).second);  // declared once by its suite
      CHECK_FALSE(m.unit.empty());
      CHECK_FALSE(m.help.empty());
      if (!m.fleet) CHECK(m.fleet_group_keys.empty());
      // The fleet judge compares on a side: a fleet metric has a direction.
      if (m.fleet) CHECK(m.better != MetricBetter::kNeither);
      // A name two suites write (gpu_count: health and hostcheck) means the
      // same in both: one unit, one direction, and at most one of them
      // compares it across the fleet (FindFleetMetric reads the name alone).
      auto [it, first] = metrics.emplace(m.name, &m);
      if (!first) {
        CHECK(it->second->unit == m.unit);
        CHECK(it->second->better == m.better);
        CHECK_FALSE((it->second->fleet && m.fleet));
      }
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

TEST_CASE("the suite table of docs/plans.md has a row per registered suite, from its declaration",
          "[declarations]") {
  std::ifstream in(std::string(CMAX_SOURCE_DIR) + "/docs/plans.md");
  REQUIRE(in.good());
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string doc = ss.str();
  const size_t head = doc.find("| suite | binary | category | what it does |");
  REQUIRE(head != std::string::npos);
  std::vector<std::string> rows;
  for (absl::string_view line :
       absl::StrSplit(absl::string_view(doc).substr(head), '\n')) {
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
    // The row is the declaration and nothing else: the longer text is the
    // declaration's `details` (`<binary> <suite> --help`).
    CHECK(rows[i + 2] == absl::StrCat("| ", s.name, " | ", absl::StrJoin(SuiteBinaries(s), " / "),
                                      " | ", s.category, " | ", s.help, " |"));
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
    const std::string rel = fs::relative(f, root).string();
    // In the program's own parts, not even an id built on the name
    // ("gemm:...": the charts come from the declarations, issue 33 item 2);
    // a suite's shared helpers may prefix their log lines with it.
    const bool core = !absl::StartsWith(rel, "benchmarks/");
    for (int n = 1; std::getline(in, line); ++n) {
      // Code, not its comments: a comment may show an id as an example.
      const std::string code = line.substr(0, line.find("//"));
      for (const SuiteInfo& s : SuiteCatalog()) {
        if (absl::StrContains(code, absl::StrCat("\"", s.name, "\"")) ||
            (core && absl::StrContains(code, absl::StrCat("\"", s.name, ":")))) {
          hits.push_back(absl::StrCat(rel, ":", n, ": ", s.name));
        }
      }
    }
  }
  INFO(absl::StrJoin(hits, "\n"));
  CHECK(hits.empty());
}

// Issue 16: a suite's category is written once, in its declaration. Its
// judges grade the declared category (or the declared judge_category:
// hostcheck's and audit's fleet-wide rules grade Lifecycle), read through
// reports::JudgeCategory; no judge in a suite's folder spells a category.
TEST_CASE("the suites' judges take their category from the declaration", "[declarations]") {
  namespace fs = std::filesystem;
  const fs::path root(CMAX_SOURCE_DIR);
  std::vector<std::string> hits;
  int judges = 0;
  for (const SuiteInfo& s : SuiteCatalog()) {
    const fs::path dir = root / "benchmarks" / s.name;
    if (!fs::is_directory(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir)) {
      const std::string file = e.path().filename().string();
      if (!absl::EndsWith(file, "_judge.cc")) continue;
      ++judges;
      std::ifstream in(e.path());
      std::string line;
      for (int n = 1; std::getline(in, line); ++n) {
        for (const std::string& c : reports::CategoryNames()) {
          // The scorecard's spelling ("Storage"); the lower-case word is
          // also the storage suite's name, which its judge filters on.
          if (absl::StrContains(line, absl::StrCat("\"", c, "\""))) {
            hits.push_back(absl::StrCat(fs::relative(e.path(), root).string(), ":", n, ": ", c));
          }
        }
      }
    }
  }
  CHECK(judges >= 10);
  INFO(absl::StrJoin(hits, "\n"));
  CHECK(hits.empty());
  CHECK(reports::JudgeCategory("hostcheck") == "Lifecycle");
  CHECK(reports::JudgeCategory("audit") == "Lifecycle");
  for (const SuiteInfo& s : SuiteCatalog()) {
    INFO(s.name);
    CHECK_FALSE(reports::CanonicalCategory(s.category).empty());
    if (!s.judge_category.empty()) {
      CHECK_FALSE(reports::CanonicalCategory(s.judge_category).empty());
    } else {
      CHECK(reports::JudgeCategory(s.name) == reports::CanonicalCategory(s.category));
    }
  }
}

// Compare and baseline read a metric's direction from its declaration
// (reports::MetricBetter): every declared metric has exactly the declared
// one, and an undeclared name has none.
TEST_CASE("compare's metric directions are the declarations'", "[declarations]") {
  int directed = 0;
  for (const SuiteInfo& s : SuiteCatalog()) {
    for (const MetricSpec& m : s.metrics) {
      INFO(s.name << " " << m.name);
      CHECK(reports::MetricBetter(m.name) == reports::BetterName(m.better));
      if (m.better != MetricBetter::kNeither) ++directed;
    }
  }
  CHECK(directed >= 60);
  CHECK(reports::MetricBetter("no_suite_writes_this_gbps").empty());
  CHECK(reports::MetricBetter("busbw_gbps") == "higher");
  CHECK(reports::MetricBetter("rdma_write_lat_us") == "lower");
}

// Every metric name a suite's sources can write is declared by that suite
// (every test that runs a suite checks its records the same way at run time:
// tests/benchmarks/declared_metrics.h). This covers what no test runs here:
// the GPU halves, the fabric and RDMA paths. The writing calls it reads:
// RecordWriter and HealthResult Measure/Sample, set_metric, a SampleWindow's
// Add/AddBits, health's MeasureOpt, with the name as a literal (both names
// of a `cond ? "a" : "b"`). A metric-writing call whose name is not a
// literal must be one of the few below, each with its names' source scanned
// too, so a new computed name cannot slip past.
TEST_CASE("every metric name a suite's sources write is declared by that suite, in its unit",
          "[declarations]") {
  namespace fs = std::filesystem;
  const fs::path root(CMAX_SOURCE_DIR);
  const std::regex literal(
      R"re((?:\bMeasure|\bSample|\bset_metric|\bAddBits|\.Add|->Add)\(\s*"([a-z0-9_]+)"(\s*,\s*")?)re");
  const std::regex opt(R"re(\bMeasureOpt\(\s*\w+\s*,\s*\w+\s*,\s*"([a-z0-9_]+)")re");
  const std::regex ternary(
      R"re(\bMeasure\(\s*[\w.]+\s*\?\s*"([a-z0-9_]+)"\s*:\s*"([a-z0-9_]+)")re");
  const std::regex computed(R"re((?:\.|->)(?:Measure|Sample)\(\s*([^"\s][^,]*),)re");
  // The unit where a call names it as a literal: Measure/Sample(name, value,
  // unit), MeasureOpt(r, g, name, value, unit), a SampleWindow's Add(name,
  // unit, value). RecordWriter stops a suite that writes another unit at run
  // time; this finds it in code no test here runs (the GPU suites).
  const std::regex with_unit(
      R"re(\b(?:Measure|Sample|MeasureOpt\(\s*\w+\s*,\s*\w+\s*,)\(?\s*"([a-z0-9_]+)"\s*,\s*([^;"]*?),\s*"([^"]*)")re");
  const std::regex window_unit(R"re((?:\.|->)Add\(\s*"([a-z0-9_]+)"\s*,\s*"([^"]*)")re");
  // Computed names: file -> where its names come from (scanned below).
  const std::map<std::string, std::string> computed_ok = {
      // MeasureOpt(r, g, "name", ...)'s body; its callers' names are scanned.
      {"benchmarks/health/gpu_checks.cc", "metric"},
      // Re-writes HealthResult's measurements, whose names are scanned.
      {"benchmarks/health/health.cc", "m.metric()"},
      // "nvlink_<counter>_errors" for each counter of kCounters (below).
      {"benchmarks/health/nvlink_checks.cc", "absl::StrCat(\"nvlink_\""},
      // Both names of the ternary are scanned (`ternary`).
      {"benchmarks/health/xid_checks.cc", "sxid ?"},
      // rdma::PerftestMetric's names (rails.cc, below).
      {"benchmarks/rdma/rdma.cc", "rdma::PerftestMetric(t)"},
  };

  struct Folder {
    std::string dir;
    std::vector<std::string> suites;  // a name must be declared by one of these
  };
  std::vector<Folder> folders;
  std::vector<std::string> all_suites;
  for (const SuiteInfo& s : SuiteCatalog()) {
    folders.push_back({"benchmarks/" + s.name, {s.name}});
    all_suites.push_back(s.name);
  }
  // Shared code that writes on the suites' behalf.
  for (const char* dir : {"benchmarks/gpu_common", "benchmarks/collective_common",
                          "benchmarks/cuda"}) {
    folders.push_back({dir, all_suites});
  }

  auto declared_by = [](const std::vector<std::string>& suites, const std::string& metric) {
    for (const std::string& name : suites) {
      const SuiteInfo* s = FindSuite(name);
      if (s != nullptr && FindSuiteMetric(*s, metric) != nullptr) return true;
    }
    return false;
  };
  std::vector<std::string> undeclared, uncovered, wrong_units;
  size_t names_seen = 0, units_seen = 0;
  auto unit_of = [&](const Folder& f, const std::string& where, const std::string& metric,
                     const std::string& unit) {
    for (const std::string& name : f.suites) {
      const SuiteInfo* s = FindSuite(name);
      const MetricSpec* m = s == nullptr ? nullptr : FindSuiteMetric(*s, metric);
      if (m == nullptr) continue;
      ++units_seen;
      if (m->unit != unit) {
        wrong_units.push_back(absl::StrCat(where, ": '", metric, "' written in '", unit,
                                           "', declared in '", m->unit, "' by ", name));
      }
      return;
    }
  };
  auto need = [&](const Folder& f, const std::string& where, const std::string& metric) {
    ++names_seen;
    if (!declared_by(f.suites, metric)) {
      undeclared.push_back(absl::StrCat(where, ": '", metric, "' is not declared by ",
                                        absl::StrJoin(f.suites, " or ")));
    }
  };
  auto slurp = [](const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  };
  for (const Folder& f : folders) {
    if (!fs::exists(root / f.dir)) continue;
    for (const auto& e : fs::recursive_directory_iterator(root / f.dir)) {
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".cc" && ext != ".h" && ext != ".cu")) continue;
      const std::string rel = fs::relative(e.path(), root).string();
      // The declaration and the judge read metrics; they do not write them.
      if (absl::EndsWith(rel, "_declaration.cc") || absl::EndsWith(rel, "_judge.cc")) continue;
      const std::string text = slurp(e.path());
      for (auto it = std::sregex_iterator(text.begin(), text.end(), literal);
           it != std::sregex_iterator(); ++it) {
        // A SampleWindow's Add(name, unit, value) has a unit literal next;
        // other Add()s (a finding sink's) do not write metrics.
        const std::string call = (*it)[0].str();
        if ((absl::StartsWith(call, ".Add") || absl::StartsWith(call, "->Add")) &&
            !(*it)[2].matched) {
          continue;
        }
        need(f, rel, (*it)[1].str());
      }
      for (auto it = std::sregex_iterator(text.begin(), text.end(), with_unit);
           it != std::sregex_iterator(); ++it) {
        unit_of(f, rel, (*it)[1].str(), (*it)[3].str());
      }
      for (auto it = std::sregex_iterator(text.begin(), text.end(), window_unit);
           it != std::sregex_iterator(); ++it) {
        unit_of(f, rel, (*it)[1].str(), (*it)[2].str());
      }
      for (auto it = std::sregex_iterator(text.begin(), text.end(), opt);
           it != std::sregex_iterator(); ++it) {
        need(f, rel, (*it)[1].str());
      }
      for (auto it = std::sregex_iterator(text.begin(), text.end(), ternary);
           it != std::sregex_iterator(); ++it) {
        need(f, rel, (*it)[1].str());
        need(f, rel, (*it)[2].str());
      }
      for (auto it = std::sregex_iterator(text.begin(), text.end(), computed);
           it != std::sregex_iterator(); ++it) {
        const std::string arg((*it)[1].str());
        if (absl::StartsWith(arg, "const ")) continue;  // a declaration
        auto ok = computed_ok.find(rel);
        if (ok == computed_ok.end() || !absl::StartsWith(arg, ok->second)) {
          uncovered.push_back(absl::StrCat(rel, ": a metric named by `", arg, "`"));
        }
      }
      // The computed names' sources.
      if (rel == "benchmarks/health/nvlink_checks.cc") {
        const std::regex counter(R"re(\{"([a-z_]+)",\s*&NvLinkState::)re");
        int n = 0;
        for (auto it = std::sregex_iterator(text.begin(), text.end(), counter);
             it != std::sregex_iterator(); ++it, ++n) {
          need(f, rel, absl::StrCat("nvlink_", (*it)[1].str(), "_errors"));
        }
        CHECK(n >= 5);  // replay, recovery, crc_flit, crc_data, effective
      }
      if (rel == "benchmarks/rdma/rails.cc") {
        const std::regex perftest(R"re(return "(rdma_[a-z0-9_]+)";)re");
        int n = 0;
        for (auto it = std::sregex_iterator(text.begin(), text.end(), perftest);
             it != std::sregex_iterator(); ++it, ++n) {
          need(f, rel, (*it)[1].str());
        }
        CHECK(n == 3);  // write and read bandwidth, write latency
      }
    }
  }
  INFO(names_seen << " metric names written in the suites' sources");
  CHECK(names_seen > 100);
  INFO("undeclared:\n" << absl::StrJoin(undeclared, "\n"));
  CHECK(undeclared.empty());
  INFO(units_seen << " units written beside a literal metric name");
  CHECK(units_seen > 100);
  INFO("written in a unit other than the declared one:\n" << absl::StrJoin(wrong_units, "\n"));
  CHECK(wrong_units.empty());
  INFO("metric names computed where this test cannot read them (add the call to "
       "computed_ok with its names' source, or write the name as a literal):\n"
       << absl::StrJoin(uncovered, "\n"));
  CHECK(uncovered.empty());
}

}  // namespace
}  // namespace cmax
