#include "benchmarks/audit/refresh.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/time/civil_time.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "re2/re2.h"
#include "yaml-cpp/yaml.h"

namespace cmax::audit {
namespace {

using google::protobuf::ListValue;
using google::protobuf::Struct;
using google::protobuf::Value;

// ---- JSON access (google.protobuf.Struct) ----------------------------------

const Value* Field(const Struct& s, const char* key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? nullptr : &it->second;
}

std::string Str(const Struct& s, const char* key) {
  const Value* v = Field(s, key);
  return v != nullptr && v->kind_case() == Value::kStringValue ? v->string_value() : "";
}

const Struct* Obj(const Struct& s, const char* key) {
  const Value* v = Field(s, key);
  return v != nullptr && v->kind_case() == Value::kStructValue ? &v->struct_value() : nullptr;
}

const ListValue* Arr(const Struct& s, const char* key) {
  const Value* v = Field(s, key);
  return v != nullptr && v->kind_case() == Value::kListValue ? &v->list_value() : nullptr;
}

// The string items of a list (others ignored).
std::vector<std::string> Strings(const ListValue* list) {
  std::vector<std::string> out;
  if (list == nullptr) return out;
  for (const auto& v : list->values()) {
    if (v.kind_case() == Value::kStringValue) out.push_back(v.string_value());
  }
  return out;
}

absl::Status Malformed(const std::string& source, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(source, ": ", what));
}

// ---- shared mapping ----------------------------------------------------------

int SeverityRank(const std::string& s) {
  static const std::map<std::string, int> kRank = {
      {"low", 1}, {"medium", 2}, {"high", 3}, {"critical", 4}};
  auto it = kRank.find(s);
  return it == kRank.end() ? 0 : it->second;
}

// "HIGH" -> "high", "MODERATE" (GitHub's word) -> "medium"; "" when unknown.
std::string NormalizeSeverity(const std::string& text) {
  std::string s = absl::AsciiStrToLower(text);
  if (s == "moderate") s = "medium";
  return SeverityRank(s) > 0 ? s : "";
}

// "2025-07-15T00:00:00Z" -> "2025-07-15"; "" for a missing date and for the
// Go vulnerability database's "0001-01-01" placeholder (no date known).
std::string DateOf(const std::string& timestamp) {
  if (timestamp.size() < 10 || absl::StartsWith(timestamp, "0001-")) return "";
  absl::CivilDay day;
  std::string date = timestamp.substr(0, 10);
  return absl::ParseCivilTime(date, &day) ? date : "";
}

// The scheme of the components refresh maps to (as the shipped table
// declares them).
VersionScheme SchemeFor(const std::string& component) {
  if (component == "driver") return VersionScheme::kDriver;
  if (component == "nic_firmware") return VersionScheme::kFirmware;
  if (component == "ofed") return VersionScheme::kRpm;
  return VersionScheme::kSemver;
}

// A version as the table writes it for `component`. NVIDIA's firmware
// bulletins name a train's fix without the family ("46.3008", "xx.41.1000"):
// that fix holds for every family on the train, written "xx.46.3008";
// "12.28.2302" names one family and stays as it is.
std::string TableVersion(const std::string& component, const std::string& version) {
  if (component != "nic_firmware" || std::count(version.begin(), version.end(), '.') != 1) {
    return version;
  }
  return absl::StrCat("xx.", version);
}

// The branch of a version for per-branch fixes: "570" for drivers, "1.17"
// otherwise.
std::string BranchOf(const std::string& component, const std::string& version) {
  if (component == "driver") {
    auto b = DriverBranch(version);
    return b.ok() ? absl::StrCat(*b) : "";
  }
  if (component == "nic_firmware") {  // the train: "xx.46.3008" -> "46"
    auto t = FirmwareTrain(version);
    return t.ok() ? t->substr(t->find('.') + 1) : "";
  }
  return MajorMinor(version);
}

// What one document says about one component, before it becomes an Advisory.
struct Draft {
  std::set<std::string> cves;
  std::map<std::string, std::string> fixed;  // branch -> fixed version (highest)
  std::vector<std::pair<std::string, std::string>> affected;  // (bound text, branch)
  std::string severity;
  std::vector<std::string> links;
  std::vector<std::string> remediation;
  std::string introduced;
};

void AddLink(std::vector<std::string>* links, const std::string& url) {
  if (url.empty() || std::find(links->begin(), links->end(), url) != links->end()) return;
  links->push_back(url);
}

void RaiseSeverity(Draft* d, const std::string& severity) {
  if (SeverityRank(severity) > SeverityRank(d->severity)) d->severity = severity;
}

absl::Status AddFixed(const std::string& component, const std::string& version, Draft* d) {
  auto ok = CompareVersions(SchemeFor(component), version, version);
  if (!ok.ok()) return ok.status();
  std::string& slot = d->fixed[BranchOf(component, version)];
  if (slot.empty() || *CompareVersions(SchemeFor(component), slot, version) < 0) slot = version;
  return absl::OkStatus();
}

// The advisory's `fixed` and `affected` lists from a draft: a range on a
// branch without a fix says so.
void FillRanges(const Draft& d, Advisory* a) {
  for (const auto& [branch, version] : d.fixed) a->fixed.push_back(version);
  for (const auto& [bound, branch] : d.affected) {
    const bool unfixed = !branch.empty() && d.fixed.count(branch) == 0;
    std::string text = unfixed && !absl::StrContains(bound, "(no fix)")
                           ? absl::StrCat(bound, " (no fix)")
                           : bound;
    if (std::find(a->affected.begin(), a->affected.end(), text) == a->affected.end()) {
      a->affected.push_back(text);
    }
  }
}

// ---- CSAF 2.0 (NVIDIA) -------------------------------------------------------

// A product of the product tree, with what its branches say about it.
struct CsafProduct {
  std::string component;  // table id, or "" when the audit does not judge it
  std::string name;       // product.name: "1.17.8", "All versions prior to 3.1.7"
};

// NVIDIA's product names to table components. Only Linux rows count, and of
// the GPU driver only the data center ("Tesla") rows of a Linux(Rnnn) branch;
// vGPU and gaming rows are other products.
std::string NvidiaComponent(const std::string& product, const std::string& arch) {
  // Adapter firmware rows: "ConnectX GA", "ConnectX LTS24", "BlueField GA",
  // "ConnectX-4 LX" (their architecture names the adapters, not an OS).
  static const RE2 kFirmwareRow(R"((ConnectX|BlueField)(\s+(GA|LTS\d+)|-?4(\s+LX)?))");
  if (RE2::FullMatch(product, kFirmwareRow)) return "nic_firmware";
  const bool linux_arch = arch.empty() || absl::StartsWith(arch, "All") ||
                          absl::StrContains(arch, "Linux");
  if (!linux_arch || absl::StrContains(arch, "vGPU") || absl::StrContains(arch, "Gaming")) {
    return "";
  }
  if (absl::StrContains(product, "Container Toolkit")) return "container_toolkit";
  if (product == "Mellanox OFED" || product == "MLNX_OFED") return "ofed";
  if (product == "DCGM Exporter") return "dcgm_exporter";
  if (product == "DCGM" || product == "NVIDIA DCGM" ||
      absl::StrContains(product, "Data Center GPU Manager")) {
    return "dcgm";
  }
  if (absl::StrContains(product, "CUDA Toolkit")) return "cuda_toolkit";
  if (absl::StrContains(product, "Fabric Manager")) return "fabric_manager";
  if (product == "NCCL" || product == "NVIDIA NCCL") return "nccl";
  if (product == "Tesla" && absl::StartsWith(arch, "Linux(R")) return "driver";
  return "";
}

void WalkCsafBranches(const ListValue& branches, const std::string& arch,
                      const std::string& product_name, std::map<std::string, CsafProduct>* out) {
  for (const auto& v : branches.values()) {
    if (v.kind_case() != Value::kStructValue) continue;
    const Struct& b = v.struct_value();
    const std::string category = Str(b, "category");
    const std::string name = Str(b, "name");
    std::string here_arch = category == "architecture" ? name : arch;
    std::string here_product =
        category == "product_name" || category == "product_version" ? name : product_name;
    if (const Struct* p = Obj(b, "product"); p != nullptr && category == "product_version") {
      CsafProduct prod;
      prod.component = NvidiaComponent(here_product, here_arch);
      prod.name = Str(*p, "name");
      (*out)[Str(*p, "product_id")] = prod;
    }
    if (const ListValue* sub = Arr(b, "branches")) {
      WalkCsafBranches(*sub, here_arch, here_product, out);
    }
  }
}

// The version a product name carries ("All driver versions prior to
// 570.133.07" -> "570.133.07", "v1.16.2" -> "1.16.2"; for MLNX_OFED
// "5.8-7.0.6.1"); "" when none.
std::string VersionIn(const std::string& name, const std::string& component) {
  static const RE2 kVersion(R"((\d+(?:\.\d+)+))");
  // MLNX_OFED: "24.10-3.2.5.0" (release and build, both dotted).
  static const RE2 kOfed(R"((\d+\.\d+-\d+(?:\.\d+)+))");
  std::string v;
  RE2::PartialMatch(name, component == "ofed" ? kOfed : kVersion, &v);
  return v;
}

// "<= 1.17.7" for "... up to and including 1.17.7", "< 570.133.07" for
// "... prior to 570.133.07", "<= 4.5.2" for "0.0 to 4.5.2"; "" when the name
// gives no bound.
std::string AffectedBound(const std::string& name, const std::string& component) {
  const std::string v = VersionIn(name, component);
  if (v.empty()) return "";
  const std::string lower = absl::AsciiStrToLower(name);
  if (absl::StrContains(lower, "and including")) return absl::StrCat("<= ", v);
  // "0.0  to 4.8.2": from one version to another, both included.
  static const RE2 kSpan(R"(^\s*\d+(?:\.\d+)+\s+to\s+(\d+(?:\.\d+)+)\s*$)");
  if (std::string last; RE2::FullMatch(name, kSpan, &last)) return absl::StrCat("<= ", last);
  if (absl::StrContains(lower, "prior to") || absl::StrContains(lower, "up to")) {
    return absl::StrCat("< ", v);
  }
  return absl::StrCat("= ", v);
}

absl::Status AddCsafVulnerability(const Struct& vuln, const std::map<std::string, CsafProduct>& products,
                                  std::map<std::string, Draft>* drafts) {
  const Struct* status = Obj(vuln, "product_status");
  if (status == nullptr) return absl::InvalidArgumentError("a vulnerability has no product_status");
  std::set<std::string> touched;
  for (const char* key : {"known_affected", "fixed"}) {
    for (const auto& id : Strings(Arr(*status, key))) {
      auto it = products.find(id);
      if (it == products.end() || it->second.component.empty()) continue;
      const std::string& comp = it->second.component;
      Draft& d = (*drafts)[comp];
      touched.insert(comp);
      const bool fixed = std::string(key) == "fixed";
      std::string bound = fixed ? "" : AffectedBound(it->second.name, comp);
      // The bound's own version ("0.0 to 4.5.2" is bounded by 4.5.2).
      const std::string named =
          fixed ? VersionIn(it->second.name, comp) : bound.substr(bound.find(' ') + 1);
      if (named.empty() || (!fixed && bound.empty())) continue;
      const std::string version = TableVersion(comp, named);
      if (fixed) {
        if (auto s = AddFixed(comp, version, &d); !s.ok()) return s;
      } else {
        if (version != named) absl::StrReplaceAll({{named, version}}, &bound);
        d.affected.emplace_back(bound, BranchOf(comp, version));
      }
    }
  }
  std::string severity;
  if (const ListValue* scores = Arr(vuln, "scores")) {
    for (const auto& s : scores->values()) {
      if (s.kind_case() != Value::kStructValue) continue;
      if (const Struct* cvss = Obj(s.struct_value(), "cvss_v3")) {
        std::string sev = NormalizeSeverity(Str(*cvss, "baseSeverity"));
        if (SeverityRank(sev) > SeverityRank(severity)) severity = sev;
      }
    }
  }
  for (const auto& comp : touched) {
    Draft& d = (*drafts)[comp];
    if (!Str(vuln, "cve").empty()) d.cves.insert(Str(vuln, "cve"));
    RaiseSeverity(&d, severity);
    if (const ListValue* refs = Arr(vuln, "references")) {
      for (const auto& r : refs->values()) {
        if (r.kind_case() == Value::kStructValue) AddLink(&d.links, Str(r.struct_value(), "url"));
      }
    }
    if (const ListValue* rems = Arr(vuln, "remediations")) {
      for (const auto& r : rems->values()) {
        if (r.kind_case() != Value::kStructValue) continue;
        AddLink(&d.links, Str(r.struct_value(), "url"));
        const std::string details = Str(r.struct_value(), "details");
        if (!details.empty() &&
            std::find(d.remediation.begin(), d.remediation.end(), details) == d.remediation.end()) {
          d.remediation.push_back(details);
        }
      }
    }
  }
  return absl::OkStatus();
}

std::string UpgradeText(const Advisory& a) {
  return absl::StrCat("Upgrade to ", absl::StrJoin(a.fixed, ", "),
                      a.fixed.size() > 1 ? " (the fixed release of your branch)" : "",
                      " or newer.");
}

absl::StatusOr<ParsedDocument> ParseCsaf(const Struct& root, const std::string& source) {
  const Struct* doc = Obj(root, "document");
  const Struct* tracking = doc != nullptr ? Obj(*doc, "tracking") : nullptr;
  if (tracking == nullptr || Str(*tracking, "id").empty()) {
    return Malformed(source, "CSAF document without document.tracking.id");
  }
  const ListValue* vulns = Arr(root, "vulnerabilities");
  const Struct* tree = Obj(root, "product_tree");
  if (vulns == nullptr || tree == nullptr) {
    return Malformed(source, "CSAF document without product_tree or vulnerabilities");
  }
  ParsedDocument out;
  out.format = "csaf";
  out.id = Str(*tracking, "id");
  // NVIDIA's bulletins are published at this address, by bulletin number.
  out.url = absl::StrCat("https://nvidia.custhelp.com/app/answers/detail/a_id/", out.id);
  std::map<std::string, CsafProduct> products;
  if (const ListValue* b = Arr(*tree, "branches")) WalkCsafBranches(*b, "", "", &products);
  std::map<std::string, Draft> drafts;
  for (const auto& v : vulns->values()) {
    if (v.kind_case() != Value::kStructValue) return Malformed(source, "a vulnerability is not an object");
    if (auto s = AddCsafVulnerability(v.struct_value(), products, &drafts); !s.ok()) {
      return Malformed(source, std::string(s.message()));
    }
  }
  std::string aggregate;
  if (const Struct* agg = Obj(*doc, "aggregate_severity")) aggregate = NormalizeSeverity(Str(*agg, "text"));
  // The table has no way to say "no fix anywhere" yet: such drafts are left out.
  const size_t fixed_drafts = std::count_if(drafts.begin(), drafts.end(),
                                            [](const auto& kv) { return !kv.second.fixed.empty(); });
  for (auto& [component, d] : drafts) {
    if (d.fixed.empty()) continue;
    Advisory a;
    a.id = fixed_drafts == 1 ? absl::StrCat("NVIDIA-", out.id)
                             : absl::StrCat("NVIDIA-", out.id, "-", component);
    a.component = component;
    a.cves.assign(d.cves.begin(), d.cves.end());
    a.severity = !aggregate.empty() ? aggregate : d.severity;
    if (a.severity.empty()) return Malformed(source, "no aggregate_severity and no CVSS baseSeverity");
    FillRanges(d, &a);
    a.url = out.url;
    a.links = d.links;
    a.description = Str(*doc, "title");
    a.remediation = d.remediation.empty() ? UpgradeText(a) : absl::StrJoin(d.remediation, " ");
    a.published = DateOf(Str(*tracking, "initial_release_date"));
    out.advisories.push_back(std::move(a));
  }
  return out;
}

// ---- OSV ----------------------------------------------------------------------

// Go module paths (the OSV "Go" ecosystem) to table components.
std::string OsvComponent(const Struct& package) {
  static const std::map<std::string, std::string> kModules = {
      {"github.com/opencontainers/runc", "runc"},
      {"github.com/containerd/containerd", "containerd"},
      {"github.com/containerd/containerd/v2", "containerd"},
      {"github.com/docker/docker", "docker"},
      {"github.com/moby/moby", "docker"},
      {"github.com/NVIDIA/nvidia-container-toolkit", "container_toolkit"},
      // The Kubernetes release; on a node, the kubelet's.
      {"k8s.io/kubernetes", "kubelet"}};
  auto it = kModules.find(Str(package, "name"));
  return it == kModules.end() ? "" : it->second;
}

// "25.0.6+incompatible" (a Go pseudo-suffix) -> "25.0.6".
std::string OsvVersion(const std::string& v) {
  const size_t plus = v.find("+incompatible");
  return plus == std::string::npos ? v : v.substr(0, plus);
}

// One range's events, in order: introduced opens an interval, fixed or
// last_affected closes it; an interval left open has no fix.
absl::Status AddOsvRange(const std::string& comp, const Struct& range, Draft* d,
                         std::vector<std::string>* introduced) {
  const ListValue* events = Arr(range, "events");
  if (events == nullptr) return absl::InvalidArgumentError("a range has no events");
  std::string open;
  bool is_open = false;
  for (const auto& e : events->values()) {
    if (e.kind_case() != Value::kStructValue) return absl::InvalidArgumentError("an event is not an object");
    const Struct& ev = e.struct_value();
    if (Field(ev, "introduced") != nullptr) {
      open = OsvVersion(Str(ev, "introduced"));
      is_open = true;
      introduced->push_back(open);
      continue;
    }
    const std::string fixed = OsvVersion(Str(ev, "fixed"));
    const std::string last = OsvVersion(Str(ev, "last_affected"));
    if (!fixed.empty()) {
      if (auto s = AddFixed(comp, fixed, d); !s.ok()) return s;
    }
    const std::string bound = !fixed.empty() ? "< " + fixed : "<= " + last;
    const std::string from = open.empty() || open == "0" ? "" : ">= " + open + ", ";
    d->affected.emplace_back(from + bound, fixed.empty() ? BranchOf(comp, last) : "");
    is_open = false;
  }
  if (is_open) {
    d->affected.emplace_back(absl::StrCat(">= ", open, " (no fix)"), "");
  }
  return absl::OkStatus();
}

// The lowest introduced version, or "" when any range starts at "0".
std::string LowestIntroduced(const std::string& comp, const std::vector<std::string>& intro) {
  std::string low;
  for (const auto& v : intro) {
    if (v.empty() || v == "0") return "";
    auto c = CompareVersions(SchemeFor(comp), v, low.empty() ? v : low);
    if (!c.ok()) return "";
    if (low.empty() || *c < 0) low = v;
  }
  return low;
}

// The record's own page: database_specific.url (the Go database), else the
// project's advisory of that id (".../security/advisories/GHSA-..."), else the
// first ADVISORY reference, else osv.dev. Every reference becomes a link.
void AddOsvReferences(const Struct& root, ParsedDocument* out, std::vector<std::string>* links) {
  if (const Struct* db = Obj(root, "database_specific")) out->url = Str(*db, "url");
  std::string own, first_advisory;
  if (const ListValue* refs = Arr(root, "references")) {
    for (const auto& r : refs->values()) {
      if (r.kind_case() != Value::kStructValue) continue;
      const std::string url = Str(r.struct_value(), "url");
      if (own.empty() && absl::EndsWith(url, "/advisories/" + out->id)) own = url;
      if (first_advisory.empty() && Str(r.struct_value(), "type") == "ADVISORY") {
        first_advisory = url;
      }
      AddLink(links, url);
    }
  }
  if (out->url.empty()) out->url = !own.empty() ? own : first_advisory;
  if (out->url.empty()) out->url = absl::StrCat("https://osv.dev/vulnerability/", out->id);
  links->erase(std::remove(links->begin(), links->end(), out->url), links->end());
}

absl::StatusOr<ParsedDocument> ParseOsv(const Struct& root, const std::string& source) {
  ParsedDocument out;
  out.format = "osv";
  out.id = Str(root, "id");
  const ListValue* affected = Arr(root, "affected");
  if (affected == nullptr) return Malformed(source, "OSV record without 'affected'");
  std::vector<std::string> links;
  AddOsvReferences(root, &out, &links);
  std::map<std::string, Draft> drafts;
  std::map<std::string, std::vector<std::string>> introduced;
  for (const auto& a : affected->values()) {
    if (a.kind_case() != Value::kStructValue) return Malformed(source, "an 'affected' entry is not an object");
    const Struct* pkg = Obj(a.struct_value(), "package");
    if (pkg == nullptr) return Malformed(source, "an 'affected' entry has no package");
    const std::string comp = OsvComponent(*pkg);
    if (comp.empty()) continue;
    const ListValue* ranges = Arr(a.struct_value(), "ranges");
    if (ranges == nullptr) return Malformed(source, "an 'affected' entry has no ranges");
    for (const auto& r : ranges->values()) {
      if (r.kind_case() != Value::kStructValue) return Malformed(source, "a range is not an object");
      const std::string type = Str(r.struct_value(), "type");
      if (type != "SEMVER" && type != "ECOSYSTEM") continue;  // GIT ranges name commits
      if (auto s = AddOsvRange(comp, r.struct_value(), &drafts[comp], &introduced[comp]); !s.ok()) {
        return Malformed(source, std::string(s.message()));
      }
    }
  }
  std::string severity;
  if (const Struct* db = Obj(root, "database_specific")) severity = NormalizeSeverity(Str(*db, "severity"));
  std::vector<std::string> cves;
  for (const auto& alias : Strings(Arr(root, "aliases"))) {
    if (absl::StartsWith(alias, "CVE-")) cves.push_back(alias);
  }
  for (auto& [component, d] : drafts) {
    if (d.fixed.empty()) continue;
    Advisory adv;
    adv.id = drafts.size() == 1 ? out.id : absl::StrCat(out.id, "-", component);
    adv.component = component;
    adv.cves = cves;
    // A record without a severity (the Go database gives none) is treated as
    // high, so a miss fails rather than passes; the description says so.
    adv.severity = severity.empty() ? "high" : severity;
    adv.introduced = LowestIntroduced(component, introduced[component]);
    FillRanges(d, &adv);
    adv.url = out.url;
    adv.links = links;
    adv.description = Str(root, "summary");
    if (severity.empty()) adv.description += " (The source gives no severity; taken as high.)";
    adv.remediation = UpgradeText(adv);
    adv.published = DateOf(Str(root, "published"));
    out.advisories.push_back(std::move(adv));
  }
  return out;
}

// ---- YAML output --------------------------------------------------------------

void EmitList(YAML::Emitter& y, const char* key, const std::vector<std::string>& items) {
  if (items.empty()) return;
  y << YAML::Key << key << YAML::Value << YAML::BeginSeq;
  for (const auto& i : items) y << i;
  y << YAML::EndSeq;
}

void EmitScalar(YAML::Emitter& y, const char* key, const std::string& value) {
  if (!value.empty()) y << YAML::Key << key << YAML::Value << value;
}

void EmitComponents(YAML::Emitter& y, const AdvisoryDb& db) {
  y << YAML::Key << "components" << YAML::Value << YAML::BeginMap;
  for (const auto& [id, c] : db.components) {
    y << YAML::Key << id << YAML::Value << YAML::BeginMap;
    EmitScalar(y, "name", c.name);
    EmitScalar(y, "scheme", SchemeName(c.scheme));
    if (c.distribution_packages) EmitScalar(y, "distribution_packages", "true");
    EmitScalar(y, "upgrade", c.upgrade_url);
    y << YAML::EndMap;
  }
  y << YAML::EndMap;
}

void EmitBranches(YAML::Emitter& y, const AdvisoryDb& db) {
  if (db.driver_branches.empty()) return;
  y << YAML::Key << "driver_branches" << YAML::Value << YAML::BeginMap;
  EmitScalar(y, "as_of", db.driver_table_as_of);
  EmitScalar(y, "source", db.driver_table_source);
  y << YAML::Key << "branches" << YAML::Value << YAML::BeginSeq;
  for (const auto& b : db.driver_branches) {
    y << YAML::BeginMap << YAML::Key << "branch" << YAML::Value << b.branch;
    EmitScalar(y, "designation", b.designation);
    EmitScalar(y, "status", b.status);
    EmitScalar(y, "eol", b.eol);
    if (b.source != db.driver_table_source) EmitScalar(y, "source", b.source);
    y << YAML::EndMap;
  }
  y << YAML::EndSeq << YAML::EndMap;
}

void EmitAdvisory(YAML::Emitter& y, const AdvisoryDb& db, const Advisory& a) {
  y << YAML::BeginMap;
  EmitScalar(y, "id", a.id);
  EmitScalar(y, "component", a.component);
  EmitList(y, "cves", a.cves);
  EmitScalar(y, "severity", a.severity);
  EmitScalar(y, "published", a.published);
  EmitScalar(y, "introduced", a.introduced);
  EmitList(y, "affected", a.affected);
  EmitList(y, "fixed", a.fixed);
  if (!a.distributions.empty()) {
    y << YAML::Key << "distributions" << YAML::Value << YAML::BeginMap;
    for (const auto& [k, v] : a.distributions) y << YAML::Key << k << YAML::Value << v;
    y << YAML::EndMap;
  }
  EmitScalar(y, "url", a.url);
  auto comp = db.components.find(a.component);
  if (comp == db.components.end() || comp->second.upgrade_url != a.upgrade_url) {
    EmitScalar(y, "upgrade", a.upgrade_url);
  }
  EmitList(y, "links", a.links);
  EmitScalar(y, "description", a.description);
  EmitScalar(y, "remediation", a.remediation);
  y << YAML::EndMap;
}

// Merges `adv` into `db`: replaces the advisory with its id, else appends.
absl::Status Merge(Advisory adv, AdvisoryDb* db) {
  auto comp = db->components.find(adv.component);
  if (comp == db->components.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat(adv.id, ": component '", adv.component, "' is not in the base table"));
  }
  if (adv.upgrade_url.empty()) adv.upgrade_url = comp->second.upgrade_url;
  for (auto& existing : db->advisories) {
    if (existing.id == adv.id) {
      existing = std::move(adv);
      return absl::OkStatus();
    }
  }
  db->advisories.push_back(std::move(adv));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::string>> JsonFiles(const std::string& dir) {
  std::error_code ec;
  std::vector<std::string> names;
  std::filesystem::directory_iterator it(dir, ec);
  if (ec) return absl::NotFoundError(absl::StrCat("cannot list ", dir, ": ", ec.message()));
  for (const auto& entry : it) {
    const std::string name = entry.path().filename().string();
    if (absl::EndsWith(name, ".json") && entry.is_regular_file(ec)) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

absl::StatusOr<ParsedDocument> ParseAdvisoryDocument(const std::string& text,
                                                     const std::string& source) {
  Struct root;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  auto status = google::protobuf::util::JsonStringToMessage(text, &root, options);
  if (!status.ok()) {
    return Malformed(source, absl::StrCat("not JSON (truncated?): ", std::string(status.message())));
  }
  if (Obj(root, "document") != nullptr) return ParseCsaf(root, source);
  if (!Str(root, "id").empty() && Field(root, "affected") != nullptr) return ParseOsv(root, source);
  return Malformed(source, "neither a CSAF advisory (document) nor an OSV record (id, affected)");
}

absl::StatusOr<RefreshResult> RefreshFromDirectory(const std::string& dir, AdvisoryDb base,
                                                   const std::string& today) {
  auto names = JsonFiles(dir);
  if (!names.ok()) return names.status();
  RefreshResult out;
  out.db = std::move(base);
  out.db.generated = today;
  out.db.sources.clear();
  for (const auto& name : *names) {
    std::ifstream in(std::filesystem::path(dir) / name);
    std::stringstream text;
    text << in.rdbuf();
    auto doc = in ? ParseAdvisoryDocument(text.str(), name)
                  : absl::StatusOr<ParsedDocument>(Malformed(name, "cannot read"));
    absl::Status merged = doc.status();
    for (size_t k = 0; doc.ok() && merged.ok() && k < doc->advisories.size(); ++k) {
      merged = Merge(doc->advisories[k], &out.db);
    }
    if (!merged.ok()) {
      out.skipped.push_back(std::string(merged.message()));
      continue;
    }
    out.parsed.push_back(name);
    out.db.sources.push_back(absl::StrCat(name, " (", doc->format, " ", doc->id, ", ",
                                          doc->url, ")"));
  }
  return out;
}

std::string FormatAdvisoryTable(const AdvisoryDb& db) {
  YAML::Emitter y;
  y << YAML::Comment(
      "cmax audit advisory table, written by `cmax-bench audit refresh` (docs/audit.md)");
  y << YAML::BeginMap;
  EmitScalar(y, "generated", db.generated);
  EmitList(y, "sources", db.sources);
  EmitComponents(y, db);
  EmitBranches(y, db);
  y << YAML::Key << "advisories" << YAML::Value << YAML::BeginSeq;
  for (const auto& a : db.advisories) EmitAdvisory(y, db, a);
  y << YAML::EndSeq << YAML::EndMap;
  return std::string(y.c_str()) + "\n";
}

}  // namespace cmax::audit
