#include "common/record_io.h"

#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "common/suite_declaration.h"
#include "common/time_util.h"
#include "google/protobuf/util/json_util.h"

namespace cmax {

std::string MessageToJsonLine(const google::protobuf::Message& message, bool pretty) {
  google::protobuf::util::JsonPrintOptions options;
  options.preserve_proto_field_names = true;
  options.add_whitespace = pretty;
  std::string out;
  auto status = google::protobuf::util::MessageToJsonString(message, &out, options);
  if (!status.ok()) return "{}";
  if (!pretty) {
    // The printer never emits raw newlines outside strings; be sure.
    for (char& c : out)
      if (c == '\n') c = ' ';
  }
  return out;
}

std::string RecordToJsonLine(const v1::Record& record) { return MessageToJsonLine(record); }

absl::StatusOr<v1::Record> ParseRecordLine(std::string_view line) {
  if (line.size() > kMaxRecordLineBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("record line of ", line.size(), " bytes exceeds ", kMaxRecordLineBytes));
  }
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  if (line.empty()) return absl::InvalidArgumentError("empty record line");
  v1::Record record;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = false;
  auto status = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(line.data(), line.size()), &record, options);
  if (!status.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("not a cmax.v1.Record: ", std::string(status.message())));
  }
  if (record.kind_case() == v1::Record::KIND_NOT_SET) {
    return absl::InvalidArgumentError("record has no kind (measurement, finding, ...)");
  }
  return record;
}

// SeverityName (declared in record_io.h) is defined in common/severity.cc,
// next to ParseSeverity.

RecordWriter::RecordWriter(std::string suite, FILE* out,
                           std::map<std::string, std::string> labels)
    : suite_(std::move(suite)), out_(out), labels_(std::move(labels)) {}

namespace {

// OK, or why a figure of `suite` named `metric` in `unit` contradicts the
// suite's declaration. Suites no registered suite is named after (a test's
// own writer) declare nothing and are not checked.
std::string UndeclaredFigure(const std::string& suite, const std::string& metric,
                             const std::string& unit) {
  const SuiteInfo* info = FindSuite(suite);
  if (info == nullptr) return "";
  const MetricSpec* spec = FindSuiteMetric(*info, metric);
  if (spec == nullptr) {
    return absl::StrCat("suite '", suite, "' wrote metric '", metric, "' (", unit,
                        "), which it does not declare: add a MetricSpec to benchmarks/", suite,
                        "/", suite, "_declaration.cc or write a declared metric");
  }
  if (spec->unit != unit) {
    return absl::StrCat("suite '", suite, "' wrote metric '", metric, "' in '", unit,
                        "', but declares it in '", spec->unit,
                        "': one metric has one unit (benchmarks/", suite, "/", suite,
                        "_declaration.cc)");
  }
  return "";
}

}  // namespace

void RecordWriter::Write(v1::Record record) {
  if (record.time_unix_ns() == 0) record.set_time_unix_ns(NowUnixNs());
  // A figure its suite does not declare would be judged, charted and
  // compared as something it is not: the suite stops here, with exit 2
  // (could not run) and the reason on stderr, before a wrong record leaves.
  std::string wrong;
  if (record.has_measurement()) {
    const v1::Measurement& m = record.measurement();
    wrong = UndeclaredFigure(m.suite(), m.metric(), m.unit());
  } else if (record.has_sample()) {
    const v1::Sample& s = record.sample();
    wrong = UndeclaredFigure(s.suite(), s.metric(), s.unit());
  }
  if (!wrong.empty()) {
    if (out_) fflush(out_);
    std::fprintf(stderr, "cmax: %s\n", wrong.c_str());
    std::fflush(stderr);
    _exit(2);
  }
  if (record.has_finding()) {
    int s = record.finding().severity();
    absl::MutexLock lock(&mu_);
    if (record.finding().not_measured()) {
      ++not_measured_count_;
    } else if (s >= 0 && s < 5) {
      ++severity_counts_[s];
    }
  }
  if (!out_) return;
  std::string line = RecordToJsonLine(record);
  line.push_back('\n');
  absl::MutexLock lock(&mu_);
  fwrite(line.data(), 1, line.size(), out_);
  fflush(out_);
}

