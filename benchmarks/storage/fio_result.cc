#include "benchmarks/storage/fio_result.h"

#include <cmath>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"

namespace cmax::storage {
namespace {

using google::protobuf::Struct;
using google::protobuf::Value;

const Value* Field(const Struct& s, const std::string& key) {
  auto it = s.fields().find(key);
  return it == s.fields().end() ? nullptr : &it->second;
}

double Number(const Struct& s, const std::string& key) {
  const Value* v = Field(s, key);
  if (!v) return 0;
  if (v->kind_case() == Value::kNumberValue) return v->number_value();
  if (v->kind_case() == Value::kStringValue) {
    double d = 0;
    return absl::SimpleAtod(v->string_value(), &d) ? d : 0;
  }
  return 0;
}

const Struct* Object(const Struct& s, const std::string& key) {
  const Value* v = Field(s, key);
  return v && v->kind_case() == Value::kStructValue ? &v->struct_value() : nullptr;
}

// Percentile keys are printed with six decimals: "99.900000".
bool Percentiles(const Struct& lat, DirStats* d) {
  const Struct* p = Object(lat, "percentile");
  if (!p) return false;
  const Value* p50 = Field(*p, "50.000000");
  const Value* p99 = Field(*p, "99.000000");
  const Value* p999 = Field(*p, "99.900000");
  if (!p50 || !p99 || !p999) return false;
  d->p50_us = p50->number_value() / 1000.0;
  d->p99_us = p99->number_value() / 1000.0;
  d->p99_9_us = p999->number_value() / 1000.0;
  d->have_percentiles = true;
  return true;
}

DirStats ParseDir(const Struct& d) {
  DirStats out;
  out.io_bytes = static_cast<int64_t>(Number(d, "io_bytes"));
  out.total_ios = static_cast<int64_t>(Number(d, "total_ios"));
  out.bw_bytes = Number(d, "bw_bytes");
  out.iops = Number(d, "iops");
  out.runtime_ms = static_cast<int64_t>(Number(d, "runtime"));
  if (const Struct* lat = Object(d, "lat_ns"); lat && Percentiles(*lat, &out)) {
    out.latency_kind = "lat";
  } else if (const Struct* clat = Object(d, "clat_ns"); clat && Percentiles(*clat, &out)) {
    out.latency_kind = "clat";
  }
  return out;
}

}  // namespace

absl::StatusOr<FioReport> ParseFioJson(std::string_view text) {
  size_t start = std::string_view::npos;
  if (!text.empty() && text[0] == '{') {
    start = 0;
  } else {
    size_t pos = text.find("\n{");
    if (pos != std::string_view::npos) start = pos + 1;
  }
  if (start == std::string_view::npos) {
    return absl::InvalidArgumentError("fio wrote no JSON report");
  }
  std::string_view json = text.substr(start);
  // Anything fio prints after the report (rare) ends after the last '}'.
  size_t end = json.rfind('}');
  if (end != std::string_view::npos) json = json.substr(0, end + 1);
  Struct root;
  auto st = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &root);
  if (!st.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("fio's JSON report does not parse: ", std::string(st.message())));
  }
  FioReport report;
  if (const Value* v = Field(root, "fio version")) report.version = v->string_value();
  report.timestamp_ms = static_cast<int64_t>(Number(root, "timestamp_ms"));
  const Value* jobs = Field(root, "jobs");
  if (!jobs || jobs->kind_case() != Value::kListValue || jobs->list_value().values_size() == 0) {
    return absl::InvalidArgumentError("fio's JSON report has no jobs");
  }
  for (const Value& jv : jobs->list_value().values()) {
    if (jv.kind_case() != Value::kStructValue) continue;
    const Struct& j = jv.struct_value();
    FioJob job;
    if (const Value* n = Field(j, "jobname")) job.name = n->string_value();
    job.error = static_cast<int>(Number(j, "error"));
    job.job_runtime_ms = static_cast<int64_t>(Number(j, "job_runtime"));
    if (const Struct* r = Object(j, "read")) job.read = ParseDir(*r);
    if (const Struct* w = Object(j, "write")) job.write = ParseDir(*w);
    report.jobs.push_back(std::move(job));
  }
  if (report.jobs.empty()) return absl::InvalidArgumentError("fio's JSON report has no jobs");
  return report;
}

std::vector<VerifyError> ParseVerifyErrors(std::string_view fio_stderr) {
  std::vector<VerifyError> out;
  for (absl::string_view line : absl::StrSplit(absl::string_view(fio_stderr.data(), fio_stderr.size()), '\n', absl::SkipEmpty())) {
    if (!absl::StrContains(line, "verify")) continue;
    size_t at = line.find(" at file ");
    if (at == absl::string_view::npos) continue;
    absl::string_view rest = line.substr(at + 9);
    size_t off = rest.find(" offset ");
    if (off == absl::string_view::npos) continue;
    VerifyError e;
    e.file = std::string(rest.substr(0, off));
    absl::string_view num = rest.substr(off + 8);
    size_t stop = num.find_first_not_of("0123456789");
    if (!absl::SimpleAtoi(num.substr(0, stop), &e.offset)) continue;
    e.line = std::string(absl::StripAsciiWhitespace(line));
    out.push_back(std::move(e));
  }
  return out;
}

absl::StatusOr<BwSeries> SumBwLogs(const std::vector<std::string>& logs) {
  std::map<int64_t, double> per_second;  // unix second -> KiB/s summed over jobs
  for (const std::string& log : logs) {
    for (absl::string_view line : absl::StrSplit(log, '\n', absl::SkipEmpty())) {
      std::vector<absl::string_view> f = absl::StrSplit(line, ',');
      if (f.size() < 2) continue;
      int64_t t_ms = 0;
      double kib_s = 0;
      if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(f[0]), &t_ms) ||
          !absl::SimpleAtod(absl::StripAsciiWhitespace(f[1]), &kib_s)) {
        continue;
      }
      int64_t second = (t_ms - 500) / 1000;  // the middle of (t - 1000, t]
      per_second[second] += kib_s;
    }
  }
  if (per_second.empty()) return absl::InvalidArgumentError("no bandwidth log samples");
  BwSeries s;
  int64_t first = per_second.begin()->first;
  int64_t last = per_second.rbegin()->first;
  s.start_unix_ms = first * 1000;
  s.mbps.assign(static_cast<size_t>(last - first + 1), 0.0);
  for (const auto& [sec, kib] : per_second) {
    s.mbps[static_cast<size_t>(sec - first)] = kib * 1024.0 / 1e6;
  }
  return s;
}

std::string FormatSeries(const std::vector<double>& values) {
  std::vector<std::string> parts;
  parts.reserve(values.size());
  for (double v : values) parts.push_back(absl::StrFormat("%.1f", v));
  return absl::StrJoin(parts, ",");
}

absl::StatusOr<std::vector<double>> ParseSeries(std::string_view text) {
  std::vector<double> out;
  if (text.empty()) return out;
  for (absl::string_view p : absl::StrSplit(absl::string_view(text.data(), text.size()), ',')) {
    double v = 0;
    if (!absl::SimpleAtod(p, &v) || !std::isfinite(v)) {
      return absl::InvalidArgumentError(absl::StrCat("bad series value '", p, "'"));
    }
    out.push_back(v);
  }
  return out;
}

}  // namespace cmax::storage
