#include "benchmarks/audit/advisories.h"

#include <limits.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/time/civil_time.h"
#include "yaml-cpp/yaml.h"

#ifndef CMAX_AUDIT_SOURCE_DATA
#define CMAX_AUDIT_SOURCE_DATA ""
#endif

namespace cmax::audit {
namespace {

class Parser {
 public:
  explicit Parser(std::string source) : source_(std::move(source)) {}

  absl::Status Error(const YAML::Node& node, const std::string& where, const std::string& msg) {
    const YAML::Mark mark = node.Mark();
    std::string pos = mark.is_null() ? source_
                                     : absl::StrCat(source_, ":", mark.line + 1, ":",
                                                    mark.column + 1);
    return absl::InvalidArgumentError(
        absl::StrCat(pos, ": ", where.empty() ? "" : where + ": ", msg));
  }

  absl::StatusOr<std::string> Scalar(const YAML::Node& parent, const char* key,
                                     const std::string& where, bool required) {
    YAML::Node n = parent[key];
    if (!n) {
      if (required) return Error(parent, where, absl::StrCat("missing '", key, "'"));
      return std::string();
    }
    if (!n.IsScalar()) return Error(n, where, absl::StrCat("'", key, "' must be a scalar"));
    return n.Scalar();
  }

  absl::StatusOr<std::vector<std::string>> List(const YAML::Node& parent, const char* key,
                                                const std::string& where) {
    std::vector<std::string> out;
    YAML::Node n = parent[key];
    if (!n) return out;
    if (n.IsScalar()) {
      out.push_back(n.Scalar());
      return out;
    }
    if (!n.IsSequence()) return Error(n, where, absl::StrCat("'", key, "' must be a list"));
    for (const auto& item : n) {
      if (!item.IsScalar()) return Error(item, where, absl::StrCat("'", key, "' items must be scalars"));
      out.push_back(item.Scalar());
    }
    return out;
  }

  // An optional "YYYY-MM-DD" scalar; empty when absent.
  absl::StatusOr<std::string> Date(const YAML::Node& parent, const char* key,
                                   const std::string& where) {
    auto text = Scalar(parent, key, where, false);
    if (!text.ok() || text->empty()) return text;
    absl::CivilDay day;
    if (!absl::ParseCivilTime(*text, &day)) {
      return Error(parent[key], where, absl::StrCat("'", key, "' ", *text, " is not YYYY-MM-DD"));
    }
    return *text;
  }

  absl::Status ParseComponents(const YAML::Node& node, AdvisoryDb* db) {
    if (!node || !node.IsMap()) return Error(node, "components", "must be a map of component ids");
    for (const auto& kv : node) {
      ComponentInfo c;
      c.id = kv.first.as<std::string>();
      std::string where = absl::StrCat("component '", c.id, "'");
      const YAML::Node& v = kv.second;
      if (!v.IsMap()) return Error(v, where, "must be a map");
      auto name = Scalar(v, "name", where, true);
      if (!name.ok()) return name.status();
      c.name = *name;
      auto scheme = Scalar(v, "scheme", where, true);
      if (!scheme.ok()) return scheme.status();
      auto parsed = ParseScheme(*scheme);
      if (!parsed.ok()) return Error(v["scheme"], where, std::string(parsed.status().message()));
      c.scheme = *parsed;
      auto dist = Scalar(v, "distribution_packages", where, false);
      if (!dist.ok()) return dist.status();
      if (!dist->empty() && *dist != "true" && *dist != "false") {
        return Error(v["distribution_packages"], where, "distribution_packages must be true or false");
      }
      c.distribution_packages = *dist == "true";
      auto up = Scalar(v, "upgrade", where, false);
      if (!up.ok()) return up.status();
      c.upgrade_url = *up;
      db->components[c.id] = c;
    }
    return absl::OkStatus();
  }

  absl::Status CheckVersion(const YAML::Node& at, const std::string& where, VersionScheme scheme,
                            const std::string& version) {
    auto c = CompareVersions(scheme, version, version);
    if (!c.ok()) return Error(at, where, std::string(c.status().message()));
    return absl::OkStatus();
  }

