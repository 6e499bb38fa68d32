#include "benchmarks/dcgm/dcgm_diag.h"

#include <google/protobuf/struct.pb.h>
#include <google/protobuf/util/json_util.h>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace cmax::dcgm {
namespace {

using google::protobuf::ListValue;
using google::protobuf::Struct;
using google::protobuf::Value;

const Value* Field(const Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? nullptr : &it->second;
}
std::string Str(const Struct& s, const std::string& key) {
  const Value* v = Field(s, key);
  if (!v) return "";
  if (v->has_string_value()) return v->string_value();
  if (v->has_number_value()) return absl::StrCat(static_cast<long long>(v->number_value()));
  return "";
}
const ListValue* List(const Struct& s, const std::string& key) {
  const Value* v = Field(s, key);
  return v && v->has_list_value() ? &v->list_value() : nullptr;
}
const Struct* Obj(const Struct& s, const std::string& key) {
  const Value* v = Field(s, key);
  return v && v->has_struct_value() ? &v->struct_value() : nullptr;
}

std::string EntityName(std::string group) {
  group = absl::AsciiStrToLower(group);
  return group.empty() ? "gpu" : group;
}

std::vector<std::string> Warnings(const Struct& result) {
  std::vector<std::string> out;
  const ListValue* list = List(result, "warnings");
  if (!list) return out;
  for (const Value& w : list->values()) {
    if (w.has_string_value()) {
      out.push_back(w.string_value());
    } else if (w.has_struct_value()) {
      std::string text = Str(w.struct_value(), "warning");
      std::string id = Str(w.struct_value(), "error_id");
      out.push_back(id.empty() ? text : absl::StrCat(text, " (error id ", id, ")"));
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<DiagReport> ParseDiagJson(const std::string& text) {
  size_t brace = text.find('{');
  if (brace == std::string::npos) {
    return absl::InvalidArgumentError("dcgmi printed no JSON object");
  }
  Struct root;
  auto st = google::protobuf::util::JsonStringToMessage(text.substr(brace), &root);
  if (!st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("dcgmi output is not JSON: ", st.ToString()));
  }
  const Struct* diag = Obj(root, "DCGM Diagnostic");
  const bool v3 = diag == nullptr;
  if (v3) diag = Obj(root, "DCGM GPU Diagnostic");
  if (!diag) {
    return absl::InvalidArgumentError(
        "dcgmi JSON has neither \"DCGM Diagnostic\" nor \"DCGM GPU Diagnostic\"");
  }
  DiagReport report;
  report.runtime_error = Str(*diag, "runtime_error");
  if (const Struct* meta = Obj(root, "metadata")) {
    report.version = Str(*meta, "version");
    report.driver_version = Str(*meta, "Driver Version Detected");
  }
  if (report.version.empty()) report.version = Str(*diag, "version");
  if (const ListValue* cats = List(*diag, "test_categories")) {
    for (const Value& c : cats->values()) {
      if (!c.has_struct_value()) continue;
      const std::string category = Str(c.struct_value(), "category");
      const ListValue* tests = List(c.struct_value(), "tests");
      if (!tests) continue;
      for (const Value& t : tests->values()) {
        if (!t.has_struct_value()) continue;
        const std::string name = Str(t.struct_value(), "name");
        const ListValue* results = List(t.struct_value(), "results");
        if (!results) continue;
        for (const Value& r : results->values()) {
          if (!r.has_struct_value()) continue;
          const Struct& rs = r.struct_value();
          const std::string status = absl::AsciiStrToLower(Str(rs, "status"));
          std::vector<std::string> entities;
          if (v3) {
            // "gpu_ids": "0" or "0,1"; older still: "gpu_id".
            std::string ids = Str(rs, "gpu_ids");
            if (ids.empty()) ids = Str(rs, "gpu_id");
            for (absl::string_view id : absl::StrSplit(ids, ',', absl::SkipWhitespace())) {
              entities.push_back(absl::StrCat("gpu:", absl::StripAsciiWhitespace(id)));
            }
          } else if (Field(rs, "entity_id")) {
            entities.push_back(
                absl::StrCat(EntityName(Str(rs, "entity_group")), ":", Str(rs, "entity_id")));
          }
          if (entities.empty()) entities.push_back("");
          for (const auto& e : entities) {
            report.results.push_back({category, name, e, status, Warnings(rs)});
          }
        }
      }
    }
  }
  if (const ListValue* groups = List(root, "entity_groups")) {
    for (const Value& g : groups->values()) {
      if (!g.has_struct_value()) continue;
      const std::string group = EntityName(Str(g.struct_value(), "entity_group"));
      const ListValue* ents = List(g.struct_value(), "entities");
      if (!ents) continue;
      for (const Value& e : ents->values()) {
        if (!e.has_struct_value()) continue;
        const Struct& es = e.struct_value();
        std::string desc = absl::StrCat("device ", Str(es, "device_id"));
        if (std::string serial = Str(es, "serial_num"); !serial.empty()) {
          desc = absl::StrCat("serial ", serial, ", ", desc);
        }
        report.entities.push_back({absl::StrCat(group, ":", Str(es, "entity_id")), desc});
      }
    }
  }
  return report;
}

}  // namespace cmax::dcgm
