#include "common/plan_parser.h"

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status_macros.h"
#include "common/suite_catalog.h"
#include "google/protobuf/util/json_util.h"
#include "re2/re2.h"
#include "yaml-cpp/yaml.h"

namespace cmax {
namespace {

// `min_nodes` (SuiteSpec.min_nodes): a group of nodes that runs as one task.
// Node scope has one node a task by definition, and pairs always two.
constexpr int64_t kMaxMinNodes = 100000;
constexpr char kMinNodesScopes[] = "min_nodes applies to scopes gang and barrier";
bool MinNodesApplies(v1::Scope scope) {
  return scope == v1::SCOPE_GANG || scope == v1::SCOPE_BARRIER;
}

class Parser {
 public:
  explicit Parser(std::string source) : source_(std::move(source)) {}

  absl::Status Error(const YAML::Node& node, const std::string& message) const {
    const YAML::Mark mark = node.Mark();
    if (mark.is_null()) return absl::InvalidArgumentError(absl::StrCat(source_, ": ", message));
    return absl::InvalidArgumentError(
        absl::StrCat(source_, ":", mark.line + 1, ":", mark.column + 1, ": ", message));
  }

  absl::Status CheckKeys(const YAML::Node& map, const std::set<std::string>& known,
                         const std::string& where) const {
    if (!map.IsMap()) return Error(map, absl::StrCat(where, " must be a mapping"));
    for (const auto& kv : map) {
      std::string key = kv.first.as<std::string>();
      if (!known.count(key)) {
        return Error(kv.first, absl::StrCat("unknown key '", key, "' in ", where, " (known: ",
                                            absl::StrJoin(known, ", "), ")"));
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> Scalar(const YAML::Node& node, const std::string& what) const {
    if (!node.IsScalar()) return Error(node, absl::StrCat(what, " must be a single value"));
    return node.Scalar();
  }

  absl::StatusOr<int64_t> Int(const YAML::Node& node, const std::string& what, int64_t lo,
                              int64_t hi) const {
    CMAX_ASSIGN_OR_RETURN(std::string s, Scalar(node, what));
    int64_t v;
    if (!absl::SimpleAtoi(s, &v) || v < lo || v > hi) {
      return Error(node, absl::StrCat(what, " must be an integer in [", lo, ", ", hi, "], not '",
                                      s, "'"));
    }
    return v;
  }

  absl::StatusOr<double> Number(const YAML::Node& node, const std::string& what) const {
    CMAX_ASSIGN_OR_RETURN(std::string s, Scalar(node, what));
    double v;
    if (!absl::SimpleAtod(s, &v)) return Error(node, absl::StrCat(what, " must be a number"));
    return v;
  }

  absl::Status ParseExpect(const YAML::Node& node, v1::Expectations* out) const {
    CMAX_RETURN_IF_ERROR(CheckKeys(node,
                                   {"gpus_per_node", "gpu_model", "min_cpu_cores",
                                    "min_memory_gib", "metrics", "tenancy"},
                                   "expect"));
    for (const auto& kv : node) {
      std::string key = kv.first.as<std::string>();
      const YAML::Node& v = kv.second;
      if (key == "gpus_per_node") {
        CMAX_ASSIGN_OR_RETURN(int64_t n, Int(v, key, 0, 1024));
        out->set_gpus_per_node(static_cast<int>(n));
      } else if (key == "gpu_model") {
        CMAX_ASSIGN_OR_RETURN(std::string s, Scalar(v, key));
        out->set_gpu_model(s);
      } else if (key == "min_cpu_cores") {
        CMAX_ASSIGN_OR_RETURN(int64_t n, Int(v, key, 0, 1 << 20));
        out->set_min_cpu_cores(static_cast<int>(n));
      } else if (key == "min_memory_gib") {
        CMAX_ASSIGN_OR_RETURN(double d, Number(v, key));
        out->set_min_memory_gib(d);
      } else if (key == "tenancy") {
        CMAX_ASSIGN_OR_RETURN(std::string s, Scalar(v, key));
        if (s != "shared" && s != "single") return Error(v, "tenancy must be shared or single");
        out->set_tenancy(s);
      } else if (key == "metrics") {
        if (!v.IsMap()) return Error(v, "metrics must be a mapping of metric: minimum");
        for (const auto& m : v) {
          CMAX_ASSIGN_OR_RETURN(double d, Number(m.second, m.first.as<std::string>()));
          (*out->mutable_metrics())[m.first.as<std::string>()] = d;
        }
      }
    }
    return absl::OkStatus();
  }

  // `baseline: FILE`: a file written by `cmaxctl baseline save`, relative to
  // the plan file's folder, read and embedded (the coordinator never reads
  // the client's disk).
  absl::Status ParseBaseline(const YAML::Node& node, v1::Plan* plan) const {
    CMAX_ASSIGN_OR_RETURN(std::string name, Scalar(node, "baseline"));
    if (name.empty()) return Error(node, "baseline needs a file name");
    std::string path = name;
    if (path.front() != '/') {
      const size_t slash = source_.rfind('/');
      if (slash != std::string::npos) path = absl::StrCat(source_.substr(0, slash + 1), name);
    }
    // A regular file only: a FIFO or a device could block or never end.
    struct stat st;
    if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) {
      return Error(node, absl::StrCat("baseline '", name, "': ", path, " is not a regular file"));
    }
    std::ifstream in(path, std::ios::binary);
    if (!in) {
      return Error(node, absl::StrCat("baseline '", name, "': cannot open ", path, ": ",
                                      std::strerror(errno),
                                      " (write one with cmaxctl baseline save RUN -o FILE)"));
    }
    std::string text(kMaxBaselineBytes + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<size_t>(in.gcount()));
    if (text.size() > kMaxBaselineBytes) {
      return Error(node, absl::StrCat("baseline '", path, "' is larger than ", kMaxBaselineBytes,
                                      " bytes"));
    }
    v1::BaselineFile b;
    google::protobuf::util::JsonParseOptions options;
    options.ignore_unknown_fields = false;
    if (auto st = google::protobuf::util::JsonStringToMessage(text, &b, options); !st.ok()) {
      return Error(node, absl::StrCat("baseline '", path, "' is not a cmax baseline file: ",
                                      std::string(st.message())));
    }
    if (b.run_id().empty() || b.values().empty()) {
      return Error(node, absl::StrCat("baseline '", path,
                                      "' has no run_id or no values (write one with cmaxctl "
                                      "baseline save RUN -o FILE)"));
    }
    b.set_source(name);
    *plan->mutable_baseline() = std::move(b);
    return absl::OkStatus();
  }

  absl::Status ParseNodes(const YAML::Node& v, v1::NodeSelector* out) const {
    if (v.IsScalar()) {
      if (v.Scalar() != "all") return Error(v, "nodes must be 'all', a list or a mapping");
      out->set_all(true);
      return absl::OkStatus();
    }
    if (v.IsSequence()) {
      for (const auto& n : v) {
        CMAX_ASSIGN_OR_RETURN(std::string s, Scalar(n, "node name"));
        out->add_names(s);
      }
      if (out->names().empty()) return Error(v, "nodes list is empty");
      return absl::OkStatus();
    }
    CMAX_RETURN_IF_ERROR(CheckKeys(v, {"names", "regex", "all"}, "nodes"));
    if (v["all"]) {
      CMAX_ASSIGN_OR_RETURN(std::string s, Scalar(v["all"], "all"));
      out->set_all(s == "true");
    }
    if (v["names"]) {
      if (!v["names"].IsSequence()) return Error(v["names"], "names must be a list");
      for (const auto& n : v["names"]) {
        CMAX_ASSIGN_OR_RETURN(std::string s, Scalar(n, "node name"));
        out->add_names(s);
      }
    }
    if (v["regex"]) {
      CMAX_ASSIGN_OR_RETURN(std::string s, Scalar(v["regex"], "regex"));
      RE2 re(s, RE2::Quiet);
      if (!re.ok()) return Error(v["regex"], absl::StrCat("bad regex: ", re.error()));
      out->set_name_regex(s);
    }
    return absl::OkStatus();
  }

  absl::Status ParseSuite(const YAML::Node& node, v1::SuiteSpec* out) const {
    CMAX_RETURN_IF_ERROR(CheckKeys(node,
                                   {"suite", "name", "scope", "timeout", "nodes", "params",
                                    "retries", "ranks_per_node", "launcher", "env", "min_nodes"},
                                   "suite entry"));
    if (!node["suite"]) return Error(node, "suite entry needs 'suite'");
    CMAX_ASSIGN_OR_RETURN(std::string suite_name, Scalar(node["suite"], "suite"));
    const SuiteInfo* info = FindSuite(suite_name);
    if (!info) {
      std::vector<std::string> known;
      for (const auto& s : SuiteCatalog()) known.push_back(s.name);
      return Error(node["suite"], absl::StrCat("unknown suite '", suite_name, "' (known: ",
                                               absl::StrJoin(known, ", "), ")"));
    }
    out->set_suite(suite_name);
    out->set_scope(info->scopes.front());
    for (const auto& kv : node) {
      std::string key = kv.first.as<std::string>();
      const YAML::Node& v = kv.second;
      if (key == "name") {
        CMAX_ASSIGN_OR_RETURN(std::string s, Scalar(v, key));
        out->set_name(s);
      } else if (key == "scope") {
        CMAX_ASSIGN_OR_RETURN(std::string s, Scalar(v, key));
        v1::Scope scope = v1::SCOPE_UNSPECIFIED;
        if (s == "node") scope = v1::SCOPE_NODE;
        else if (s == "gang") scope = v1::SCOPE_GANG;
        else if (s == "barrier") scope = v1::SCOPE_BARRIER;
        else if (s == "pairs") scope = v1::SCOPE_PAIRS;
        else return Error(v, absl::StrCat("unknown scope '", s, "' (node, gang, barrier, pairs)"));
        if (std::find(info->scopes.begin(), info->scopes.end(), scope) == info->scopes.end()) {
          std::vector<std::string> allowed;
          for (auto sc : info->scopes) allowed.push_back(ScopeName(sc));
          return Error(v, absl::StrCat("suite '", suite_name, "' cannot run with scope '", s,
                                       "' (allowed: ", absl::StrJoin(allowed, ", "), ")"));
        }
        out->set_scope(scope);
      } else if (key == "timeout") {
        CMAX_ASSIGN_OR_RETURN(std::string s, Scalar(v, key));
        auto secs = ParseDurationSeconds(s);
        if (!secs.ok()) return Error(v, std::string(secs.status().message()));
        out->set_timeout_seconds(*secs);
      } else if (key == "nodes") {
        CMAX_RETURN_IF_ERROR(ParseNodes(v, out->mutable_nodes()));
      } else if (key == "params") {
        if (!v.IsMap()) return Error(v, "params must be a mapping");
        for (const auto& p : v) {
          std::string pkey = p.first.as<std::string>();
          CMAX_ASSIGN_OR_RETURN(std::string pval, Scalar(p.second, pkey));
          (*out->mutable_params())[pkey] = pval;
          std::map<std::string, std::string> one = {{pkey, pval}};
          // Each value alone here (the error at its own line); the rules
          // across values (SuiteInfo::check) once all are read, below.
          auto args = BuildSuiteArgs(*info, one, /*check_across=*/false);
          if (!args.ok()) return Error(p.first, std::string(args.status().message()));
        }
        std::map<std::string, std::string> all(out->params().begin(), out->params().end());
        if (auto args = BuildSuiteArgs(*info, all); !args.ok()) {
          return Error(v, std::string(args.status().message()));
        }
      } else if (key == "retries") {
        CMAX_ASSIGN_OR_RETURN(int64_t n, Int(v, key, 0, 10));
        out->set_retries(static_cast<int>(n));
      } else if (key == "ranks_per_node") {
        CMAX_ASSIGN_OR_RETURN(std::string s, Scalar(v, key));
        int64_t n;
        if (s != "gpus" && (!absl::SimpleAtoi(s, &n) || n < 1 || n > 1024)) {
          return Error(v, "ranks_per_node must be a number in [1, 1024] or 'gpus'");
        }
        out->set_ranks_per_node(s);
      } else if (key == "min_nodes") {
        CMAX_ASSIGN_OR_RETURN(int64_t n, Int(v, key, 1, kMaxMinNodes));
        out->set_min_nodes(static_cast<int>(n));
      } else if (key == "launcher") {
        CMAX_ASSIGN_OR_RETURN(std::string s, Scalar(v, key));
        if (s != "agents" && s != "mpirun") return Error(v, "launcher must be agents or mpirun");
        out->set_launcher(s);
      } else if (key == "env") {
        if (!v.IsMap()) return Error(v, "env must be a mapping");
        for (const auto& e : v) {
          std::string ekey = e.first.as<std::string>();
          CMAX_ASSIGN_OR_RETURN(std::string eval, Scalar(e.second, ekey));
          if (auto s = ValidateSuiteEnv(ekey, eval); !s.ok()) {
            return Error(e.first, std::string(s.message()));
          }
          (*out->mutable_env())[ekey] = eval;
        }
      }
    }
    if ((out->has_nodes() == false) ||
        (!out->nodes().all() && out->nodes().names().empty() && out->nodes().name_regex().empty())) {
      out->mutable_nodes()->set_all(true);
    }
    if (out->scope() == v1::SCOPE_NODE &&
        (!out->ranks_per_node().empty() || !out->launcher().empty())) {
      return Error(node, "ranks_per_node and launcher apply to group scopes (gang, barrier, pairs)");
    }
    if (out->min_nodes() > 0 && !MinNodesApplies(out->scope())) {
      return Error(node["min_nodes"], kMinNodesScopes);
    }
    for (const auto& [pkey, pval] : out->params()) {
      if (IsMpirunOption(pkey) && out->launcher() != "mpirun") {
        return Error(node["params"], absl::StrCat("parameter '", pkey,
                                                  "' applies to launcher: mpirun only"));
      }
    }
    return absl::OkStatus();
  }

  absl::StatusOr<v1::Plan> Parse(const std::string& text) const {
    if (text.size() > kMaxPlanBytes) {
      return absl::InvalidArgumentError(
          absl::StrCat(source_, ": plan of ", text.size(), " bytes exceeds ", kMaxPlanBytes));
    }
    YAML::Node root;
    try {
      root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
      return absl::InvalidArgumentError(absl::StrCat(source_, ":", e.mark.line + 1, ":",
                                                     e.mark.column + 1, ": ", e.msg));
    }
    if (!root || root.IsNull()) return absl::InvalidArgumentError(source_ + ": empty plan");
    try {
      CMAX_RETURN_IF_ERROR(CheckKeys(root,
                                     {"name", "description", "expect", "suites", "baseline",
                                      "baseline_tolerance", "price_per_gpu_hour"},
                                     "the plan"));
      v1::Plan plan;
      plan.set_source(source_);
      if (!root["name"]) return Error(root, "the plan needs a 'name'");
      CMAX_ASSIGN_OR_RETURN(std::string name, Scalar(root["name"], "name"));
      // As ValidatePlan demands (the fuzzer found `name: !tag` giving "").
      if (name.empty()) return Error(root["name"], "the plan's 'name' is empty");
      plan.set_name(name);
      if (root["description"]) {
        CMAX_ASSIGN_OR_RETURN(std::string d, Scalar(root["description"], "description"));
        plan.set_description(d);
      }
      if (root["expect"]) CMAX_RETURN_IF_ERROR(ParseExpect(root["expect"], plan.mutable_expect()));
      if (root["baseline"]) CMAX_RETURN_IF_ERROR(ParseBaseline(root["baseline"], &plan));
      if (root["baseline_tolerance"]) {
        CMAX_ASSIGN_OR_RETURN(double t, Number(root["baseline_tolerance"], "baseline_tolerance"));
        if (!(t > 0 && t < 1)) {
          return Error(root["baseline_tolerance"],
                       "baseline_tolerance must be a fraction in (0, 1), e.g. 0.05 for 5%");
        }
        if (!root["baseline"]) return Error(root["baseline_tolerance"], "baseline_tolerance needs a baseline");
        plan.set_baseline_tolerance(t);
      }
      if (root["price_per_gpu_hour"]) {
        CMAX_ASSIGN_OR_RETURN(double p, Number(root["price_per_gpu_hour"], "price_per_gpu_hour"));
        if (!(p > 0 && p <= 1e6)) {
          return Error(root["price_per_gpu_hour"],
                       "price_per_gpu_hour must be a positive number of USD, e.g. 2.49");
        }
        plan.set_price_per_gpu_hour(p);
      }
      const YAML::Node suites = root["suites"];
      if (!suites) return Error(root, "the plan needs 'suites'");
      if (!suites.IsSequence() || suites.size() == 0) {
        return Error(suites, "suites must be a non-empty list");
      }
      for (const auto& s : suites) CMAX_RETURN_IF_ERROR(ParseSuite(s, plan.add_suites()));
      return plan;
    } catch (const YAML::Exception& e) {
      return absl::InvalidArgumentError(absl::StrCat(source_, ":", e.mark.line + 1, ":",
                                                     e.mark.column + 1, ": ", e.msg));
    }
  }

 private:
  std::string source_;
};

}  // namespace

absl::StatusOr<int> ParseDurationSeconds(const std::string& text) {
  if (text.empty()) return absl::InvalidArgumentError("empty duration");
  int mult = 1;
  std::string digits = text;
  switch (text.back()) {
    case 's': mult = 1; digits.pop_back(); break;
    case 'm': mult = 60; digits.pop_back(); break;
    case 'h': mult = 3600; digits.pop_back(); break;
    default: break;
  }
  int64_t v;
  // v > limit / mult rather than v * mult > limit: v can be near INT64_MAX.
  if (!absl::SimpleAtoi(digits, &v) || v <= 0 || v > 7 * 86400 / mult) {
    return absl::InvalidArgumentError(absl::StrCat(
        "timeout '", text, "' must be a positive duration up to 7 days (90, 90s, 5m, 1h)"));
  }
  return static_cast<int>(v * mult);
}

absl::StatusOr<v1::Plan> ParsePlan(const std::string& yaml_text, const std::string& source) {
  return Parser(source).Parse(yaml_text);
}

absl::StatusOr<v1::Plan> LoadPlanFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open plan file"));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ParsePlan(ss.str(), path);
}

absl::Status ValidatePlan(const v1::Plan& plan) {
  // The same limits the YAML parser applies, for plans that come over the
  // wire (SubmitRun) without passing through it.
  // The embedded baseline has a limit of its own (it is data, not plan).
  const size_t baseline_bytes = plan.has_baseline() ? plan.baseline().ByteSizeLong() : 0;
  if (plan.ByteSizeLong() - baseline_bytes > kMaxPlanBytes) {
    return absl::InvalidArgumentError(absl::StrCat("plan of ", plan.ByteSizeLong() - baseline_bytes,
                                                   " bytes exceeds ", kMaxPlanBytes));
  }
  if (baseline_bytes > kMaxBaselineBytes) {
    return absl::InvalidArgumentError(absl::StrCat("baseline of ", baseline_bytes,
                                                   " bytes exceeds ", kMaxBaselineBytes));
  }
  if (plan.baseline_tolerance() < 0 || plan.baseline_tolerance() >= 1) {
    return absl::InvalidArgumentError("baseline_tolerance must be in [0, 1)");
  }
  if (plan.price_per_gpu_hour() < 0 || plan.price_per_gpu_hour() > 1e6) {
    return absl::InvalidArgumentError("price_per_gpu_hour must be in [0, 1000000]");
  }
  if (plan.name().empty()) return absl::InvalidArgumentError("plan has no name");
  if (plan.suites().empty()) return absl::InvalidArgumentError("plan has no suites");
  if (plan.suites_size() > 1000) return absl::InvalidArgumentError("plan has too many suites");
  for (int i = 0; i < plan.suites_size(); ++i) {
    const auto& s = plan.suites(i);
    std::string where = absl::StrCat("suites[", i, "] (", s.suite(), "): ");
    const SuiteInfo* info = FindSuite(s.suite());
    if (!info) return absl::InvalidArgumentError(absl::StrCat(where, "unknown suite"));
    if (std::find(info->scopes.begin(), info->scopes.end(), s.scope()) == info->scopes.end()) {
      return absl::InvalidArgumentError(absl::StrCat(where, "scope not allowed"));
    }
    std::map<std::string, std::string> params(s.params().begin(), s.params().end());
    auto args = BuildSuiteArgs(*info, params);
    if (!args.ok()) return absl::InvalidArgumentError(absl::StrCat(where, args.status().message()));
    for (const auto& [k, v] : s.env()) {
      if (auto st = ValidateSuiteEnv(k, v); !st.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(where, st.message()));
      }
    }
    if (s.timeout_seconds() < 0 || s.timeout_seconds() > 7 * 86400) {
      return absl::InvalidArgumentError(absl::StrCat(where, "timeout out of range"));
    }
    if (s.retries() < 0 || s.retries() > 10) {
      return absl::InvalidArgumentError(absl::StrCat(where, "retries must be in [0, 10]"));
    }
    if (!s.ranks_per_node().empty() && s.ranks_per_node() != "gpus") {
      int64_t n;
      if (!absl::SimpleAtoi(s.ranks_per_node(), &n) || n < 1 || n > 1024) {
        return absl::InvalidArgumentError(
            absl::StrCat(where, "ranks_per_node must be a number in [1, 1024] or 'gpus'"));
      }
    }
    if (!s.launcher().empty() && s.launcher() != "agents" && s.launcher() != "mpirun") {
      return absl::InvalidArgumentError(absl::StrCat(where, "launcher must be agents or mpirun"));
    }
    if (s.scope() == v1::SCOPE_NODE && (!s.ranks_per_node().empty() || !s.launcher().empty())) {
      return absl::InvalidArgumentError(absl::StrCat(
          where, "ranks_per_node and launcher apply to group scopes (gang, barrier, pairs)"));
    }
    if (s.min_nodes() < 0 || s.min_nodes() > kMaxMinNodes) {
      return absl::InvalidArgumentError(
          absl::StrCat(where, "min_nodes must be in [1, ", kMaxMinNodes, "]"));
    }
    if (s.min_nodes() > 0 && !MinNodesApplies(s.scope())) {
      return absl::InvalidArgumentError(absl::StrCat(where, kMinNodesScopes));
    }
    if (!s.nodes().name_regex().empty()) {
      RE2 re(s.nodes().name_regex(), RE2::Quiet);
      if (!re.ok()) return absl::InvalidArgumentError(absl::StrCat(where, "bad node regex"));
    }
  }
  return absl::OkStatus();
}

}  // namespace cmax
