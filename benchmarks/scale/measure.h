// What the scale tools (cmax-scale-agents, cmax-scale-scorecard,
// cmax-scale-agree, cmax-report-scale) measure and check the same way: a
// span of steady_clock time, a process's memory from /proc/<pid>/status,
// and whether two scorecards are the same card. Library cmax_scale_measure.
#ifndef CMAX_BENCHMARKS_SCALE_MEASURE_H_
#define CMAX_BENCHMARKS_SCALE_MEASURE_H_

#include <chrono>
#include <cstdint>
#include <string>

#include "cmax/v1/scorecard.pb.h"

namespace cmax::scale {

using Clock = std::chrono::steady_clock;

// Seconds from `a` to `b`.
double Seconds(Clock::time_point a, Clock::time_point b);
// Seconds from `a` to now.
double SecondsSince(Clock::time_point a);

// The number on the line `key` of /proc/<pid>/status (this process's for
// pid 0): kB for "VmHWM" and "VmRSS", a count for "Threads"; -1 when the
// file or the line cannot be read.
int64_t StatusKb(const std::string& key, int pid = 0);
// Sets this process's VmHWM to its current VmRSS (/proc/self/clear_refs
// "5"), so that a later StatusKb("VmHWM") is the peak from here on.
void ResetPeakRss();

// "" when the two cards are the same message apart from `generated` (the
// time they were built); otherwise the first 4,000 characters of the
// differences.
std::string ScorecardDifferences(v1::Scorecard a, v1::Scorecard b);
// True when ScorecardDifferences is empty; otherwise prints "the two
// scorecards differ:" and the differences to stderr.
bool SameScorecard(const v1::Scorecard& a, const v1::Scorecard& b);

}  // namespace cmax::scale

#endif  // CMAX_BENCHMARKS_SCALE_MEASURE_H_
