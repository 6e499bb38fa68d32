#ifndef CMAX_COMMON_TIME_UTIL_H_
#define CMAX_COMMON_TIME_UTIL_H_

#include <cstdint>
#include <string>

namespace cmax {

// Wall clock, nanoseconds since the Unix epoch.
int64_t NowUnixNs();
// Monotonic clock in nanoseconds (for timeouts and durations).
int64_t MonotonicNs();
// "2026-11-29T21:17:45.123Z"; empty for 0.
std::string FormatRfc3339(int64_t unix_ns);

}  // namespace cmax

#endif  // CMAX_COMMON_TIME_UTIL_H_
