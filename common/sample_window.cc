#include "common/sample_window.h"

#include <cmath>

namespace cmax {

int SampleWindowTicks(double duration_s) {
  if (!(duration_s > kFullRateSeconds)) return 1;
  return static_cast<int>(std::ceil(duration_s / kMaxWindows));
}

void SampleWindow::Add(const std::string& metric, const std::string& unit, double value) {
  Acc& a = acc_[metric];
  a.unit = unit;
  if (a.count == 0 || value < a.min) a.min = value;
  if (a.count == 0 || value > a.max) a.max = value;
  a.sum += value;
  ++a.count;
}

void SampleWindow::AddBits(const std::string& metric, uint64_t bits) {
  Acc& a = acc_[metric];
  a.unit = "bitmask";
  a.bits = true;
  a.or_bits |= bits;
  ++a.count;
}

std::vector<v1::Sample> SampleWindow::Tick(const std::string& suite,
                                           const std::map<std::string, std::string>& labels,
                                           int64_t time_ns, bool flush) {
  ++ticks_seen_;
  std::vector<v1::Sample> out;
  if (ticks_seen_ < ticks_ && !flush) return out;
  for (const auto& [metric, a] : acc_) {
    if (a.count == 0) continue;
    v1::Sample s;
    s.set_suite(suite);
    s.set_metric(metric);
    s.set_unit(a.unit);
    s.set_time_unix_ns(time_ns);
    s.set_count(a.count);
    if (a.bits) {
      const double v = static_cast<double>(a.or_bits);
      s.set_value(v);
      s.set_min(v);
      s.set_max(v);
    } else {
      s.set_value(a.sum / a.count);
      s.set_min(a.min);
      s.set_max(a.max);
    }
    for (const auto& [k, v] : labels) (*s.mutable_labels())[k] = v;
    out.push_back(std::move(s));
  }
  acc_.clear();
  ticks_seen_ = 0;
  return out;
}

}  // namespace cmax
