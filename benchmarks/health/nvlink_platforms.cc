#include "benchmarks/health/nvlink_platforms.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "benchmarks/health/embedded_data.h"
#include "yaml-cpp/yaml.h"

namespace cmax::health {
namespace {

std::vector<std::string> Strings(const YAML::Node& n) {
  std::vector<std::string> out;
  if (!n) return out;
  if (n.IsScalar()) return {n.as<std::string>()};
  for (const auto& s : n) out.push_back(s.as<std::string>());
  return out;
}

// Abseil 20220623 (Debian) has no StrContainsIgnoreCase.
bool ContainsIgnoreCase(const std::string& text, const std::string& part) {
  return absl::StrContains(absl::AsciiStrToLower(text), absl::AsciiStrToLower(part));
}

}  // namespace

absl::StatusOr<NvLinkPlatforms> NvLinkPlatforms::Parse(const std::string& yaml_text) {
  NvLinkPlatforms t;
  try {
    YAML::Node root = YAML::Load(yaml_text);
    YAML::Node list = root["platforms"];
    if (!list || !list.IsSequence()) {
      return absl::InvalidArgumentError("nvlink platforms: no 'platforms' list");
    }
    for (size_t i = 0; i < list.size(); ++i) {
      const YAML::Node& e = list[i];
      NvLinkPlatform p;
      p.name = e["name"] ? e["name"].as<std::string>() : "";
      p.match = Strings(e["match"]);
      p.exclude = Strings(e["exclude"]);
      p.links = e["links"] ? e["links"].as<int>() : 0;
      p.link_gbps = e["link_gbps"] ? e["link_gbps"].as<double>() : 0;
      p.domain_gpus = e["domain_gpus"] ? e["domain_gpus"].as<int>() : 0;
      if (p.name.empty() || p.match.empty() || p.links <= 0 || p.link_gbps < 0 ||
          p.domain_gpus < 0) {
        return absl::InvalidArgumentError(
            absl::StrCat("nvlink platforms[", i,
                         "]: needs name, match and links > 0 (link_gbps, "
                         "domain_gpus >= 0)"));
      }
      t.entries_.push_back(std::move(p));
    }
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat("nvlink platforms: ", e.what()));
  }
  return t;
}

const NvLinkPlatforms& NvLinkPlatforms::Default() {
  static const NvLinkPlatforms* table = [] {
    auto parsed = Parse(kNvLinkPlatformsYaml);
    if (!parsed.ok()) {
      std::fprintf(stderr, "data/nvlink_platforms.yaml: %s\n",
                   std::string(parsed.status().message()).c_str());
      std::abort();  // compiled-in data: a build defect, caught by the tests
    }
    return new NvLinkPlatforms(*std::move(parsed));
  }();
  return *table;
}

const NvLinkPlatform* NvLinkPlatforms::Find(const std::string& gpu_name) const {
  for (const NvLinkPlatform& p : entries_) {
    bool all = true;
    for (const auto& m : p.match) all = all && ContainsIgnoreCase(gpu_name, m);
    for (const auto& x : p.exclude) all = all && !ContainsIgnoreCase(gpu_name, x);
    if (all) return &p;
  }
  return nullptr;
}

}  // namespace cmax::health