  absl::Status ParseAdvisory(const YAML::Node& v, size_t index, AdvisoryDb* db) {
    std::string where = absl::StrCat("advisory #", index + 1);
    if (!v.IsMap()) return Error(v, where, "must be a map");
    Advisory a;
    a.line = v.Mark().is_null() ? 0 : v.Mark().line + 1;
    auto id = Scalar(v, "id", where, true);
    if (!id.ok()) return id.status();
    a.id = *id;
    where = absl::StrCat("advisory #", index + 1, " (", a.id, ")");
    auto comp = Scalar(v, "component", where, true);
    if (!comp.ok()) return comp.status();
    a.component = *comp;
    auto it = db->components.find(a.component);
    if (it == db->components.end()) {
      return Error(v["component"], where,
                   absl::StrCat("unknown component '", a.component, "' (declare it under components)"));
    }
    const VersionScheme scheme = it->second.scheme;
    auto cves = List(v, "cves", where);
    if (!cves.ok()) return cves.status();
    a.cves = *cves;
    auto sev = Scalar(v, "severity", where, true);
    if (!sev.ok()) return sev.status();
    static const std::set<std::string> kSeverities = {"low", "medium", "high", "critical"};
    if (!kSeverities.count(*sev)) {
      return Error(v["severity"], where,
                   absl::StrCat("severity '", *sev, "' is not low, medium, high or critical"));
    }
    a.severity = *sev;
    auto intro = Scalar(v, "introduced", where, false);
    if (!intro.ok()) return intro.status();
    a.introduced = *intro;
    if (!a.introduced.empty()) {
      if (auto s = CheckVersion(v["introduced"], where, scheme, a.introduced); !s.ok()) return s;
    }
    auto fixed = List(v, "fixed", where);
    if (!fixed.ok()) return fixed.status();
    a.fixed = *fixed;
    for (size_t k = 0; k < a.fixed.size(); ++k) {
      if (auto s = CheckVersion(v["fixed"].IsSequence() ? v["fixed"][k] : v["fixed"], where,
                                scheme, a.fixed[k]);
          !s.ok()) {
        return s;
      }
    }
    if (YAML::Node d = v["distributions"]) {
      if (!d.IsMap()) return Error(d, where, "'distributions' must map distro/release to a version");
      for (const auto& kv : d) {
        std::string key = kv.first.as<std::string>();
        if (key.find('/') == std::string::npos) {
          return Error(kv.first, where,
                       absl::StrCat("distribution '", key, "' must read like debian/bookworm, ubuntu/jammy or rhel/9"));
        }
        if (!kv.second.IsScalar()) return Error(kv.second, where, "a distribution's fixed version must be a scalar");
        a.distributions[key] = kv.second.Scalar();
      }
    }
    if (a.fixed.empty() && a.distributions.empty()) {
      return Error(v, where, "needs 'fixed' versions or 'distributions'");
    }
    auto url = Scalar(v, "url", where, true);
    if (!url.ok()) return url.status();
    a.url = *url;
    auto up = Scalar(v, "upgrade", where, false);
    if (!up.ok()) return up.status();
    a.upgrade_url = up->empty() ? it->second.upgrade_url : *up;
    auto links = List(v, "links", where);
    if (!links.ok()) return links.status();
    a.links = *links;
    auto desc = Scalar(v, "description", where, false);
    if (!desc.ok()) return desc.status();
    a.description = *desc;
    auto rem = Scalar(v, "remediation", where, false);
    if (!rem.ok()) return rem.status();
    a.remediation = *rem;
    auto published = Date(v, "published", where);
    if (!published.ok()) return published.status();
    a.published = *published;
    auto affected = List(v, "affected", where);
    if (!affected.ok()) return affected.status();
    a.affected = *affected;
    db->advisories.push_back(std::move(a));
    return absl::OkStatus();
  }

