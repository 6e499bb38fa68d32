// Telemetry windows for long runs: readings taken once a second are written
// as one Sample per metric and window (min, mean, max, count), so a burn-in
// of days writes a bounded number of records. Downsampling happens in the
// suite, where every reading is still at hand: the agent forwards spool lines
// as they are, one record per line, because the line number is what proves
// each record was stored exactly once (agent/spool.h).
#ifndef CMAX_COMMON_SAMPLE_WINDOW_H_
#define CMAX_COMMON_SAMPLE_WINDOW_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "cmax/v1/record.pb.h"

namespace cmax {

// Readings per window for a run of `duration_s` seconds read once a second:
// 1 (every reading its own Sample) up to kFullRateSeconds, then as many as
// keep each metric at about kMaxWindows Samples.
inline constexpr double kFullRateSeconds = 600;
inline constexpr int kMaxWindows = 600;
int SampleWindowTicks(double duration_s);

// Telemetry into Samples: `ticks_per_window` readings (one a second) become
// one Sample per metric with min/mean/max and count (1 for one-second
// samples). Bit-mask metrics keep the OR of the window. One window per label
// set (a GPU, a sensor). Not thread-safe.
class SampleWindow {
 public:
  explicit SampleWindow(int ticks_per_window)
      : ticks_(ticks_per_window < 1 ? 1 : ticks_per_window) {}
  void Add(const std::string& metric, const std::string& unit, double value);
  void AddBits(const std::string& metric, uint64_t bits);
  // Ends one tick; returns the window's Samples (suite, labels and time
  // filled) when the window is complete or `flush` is set, else nothing.
  std::vector<v1::Sample> Tick(const std::string& suite,
                               const std::map<std::string, std::string>& labels, int64_t time_ns,
                               bool flush = false);

 private:
  struct Acc {
    std::string unit;
    double min = 0, max = 0, sum = 0;
    uint32_t count = 0;
    bool bits = false;
    uint64_t or_bits = 0;
  };
  int ticks_;
  int ticks_seen_ = 0;
  std::map<std::string, Acc> acc_;
};

}  // namespace cmax

#endif  // CMAX_COMMON_SAMPLE_WINDOW_H_
