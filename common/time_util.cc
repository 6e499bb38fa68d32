#include "common/time_util.h"

#include <time.h>

#include <cstdio>

namespace cmax {

int64_t NowUnixNs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

int64_t MonotonicNs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

std::string FormatRfc3339(int64_t unix_ns) {
  if (unix_ns <= 0) return "";
  time_t secs = static_cast<time_t>(unix_ns / 1000000000);
  int millis = static_cast<int>((unix_ns / 1000000) % 1000);
  tm utc;
  gmtime_r(&secs, &utc);
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", utc.tm_year + 1900,
                utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min, utc.tm_sec, millis);
  return buf;
}

}  // namespace cmax