  absl::Status ParseBranches(const YAML::Node& node, AdvisoryDb* db) {
    if (!node) return absl::OkStatus();
    if (!node.IsMap()) return Error(node, "driver_branches", "must be a map");
    auto as_of = Scalar(node, "as_of", "driver_branches", true);
    if (!as_of.ok()) return as_of.status();
    db->driver_table_as_of = *as_of;
    auto src = Scalar(node, "source", "driver_branches", true);
    if (!src.ok()) return src.status();
    db->driver_table_source = *src;
    YAML::Node list = node["branches"];
    if (!list || !list.IsSequence()) return Error(node, "driver_branches", "'branches' must be a list");
    for (size_t k = 0; k < list.size(); ++k) {
      const YAML::Node& b = list[k];
      std::string where = absl::StrCat("driver branch #", k + 1);
      if (!b.IsMap()) return Error(b, where, "must be a map");
      DriverBranchInfo info;
      auto br = Scalar(b, "branch", where, true);
      if (!br.ok()) return br.status();
      try {
        info.branch = b["branch"].as<int>();
      } catch (const YAML::Exception&) {
        return Error(b["branch"], where, absl::StrCat("branch '", *br, "' is not a number"));
      }
      where = absl::StrCat("driver branch R", info.branch);
      auto st = Scalar(b, "status", where, true);
      if (!st.ok()) return st.status();
      if (*st != "supported" && *st != "eol") {
        return Error(b["status"], where, "status must be supported or eol");
      }
      info.status = *st;
      auto des = Scalar(b, "designation", where, false);
      if (!des.ok()) return des.status();
      info.designation = *des;
      auto eol = Scalar(b, "eol", where, false);
      if (!eol.ok()) return eol.status();
      info.eol = *eol;
      if (!info.eol.empty() && (info.eol.size() != 7 || info.eol[4] != '-')) {
        return Error(b["eol"], where, absl::StrCat("eol '", info.eol, "' is not YYYY-MM"));
      }
      auto bsrc = Scalar(b, "source", where, false);
      if (!bsrc.ok()) return bsrc.status();
      info.source = bsrc->empty() ? db->driver_table_source : *bsrc;
      db->driver_branches.push_back(info);
    }
    return absl::OkStatus();
  }

 private:
  std::string source_;
};

}  // namespace

absl::StatusOr<AdvisoryDb> ParseAdvisories(const std::string& text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ":", e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg));
  }
  Parser p(source);
  if (!root.IsMap()) return p.Error(root, "", "the advisory file must be a map");
  AdvisoryDb db;
  db.path = source;
  try {
    if (auto s = p.ParseComponents(root["components"], &db); !s.ok()) return s;
    if (auto s = p.ParseBranches(root["driver_branches"], &db); !s.ok()) return s;
    auto generated = p.Date(root, "generated", "");
    if (!generated.ok()) return generated.status();
    db.generated = *generated;
    auto sources = p.List(root, "sources", "");
    if (!sources.ok()) return sources.status();
    db.sources = *sources;
    YAML::Node list = root["advisories"];
    if (!list || !list.IsSequence()) return p.Error(root, "", "'advisories' must be a list");
    std::set<std::string> ids;
    for (size_t k = 0; k < list.size(); ++k) {
      if (auto s = p.ParseAdvisory(list[k], k, &db); !s.ok()) return s;
      if (!ids.insert(db.advisories.back().id).second) {
        return p.Error(list[k], absl::StrCat("advisory #", k + 1),
                       absl::StrCat("duplicate id '", db.advisories.back().id, "'"));
      }
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, ":", e.mark.line + 1, ":", e.mark.column + 1, ": ", e.msg));
  }
  return db;
}

absl::StatusOr<AdvisoryDb> LoadAdvisories(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read advisory file ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  return ParseAdvisories(ss.str(), path);
}

std::string DefaultAdvisoriesPath() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n > 0) {
    std::string exe(buf, static_cast<size_t>(n));
    std::string dir = exe.substr(0, exe.rfind('/'));
    std::string installed = dir + "/../share/cmax/advisories.yaml";
    if (access(installed.c_str(), R_OK) == 0) return installed;
  }
  std::string src = CMAX_AUDIT_SOURCE_DATA;
  if (!src.empty() && access(src.c_str(), R_OK) == 0) return src;
  return "";
}

const DriverBranchInfo* FindDriverBranch(const AdvisoryDb& db, int branch) {
  for (const auto& b : db.driver_branches) {
    if (b.branch == branch) return &b;
  }
  return nullptr;
}

}  // namespace cmax::audit
