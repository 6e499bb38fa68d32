#include "common/suite_declaration.h"

#include <algorithm>

#include "absl/strings/match.h"

namespace cmax {
namespace {

using v1::SCOPE_BARRIER;
using v1::SCOPE_GANG;
using v1::SCOPE_NODE;
using v1::SCOPE_PAIRS;

std::vector<SuiteInfo> MakeCatalog() {
  std::vector<SuiteInfo> c = RegisteredSuites();
  // Every suite that can run as a gang may be launched by mpirun; these are
  // the only mpirun options a plan can set (ValidateMpirunOption).
  for (SuiteInfo& suite : c) {
    if (std::find(suite.scopes.begin(), suite.scopes.end(), SCOPE_GANG) == suite.scopes.end()) {
      continue;
    }
    suite.params.push_back({.name = std::string(kMpirunBindTo), .type = ParamType::kToken,
                            .help = "launcher mpirun: --bind-to none|core|socket|numa"});
    suite.params.push_back({.name = std::string(kMpirunMapBy), .type = ParamType::kToken,
                            .help = "launcher mpirun: --map-by (ppr:N:UNIT, node, socket, "
                                    "numa, core, slot, hwthread, with :PE=N, :SPAN, ...)"});
    suite.params.push_back({.name = std::string(kMpirunIfInclude), .type = ParamType::kToken,
                            .help = "launcher mpirun: interfaces or CIDRs for Open MPI's TCP "
                                    "traffic (btl_tcp_if_include and oob_tcp_if_include)"});
  }
  return c;
}

}  // namespace

const std::vector<SuiteInfo>& SuiteCatalog() {
  static const std::vector<SuiteInfo>* catalog = new std::vector<SuiteInfo>(MakeCatalog());
  return *catalog;
}

const SuiteInfo* FindSuite(const std::string& name) {
  for (const auto& s : SuiteCatalog()) {
    if (s.name == name) return &s;
  }
  return nullptr;
}

std::string SuiteBinary(const SuiteInfo& suite, const std::vector<std::string>& args) {
  for (const auto& arg : args) {
    if (!absl::StartsWith(arg, "--backend=")) continue;
    for (const BackendSpec& b : suite.backends) {
      if (b.name == arg.substr(10)) return b.binary;
    }
  }
  return suite.backends.empty() ? suite.binary : suite.backends.front().binary;
}

std::vector<std::string> SuiteBinaries(const SuiteInfo& suite) {
  std::vector<std::string> out;
  for (const BackendSpec& b : suite.backends) {
    if (std::find(out.begin(), out.end(), b.binary) == out.end()) out.push_back(b.binary);
  }
  if (out.empty()) out.push_back(suite.binary);
  return out;
}

std::vector<std::string> BackendsServedBy(const SuiteInfo& suite, const std::string& binary) {
  std::vector<std::string> out;
  for (const BackendSpec& b : suite.backends) {
    if (b.binary == binary) out.push_back(b.name);
  }
  return out;
}

std::string SuiteSummary(const SuiteInfo& suite, const std::string& binary) {
  for (const BackendSpec& b : suite.backends) {
    if (b.binary == binary && !b.summary.empty()) return b.summary;
  }
  return suite.help;
}

const SuiteInfo* InventorySuite() {
  for (const auto& s : SuiteCatalog()) {
    if (s.inventory) return &s;
  }
  return nullptr;
}

bool SuiteIsGraded(const std::string& suite) {
  const SuiteInfo* s = FindSuite(suite);
  return s == nullptr || s->graded;
}

const MetricSpec* FindSuiteMetric(const SuiteInfo& suite, const std::string& metric) {
  for (const MetricSpec& m : suite.metrics) {
    if (m.name == metric) return &m;
  }
  return nullptr;
}

std::vector<const ParamSpec*> ParamsTakenBy(const SuiteInfo& suite, const std::string& binary) {
  const std::vector<std::string> served = BackendsServedBy(suite, binary);
  std::vector<const ParamSpec*> out;
  for (const ParamSpec& spec : suite.params) {
    if (IsMpirunOption(spec.name)) continue;
    bool applies = spec.backends.empty() || served.empty();
    for (const std::string& b : served) {
      applies = applies ||
                std::find(spec.backends.begin(), spec.backends.end(), b) != spec.backends.end();
    }
    if (applies) out.push_back(&spec);
  }
  return out;
}

bool IsMpirunOption(const std::string& name) { return absl::StartsWith(name, "mpirun-"); }

std::string ScopeName(v1::Scope scope) {
  switch (scope) {
    case SCOPE_NODE: return "node";
    case SCOPE_GANG: return "gang";
    case SCOPE_BARRIER: return "barrier";
    case SCOPE_PAIRS: return "pairs";
    default: return "unspecified";
  }
}

}  // namespace cmax
