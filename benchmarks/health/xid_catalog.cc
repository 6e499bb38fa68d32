#include "benchmarks/health/xid_catalog.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "benchmarks/health/embedded_data.h"
#include "common/severity.h"
#include "yaml-cpp/yaml.h"

namespace cmax::health {
namespace {

const std::set<std::string>& Actions() {
  static const auto* a =
      new std::set<std::string>{"reboot", "reset_gpu", "drain_inspect", "check_application"};
  return *a;
}

absl::Status FillInfo(const YAML::Node& node, const std::string& where, XidInfo* info) {
  if (!node || !node.IsMap()) return absl::InvalidArgumentError(where + ": not a map");
  if (node["name"]) info->name = node["name"].as<std::string>();
  if (node["advice"]) info->advice = node["advice"].as<std::string>();
  if (node["source"]) info->source = node["source"].as<std::string>();
  std::string sev = node["severity"] ? node["severity"].as<std::string>() : "";
  info->severity = ParseSeverity(sev);
  if (info->severity == v1::SEVERITY_UNSPECIFIED) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": severity '", sev,
                                                   "' is not info, warn, fail or critical"));
  }
  info->action = node["action"] ? node["action"].as<std::string>() : "";
  if (!Actions().count(info->action)) {
    return absl::InvalidArgumentError(absl::StrCat(
        where, ": action '", info->action,
        "' is not reboot, reset_gpu, drain_inspect or check_application"));
  }
  if (info->advice.empty()) return absl::InvalidArgumentError(where + ": no advice");
  return absl::OkStatus();
}

}  // namespace

std::string ActionWords(const std::string& action) {
  if (action == "reboot") return "reboot";
  if (action == "reset_gpu") return "reset GPU";
  if (action == "drain_inspect") return "drain and inspect hardware";
  if (action == "check_application") return "check the application";
  return action;
}

absl::StatusOr<XidCatalog> XidCatalog::Parse(const std::string& yaml_text) {
  XidCatalog c;
  try {
    YAML::Node root = YAML::Load(yaml_text);
    YAML::Node xids = root["xids"];
    if (!xids || !xids.IsSequence()) {
      return absl::InvalidArgumentError("xid catalog: no 'xids' list");
    }
    for (size_t i = 0; i < xids.size(); ++i) {
      XidInfo info;
      if (!xids[i]["code"]) {
        return absl::InvalidArgumentError(absl::StrCat("xid catalog: entry ", i, " has no code"));
      }
      info.code = xids[i]["code"].as<int>();
      std::string where = absl::StrCat("xid catalog: Xid ", info.code);
      if (auto s = FillInfo(xids[i], where, &info); !s.ok()) return s;
      if (info.name.empty() || info.source.empty()) {
        return absl::InvalidArgumentError(where + ": needs a name and a source");
      }
      if (!c.xids_.emplace(info.code, info).second) {
        return absl::InvalidArgumentError(where + ": listed twice");
      }
    }
    YAML::Node sxid = root["sxid"];
    std::string sxid_source = sxid && sxid["source"] ? sxid["source"].as<std::string>() : "";
    if (auto s = FillInfo(sxid ? sxid["fatal"] : YAML::Node(), "xid catalog: sxid.fatal",
                          &c.sxid_fatal_);
        !s.ok()) {
      return s;
    }
    if (auto s = FillInfo(sxid ? sxid["non_fatal"] : YAML::Node(),
                          "xid catalog: sxid.non_fatal", &c.sxid_non_fatal_);
        !s.ok()) {
      return s;
    }
    c.sxid_fatal_.source = c.sxid_non_fatal_.source = sxid_source;
    c.sxid_fatal_.name = "fatal NVSwitch error";
    c.sxid_non_fatal_.name = "non-fatal NVSwitch error";
    if (auto s = FillInfo(root["unknown"], "xid catalog: unknown", &c.unknown_); !s.ok()) {
      return s;
    }
    c.unknown_.source = "https://docs.nvidia.com/deploy/xid-errors/index.html";
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("xid catalog: ", e.what()));
  }
  return c;
}

absl::StatusOr<XidCatalog> XidCatalog::LoadDefault() { return Parse(kXidCatalogYaml); }

XidInfo XidCatalog::Lookup(int code) const {
  auto it = xids_.find(code);
  if (it != xids_.end()) return it->second;
  XidInfo info = unknown_;
  info.code = code;
  info.name = absl::StrCat("unknown Xid ", code);
  return info;
}

XidInfo XidCatalog::ForSxid(int code, bool fatal) const {
  XidInfo info = fatal ? sxid_fatal_ : sxid_non_fatal_;
  info.code = code;
  return info;
}

}  // namespace cmax::health
