// Prometheus text exposition format 0.0.4, written by hand-rolled calls:
// one family at a time (HELP and TYPE once, then its samples), label values
// escaped as the format requires (backslash, double quote, newline).
// Format: https://prometheus.io/docs/instrumenting/exposition_formats/
// (checked by `promtool check metrics` in tests/integration/metrics_test.cc).
#ifndef CMAX_COMMON_METRICS_TEXT_H_
#define CMAX_COMMON_METRICS_TEXT_H_

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace cmax {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// A histogram's state: cumulative counts are derived when written.
class Histogram {
 public:
  // `bounds`: upper bounds, ascending (the +Inf bucket is implicit).
  explicit Histogram(std::vector<double> bounds);
  void Observe(double value);
  const std::vector<double>& bounds() const { return bounds_; }
  const std::vector<uint64_t>& counts() const { return counts_; }  // per bucket, not cumulative
  uint64_t count() const { return count_; }
  double sum() const { return sum_; }

 private:
  std::vector<double> bounds_;
  std::vector<uint64_t> counts_;  // bounds_.size() + 1 (the last: above every bound)
  uint64_t count_ = 0;
  double sum_ = 0;
};

class MetricsText {
 public:
  // Starts a family. `type`: counter, gauge or histogram. Names must match
  // [a-zA-Z_:][a-zA-Z0-9_:]* (callers pass constants; checked in debug).
  void Family(const std::string& name, const std::string& type, const std::string& help);
  // A sample of the current family (counters: name ends in _total).
  void Sample(double value, const MetricLabels& labels = {});
  void Write(const Histogram& h, const MetricLabels& labels = {});
  const std::string& text() const { return out_; }

 private:
  void Line(const std::string& name, const MetricLabels& labels, double value);
  std::string family_;
  std::string out_;
};

// A label value escaped for the text format.
std::string EscapeLabelValue(const std::string& value);

}  // namespace cmax

#endif  // CMAX_COMMON_METRICS_TEXT_H_
