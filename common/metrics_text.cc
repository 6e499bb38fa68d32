#include "common/metrics_text.h"

#include <cassert>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace cmax {
namespace {

bool ValidName(const std::string& name) {
  if (name.empty()) return false;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    const bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
    if (!alpha && (i == 0 || c < '0' || c > '9')) return false;
  }
  return true;
}

std::string FormatValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  if (v == std::floor(v) && std::fabs(v) < 1e15) return absl::StrFormat("%.0f", v);
  return absl::StrFormat("%.9g", v);
}

}  // namespace

Histogram::Histogram(std::vector<double> bounds)
    : bounds_(std::move(bounds)), counts_(bounds_.size() + 1, 0) {}

void Histogram::Observe(double value) {
  size_t i = 0;
  while (i < bounds_.size() && value > bounds_[i]) ++i;
  ++counts_[i];
  ++count_;
  sum_ += value;
}

std::string EscapeLabelValue(const std::string& value) {
  std::string out;
  out.reserve(value.size());
  for (char c : value) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '"') {
      out += "\\\"";
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out += c;
    }
  }
  return out;
}

void MetricsText::Family(const std::string& name, const std::string& type,
                         const std::string& help) {
  assert(ValidName(name));
  (void)ValidName;
  family_ = name;
  std::string h;
  for (char c : help) h += c == '\n' ? ' ' : c;
  absl::StrAppend(&out_, "# HELP ", name, " ", h, "\n# TYPE ", name, " ", type, "\n");
}

void MetricsText::Line(const std::string& name, const MetricLabels& labels, double value) {
  out_ += name;
  if (!labels.empty()) {
    out_ += '{';
    for (size_t i = 0; i < labels.size(); ++i) {
      absl::StrAppend(&out_, i ? "," : "", labels[i].first, "=\"",
                      EscapeLabelValue(labels[i].second), "\"");
    }
    out_ += '}';
  }
  absl::StrAppend(&out_, " ", FormatValue(value), "\n");
}

void MetricsText::Sample(double value, const MetricLabels& labels) { Line(family_, labels, value); }

void MetricsText::Write(const Histogram& h, const MetricLabels& labels) {
  uint64_t cumulative = 0;
  for (size_t i = 0; i <= h.bounds().size(); ++i) {
    cumulative += h.counts()[i];
    MetricLabels l = labels;
    l.emplace_back("le", i < h.bounds().size() ? FormatValue(h.bounds()[i]) : "+Inf");
    Line(family_ + "_bucket", l, static_cast<double>(cumulative));
  }
  Line(family_ + "_sum", labels, h.sum());
  Line(family_ + "_count", labels, static_cast<double>(h.count()));
}

}  // namespace cmax