int RecordWriter::findings_at_or_above(v1::Severity severity) const {
  absl::MutexLock lock(&mu_);
  int n = 0;
  for (int s = severity; s < 5; ++s) n += severity_counts_[s];
  return n;
}

void RecordWriter::Measure(const std::string& metric, double value, const std::string& unit,
                           const std::map<std::string, std::string>& labels) {
  v1::Record record;
  auto* m = record.mutable_measurement();
  m->set_suite(suite_);
  m->set_metric(metric);
  m->set_value(value);
  m->set_unit(unit);
  for (const auto& [k, v] : labels_) (*m->mutable_labels())[k] = v;
  for (const auto& [k, v] : labels) (*m->mutable_labels())[k] = v;
  Write(std::move(record));
}

void RecordWriter::Find(v1::Finding finding) {
  if (finding.suite().empty()) finding.set_suite(suite_);
  for (const auto& [k, v] : labels_) {
    if (!finding.labels().contains(k)) (*finding.mutable_labels())[k] = v;
  }
  v1::Record record;
  *record.mutable_finding() = std::move(finding);
  Write(std::move(record));
}

void RecordWriter::NotMeasured(const std::string& check_id, const std::string& category,
                               const std::string& subject, const std::string& title,
                               const std::string& why, const std::string& action) {
  v1::Finding f;
  f.set_check_id(check_id);
  f.set_severity(v1::SEVERITY_INFO);
  f.set_not_measured(true);
  f.set_category(category);
  f.set_subject(subject.empty() ? std::string("node") : subject);
  f.set_title(title);
  f.set_detail(why);
  f.set_action(action);
  Find(std::move(f));
}

int RecordWriter::not_measured_findings() const {
  absl::MutexLock lock(&mu_);
  return not_measured_count_;
}

void RecordWriter::WriteSample(v1::Sample sample) {
  if (sample.suite().empty()) sample.set_suite(suite_);
  for (const auto& [k, v] : labels_) sample.mutable_labels()->insert({k, v});
  v1::Record record;
  *record.mutable_sample() = std::move(sample);
  Write(std::move(record));
}

void RecordWriter::Sample(const std::string& metric, double value, const std::string& unit,
                          const std::map<std::string, std::string>& labels) {
  v1::Record record;
  auto* s = record.mutable_sample();
  s->set_suite(suite_);
  s->set_metric(metric);
  s->set_value(value);
  s->set_unit(unit);
  s->set_min(value);
  s->set_max(value);
  s->set_count(1);
  s->set_time_unix_ns(NowUnixNs());
  for (const auto& [k, v] : labels_) (*s->mutable_labels())[k] = v;
  for (const auto& [k, v] : labels) (*s->mutable_labels())[k] = v;
  Write(std::move(record));
}

void RecordWriter::Progress(const std::string& phase, double fraction,
                            const std::string& message) {
  v1::Record record;
  auto* p = record.mutable_progress();
  p->set_suite(suite_);
  p->set_phase(phase);
  p->set_fraction(fraction);
  p->set_message(message);
  Write(std::move(record));
}

void RecordWriter::Log(const std::string& level, const std::string& message) {
  v1::Record record;
  auto* l = record.mutable_log();
  l->set_level(level);
  l->set_message(message);
  l->set_suite(suite_);
  Write(std::move(record));
}

void RecordWriter::Artifact(const std::string& name, const std::string& media_type,
                            const std::string& content) {
  v1::Record record;
  auto* a = record.mutable_artifact();
  a->set_name(name);
  a->set_media_type(media_type);
  a->set_suite(suite_);
  if (content.size() > kMaxArtifactBytes) {
    a->set_content(content.substr(0, kMaxArtifactBytes));
    a->set_truncated(true);
  } else {
    a->set_content(content);
  }
  Write(std::move(record));
}

}  // namespace cmax
